"""Affordance knowledge: what the robot can do with an object (config/grounding/affordances.yaml).

Perceived AI2-THOR properties decide where the world state reports them; the knowledge base fills
the rest (the STARS paper: "its knowledge of objects (semantic memory) and properties detected from
perception").
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, load_model
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


class GroupDoc(Schema):
    affordances: list[str]
    types: list[str]


class AffordancesDoc(Schema):
    """affordances.yaml."""

    affordances: list[str]
    groups: dict[str, GroupDoc]
    perception: dict[str, str] | None = None  # affordance -> AI2-THOR key
    placement_key: str = "receptacle"


def load_affordances(path: str | Path | None = None) -> AffordanceKB:
    file = Path(path) if path is not None else config_path("grounding", "affordances.yaml")
    doc = load_model(AffordancesDoc, file)
    known = frozenset(doc.affordances)
    for needed in PLACEMENT + ("grabbable",):
        if needed not in known:
            raise ConfigError(file, "affordances", f"must list {needed!r}")
    perception = dict(doc.perception or {})
    for name in perception:
        if name not in known or name in PLACEMENT:
            raise ConfigError(file, join_key("perception", name),
                              "not a listed affordance (receptacle/surface use placement_key)")
    by_type: dict[str, set[str]] = {}
    for group, spec in doc.groups.items():
        for i, aff in enumerate(spec.affordances):
            if aff not in known:
                raise ConfigError(file, join_key(join_key(join_key("groups", group), "affordances"), i),
                                  f"unknown affordance {aff!r} (known: {', '.join(sorted(known))})")
        for object_type in spec.types:
            by_type.setdefault(object_type, set()).update(spec.affordances)
    return AffordanceKB(affordances=known, perception=perception, placement_key=doc.placement_key,
                        by_type={t: frozenset(a) for t, a in by_type.items()}, source=str(file))
