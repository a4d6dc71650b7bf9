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
from typing import Annotated, Any, Literal, Mapping

from pydantic import AfterValidator, Field

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path
from task_learning.inputs.names import normalize_name
from task_learning.inputs.schema import Schema, bounded, invalid, load_model

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


def _camel_case(name: str) -> str:
    if not name[:1].isupper() or not name.isalnum():
        raise invalid("a type name is CamelCase letters and digits (e.g. DishRack)")
    return name


TypeName = Annotated[str, AfterValidator(_camel_case)]


class TypeDoc(Schema):
    """One type's entry in a `types:` mapping (see the header of config/scenes/object_types.yaml)."""

    pickupable: bool = False
    receptacle: bool = False
    openable: bool = False
    toggleable: bool = False
    sliceable: bool = False
    canFillWithLiquid: bool = False
    dirtyable: bool = False
    cookable: bool = False
    breakable: bool = False
    canBeUsedUp: bool = False
    isHeatSource: bool = False
    isColdSource: bool = False
    moveable: bool = False
    mass: Annotated[float, bounded(low=0.0, high=100_000.0)] = 0.0
    salientMaterials: list[str] = Field(default_factory=list)
    kind: Literal["surface", "container"] = "surface"
    capacity: Annotated[int, bounded(low=1, high=1000, integer=True)] | None = None
    spoken: str = ""
    aliases: list[str] = Field(default_factory=list)
    sliced_type: str = ""
    slice_count: Annotated[int, bounded(low=0, high=100, integer=True)] | None = None

    def to_type(self, name: str) -> ObjectType:
        flags = {flag: getattr(self, flag) for flag in FLAG_KEYS if flag in self.model_fields_set}
        return ObjectType(
            name=name, flags=flags, mass=float(self.mass), salient_materials=tuple(self.salientMaterials),
            kind=self.kind, capacity=self.capacity, spoken=self.spoken, aliases=tuple(self.aliases),
            sliced_type=self.sliced_type,
            slice_count=self.slice_count if self.slice_count is not None else (1 if self.sliced_type else 0),
        )


TypesDoc = dict[TypeName, TypeDoc | None]


def object_types(doc: Mapping[str, TypeDoc | None] | None) -> dict[str, ObjectType]:
    """The ObjectTypes a validated `types:` mapping declares (an entry without properties: none)."""
    return {name: (props or TypeDoc()).to_type(name) for name, props in (doc or {}).items()}


class CatalogueDoc(Schema):
    """config/scenes/object_types.yaml."""

    types: TypesDoc


@lru_cache(maxsize=8)
def _load_catalogue(path: str) -> dict[str, ObjectType]:
    return object_types(load_model(CatalogueDoc, path).types)


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
