"""The object type catalogue: which AI2-THOR properties each object type has.

Scenes name only a type per object; its affordances (pickupable, receptacle, openable...) come from
`config/scenes/object_types.yaml` (or the scene's own `types:`), so a scene file stays a list of
where things are. Recorded AI2-THOR metadata carries its properties itself and needs the catalogue
only for how to speak about a type ("on the counter", "in the fridge").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from task_learning.config import check_keys, config_path, expect_number, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.names import normalize_name

CATALOGUE_FILE = ("scenes", "object_types.yaml")

# AI2-THOR's boolean capability keys, in the order its metadata lists them.
FLAG_KEYS = (
    "pickupable",
    "receptacle",
    "openable",
    "toggleable",
    "sliceable",
    "canFillWithLiquid",
    "dirtyable",
    "cookable",
    "breakable",
    "canBeUsedUp",
    "isHeatSource",
    "isColdSource",
    "moveable",
)
TYPE_KEYS = FLAG_KEYS + (
    "mass",
    "salientMaterials",
    "kind",
    "capacity",
    "spoken",
    "aliases",
    "sliced_type",
    "slice_count",
)
KINDS = ("surface", "container")


@dataclass(frozen=True)
class ObjectType:
    """The properties shared by every object of one AI2-THOR type."""

    name: str
    flags: Mapping[str, bool] = field(default_factory=dict)
    mass: float = 0.0
    salient_materials: tuple[str, ...] = ()
    kind: str = "surface"  # receptacles: surface ("on") or container ("in")
    capacity: int | None = None
    spoken: str = ""
    aliases: tuple[str, ...] = ()
    sliced_type: str = ""
    slice_count: int = 0

    def flag(self, key: str) -> bool:
        return bool(self.flags.get(key, False))

    @property
    def spoken_name(self) -> str:
        return self.spoken or normalize_name(self.name)

    @property
    def relation(self) -> str:
        return "in" if self.kind == "container" else "on"

    def names(self) -> set[str]:
        """Every normalized name that refers to this type."""
        return {normalize_name(self.name), normalize_name(self.spoken_name)} | {
            normalize_name(a) for a in self.aliases
        }


def parse_object_types(data: Any, *, file: str | Path, key: str) -> dict[str, ObjectType]:
    """Validate a `types:` mapping {TypeName: {property: value}}; errors name file and key."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(file, key, f"expected a mapping of type names, got {type(data).__name__}")
    types: dict[str, ObjectType] = {}
    for name, props in data.items():
        where = join_key(key, str(name))
        if not isinstance(name, str) or not name[:1].isupper() or not name.isalnum():
            raise ConfigError(file, where, "a type name is CamelCase letters and digits (e.g. DishRack)")
        props = props if props is not None else {}
        check_keys(props, file=file, key=where, optional=TYPE_KEYS)
        flags = {}
        for flag in FLAG_KEYS:
            if flag in props:
                flags[flag] = expect_type(props[flag], bool, file=file, key=join_key(where, flag))
        kind = props.get("kind", "surface")
        if kind not in KINDS:
            raise ConfigError(file, join_key(where, "kind"), f"expected one of {', '.join(KINDS)}, got {kind!r}")
        capacity = props.get("capacity")
        if capacity is not None:
            expect_number(capacity, file=file, key=join_key(where, "capacity"), low=1, high=1000, integer=True)
        mass = expect_number(props.get("mass", 0.0), file=file, key=join_key(where, "mass"), low=0.0, high=100_000.0)
        materials = expect_type(props.get("salientMaterials", []), list, file=file,
                                key=join_key(where, "salientMaterials"))
        aliases = expect_type(props.get("aliases", []), list, file=file, key=join_key(where, "aliases"))
        spoken = expect_type(props.get("spoken", ""), str, file=file, key=join_key(where, "spoken"))
        sliced_type = expect_type(props.get("sliced_type", ""), str, file=file,
                                  key=join_key(where, "sliced_type"))
        slice_count = expect_number(props.get("slice_count", 1 if sliced_type else 0), file=file,
                                    key=join_key(where, "slice_count"), low=0, high=100, integer=True)
        types[name] = ObjectType(
            name=name,
            flags=flags,
            mass=float(mass),
            salient_materials=tuple(str(m) for m in materials),
            kind=kind,
            capacity=capacity,
            spoken=spoken,
            aliases=tuple(str(a) for a in aliases),
            sliced_type=sliced_type,
            slice_count=slice_count,
        )
    return types


@lru_cache(maxsize=8)
def _load_catalogue(path: str) -> dict[str, ObjectType]:
    data = load_yaml(path)
    check_keys(data, file=path, key="", required=("types",))
    return parse_object_types(data["types"], file=path, key="types")


def load_object_types(path: str | Path | None = None) -> dict[str, ObjectType]:
    """The shared catalogue (cached per file; a fresh dict each call so callers may extend it)."""
    target = Path(path) if path is not None else config_path(*CATALOGUE_FILE)
    return dict(_load_catalogue(str(target)))


def relation_for(object_type: str, record: Mapping[str, Any] | None = None) -> str:
    """'in' or 'on' for something resting in/on an object of this type. Types missing from the
    catalogue (recorded AI2-THOR scenes have many) count as containers when they open."""
    known = _safe_catalogue().get(object_type)
    if known is not None and known.flag("receptacle"):
        return known.relation
    if record is not None and record.get("openable"):
        return "in"
    return "on"


def spoken_name(object_type: str) -> str:
    """How the user names a type: the catalogue's `spoken` ("table" for DiningTable), else the
    type split into words ("BoxOfAluminumFoil" -> "box of aluminum foil")."""
    known = _safe_catalogue().get(object_type)
    return known.spoken_name if known is not None else normalize_name(object_type)


def type_names(object_type: str) -> set[str]:
    """Every normalized name of a type: its words, its spoken name and its aliases."""
    known = _safe_catalogue().get(object_type)
    return known.names() if known is not None else {normalize_name(object_type)}


def _safe_catalogue() -> dict[str, ObjectType]:
    try:
        return _load_catalogue(str(config_path(*CATALOGUE_FILE)))
    except ConfigError:
        return {}
