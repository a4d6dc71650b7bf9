"""Affordance knowledge: what the robot can do with an object (config/grounding/affordances.yaml).

Perceived AI2-THOR properties decide where the world state reports them; the knowledge base fills
the rest (seed 000: "its knowledge of objects (semantic memory) and properties detected from
perception").
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from task_learning.config import check_keys, config_path, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.types import WorldObject

PLACEMENT = ("receptacle", "surface")


@dataclass(frozen=True)
class AffordanceKB:
    affordances: frozenset[str]
    perception: dict[str, str]  # affordance -> AI2-THOR key
    placement_key: str
    by_type: dict[str, frozenset[str]]
    source: str = ""

    def known_type(self, object_type: str) -> bool:
        return object_type in self.by_type

    def of_object(self, obj: WorldObject) -> frozenset[str]:
        """The object's affordances: perception where reported, the knowledge base elsewhere."""
        kb = self.by_type.get(obj.object_type, frozenset())
        result = set()
        props = obj.properties
        for name in self.affordances:
            if name in PLACEMENT:
                continue
            key = self.perception.get(name)
            value = props.get(key) if key else None
            if value is None:
                if name in kb:
                    result.add(name)
            elif value:
                result.add(name)
        gate = props.get(self.placement_key)
        kb_placement = kb & set(PLACEMENT)
        if gate is None:
            result |= kb_placement
        elif gate:
            result |= kb_placement or set(PLACEMENT)
        return frozenset(result)


def load_affordances(path: str | Path | None = None) -> AffordanceKB:
    file = Path(path) if path is not None else config_path("grounding", "affordances.yaml")
    data = load_yaml(file)
    check_keys(data, file=file, key="", required=("affordances", "groups"),
               optional=("perception", "placement_key"))
    names = expect_type(data["affordances"], list, file=file, key="affordances")
    for i, name in enumerate(names):
        expect_type(name, str, file=file, key=join_key("affordances", i))
    known = frozenset(names)
    for needed in PLACEMENT + ("grabbable",):
        if needed not in known:
            raise ConfigError(file, "affordances", f"must list {needed!r}")
    perception_raw = expect_type(data.get("perception") or {}, Mapping, file=file, key="perception")
    perception: dict[str, str] = {}
    for name, key in perception_raw.items():
        if name not in known or name in PLACEMENT:
            raise ConfigError(file, join_key("perception", str(name)),
                              "not a listed affordance (receptacle/surface use placement_key)")
        perception[str(name)] = expect_type(key, str, file=file, key=join_key("perception", str(name)))
    placement_key = expect_type(data.get("placement_key", "receptacle"), str, file=file,
                                key="placement_key")
    by_type: dict[str, set[str]] = {}
    groups = expect_type(data["groups"], Mapping, file=file, key="groups")
    for group, spec in groups.items():
        key = join_key("groups", str(group))
        check_keys(spec, file=file, key=key, required=("affordances", "types"))
        affs = expect_type(spec["affordances"], list, file=file, key=join_key(key, "affordances"))
        for i, aff in enumerate(affs):
            if aff not in known:
                raise ConfigError(file, join_key(join_key(key, "affordances"), i),
                                  f"unknown affordance {aff!r} (known: {', '.join(sorted(known))})")
        types = expect_type(spec["types"], list, file=file, key=join_key(key, "types"))
        for i, object_type in enumerate(types):
            expect_type(object_type, str, file=file, key=join_key(join_key(key, "types"), i))
            by_type.setdefault(object_type, set()).update(affs)
    return AffordanceKB(affordances=known, perception=perception, placement_key=placement_key,
                        by_type={t: frozenset(a) for t, a in by_type.items()}, source=str(file))
