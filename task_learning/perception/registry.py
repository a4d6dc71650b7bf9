"""The marker registry: which fiducial marker is on which object, and what the robot must know
about that object to build a world state from it.

YAML (validated on load; an error names the file and the key):

    dictionary: DICT_4X4_50          # any cv2.aruco predefined dictionary, e.g. DICT_APRILTAG_36h11
    markers:
      - id: 3                        # marker id in the dictionary
        object: Fridge|1             # the objectId the world state uses
        type: Fridge                 # AI2-THOR type (config/scenes/object_types.yaml)
        size: 0.14                   # marker side in metres (black border to black border)
        offset: [0, 0, -0.3]         # object centre in the marker frame (x right, y up, z out), m
        extent: [0.07, 0.1, 0.24]    # optional: the object's size along the marker's x, y, z (m);
                                     # says which way its narrow side lies (the world state's yaw)
        receptacle:                  # furniture that holds things: its inner volume, marker frame
          center: [0, 0.34, -0.25]
          size: [0.6, 0.3, 0.4]
          walls: 0.25                # optional: how high its walls rise above the volume's floor
                                     # (a bin's, a drawer tray's: what is put in clears them)
        door:                        # furniture that opens: a second marker on its door
          marker: 4
          size: 0.12
          closed_at: [0, 0.34, 0.02] # door marker centre in the body marker frame when closed
          handle: [-0.2, 0, 0.03]    # optional: the handle's centre in the door marker's frame
          swing:                     # optional, a hinged door: where it stands once opened
            hinge: [0.3, 0.2, 0.0]   # a point of the hinge's axis, body marker frame
            axis: [0, 1, 0]          # the axis (body marker frame), turning by the right hand
            angle: 1.75              # rad the door stands open at (its stop)
        state: {isDirty: false}      # optional: states a camera cannot see (AI2-THOR keys)

The marker frame is OpenCV's: origin at the marker centre, x to the right, y up, z out of the face.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Mapping

import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field

from task_learning.errors import ConfigError
from task_learning.inputs.config import join_key, load_yaml
from task_learning.inputs.numbers import number_problem
from task_learning.inputs.schema import Schema, bounded, invalid, no_control_characters, validate
from task_learning.world.scene import ObjectState

DEFAULT_DICTIONARY = "DICT_4X4_50"


@dataclass(frozen=True)
class Volume:
    """An axis-aligned box in a marker's frame, and how high walls rise above its floor (0: a
    table's top, a shelf, a compartment entered from its open front)."""

    center: tuple[float, float, float]
    size: tuple[float, float, float]
    walls: float = 0.0

    def contains(self, point: np.ndarray, margin: float = 0.0) -> bool:
        half = np.asarray(self.size) / 2.0 + margin
        return bool(np.all(np.abs(np.asarray(point) - np.asarray(self.center)) <= half))

    @property
    def volume(self) -> float:
        return float(np.prod(self.size))


@dataclass(frozen=True)
class Swing:
    """A hinged door's axis (a point and a direction, body marker frame) and the angle it stands
    open at: where an opened door is when its own marker faces away from the camera."""

    hinge: tuple[float, float, float]
    axis: tuple[float, float, float]
    angle: float


@dataclass(frozen=True)
class Door:
    marker_id: int
    size: float
    closed_at: tuple[float, float, float]
    handle: tuple[float, float, float] | None = None  # in the door marker's frame: where the hand pulls
    swing: Swing | None = None


@dataclass(frozen=True)
class MarkerSpec:
    marker_id: int
    object_id: str
    object_type: str
    size: float
    name: str = ""
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    extent: tuple[float, float, float] | None = None
    receptacle: Volume | None = None
    door: Door | None = None
    # states a camera cannot see (isDirty, isCooked, ...), as AI2-THOR keys
    state: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.marker_id, "object": self.object_id, "type": self.object_type,
                               "size": self.size, "offset": list(self.offset)}
        if self.name:
            out["name"] = self.name
        if self.extent is not None:
            out["extent"] = list(self.extent)
        if self.receptacle is not None:
            out["receptacle"] = {"center": list(self.receptacle.center), "size": list(self.receptacle.size),
                                 **({"walls": self.receptacle.walls} if self.receptacle.walls else {})}
        if self.door is not None:
            out["door"] = {"marker": self.door.marker_id, "size": self.door.size,
                           "closed_at": list(self.door.closed_at),
                           **({"handle": list(self.door.handle)} if self.door.handle is not None else {}),
                           **({"swing": {"hinge": list(self.door.swing.hinge), "axis": list(self.door.swing.axis),
                                         "angle": self.door.swing.angle}} if self.door.swing is not None else {})}
        if self.state:
            out["state"] = dict(self.state)
        return out


@dataclass
class MarkerRegistry:
    dictionary: str = DEFAULT_DICTIONARY
    markers: dict[int, MarkerSpec] = field(default_factory=dict)  # body markers by id
    doors: dict[int, MarkerSpec] = field(default_factory=dict)    # door marker id -> its furniture
    source: str = "<registry>"

    @property
    def by_object(self) -> dict[str, MarkerSpec]:
        return {spec.object_id: spec for spec in self.markers.values()}

    def size_of(self, marker_id: int) -> float | None:
        if marker_id in self.markers:
            return self.markers[marker_id].size
        if marker_id in self.doors:
            door = self.doors[marker_id].door
            return door.size if door else None
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"dictionary": self.dictionary, "markers": [s.to_dict() for s in self.markers.values()]}


def aruco_dictionary(name: str) -> Any:
    """The cv2.aruco dictionary of that name; ValueError listing the valid names."""
    import cv2

    names = sorted(n for n in dir(cv2.aruco) if n.startswith("DICT_"))
    key = name.strip().upper()
    match = {n.upper(): n for n in names}.get(key)
    if match is None:
        hint = difflib.get_close_matches(key, names, n=1)
        raise ValueError(f"unknown marker dictionary {name!r}"
                         + (f" (did you mean {hint[0]}?)" if hint else f" (known: {', '.join(names)})"))
    return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, match))


# A printed marker is centimetres to a metre or two across; furniture is metres, not kilometres.
MAX_MARKER_SIZE_M = 2.0
MAX_EXTENT_M = 10.0  # offsets, volumes and door positions, in the marker's frame


def _three(value: Any) -> Any:
    if not isinstance(value, list) or len(value) != 3:
        raise invalid(f"expected a list of 3 numbers, got {value!r}")
    return value


Extent = Annotated[float, bounded(low=-MAX_EXTENT_M, high=MAX_EXTENT_M)]
PositiveExtent = Annotated[float, bounded(low=0.0, high=MAX_EXTENT_M, low_open=True)]
Vector = Annotated[list[Extent], BeforeValidator(_three)]
PositiveVector = Annotated[list[PositiveExtent], BeforeValidator(_three)]
MarkerSize = Annotated[float, bounded(low=0.0, high=MAX_MARKER_SIZE_M, low_open=True)]
# an id of the registry's dictionary: its range is checked in registry_from_dict
MarkerId = Annotated[int, bounded(integer=True)]
# an id, type or name: it reaches terminals and logs
Name = Annotated[str, AfterValidator(str.strip), no_control_characters]


class VolumeDoc(Schema):
    center: Vector
    size: PositiveVector
    walls: Annotated[float, bounded(low=0.0)] = 0.0


class SwingDoc(Schema):
    hinge: Vector
    axis: Vector
    angle: Annotated[float, bounded(low=-math.pi, high=math.pi)]


class DoorDoc(Schema):
    marker: MarkerId
    size: MarkerSize
    closed_at: Vector
    handle: Vector | None = None
    swing: SwingDoc | None = None


class MarkerDoc(Schema):
    id: MarkerId
    object: Name
    type: Name
    size: MarkerSize
    name: Name | None = None
    offset: Vector = Field(default_factory=lambda: [0.0, 0.0, 0.0])
    extent: PositiveVector | None = None
    receptacle: VolumeDoc | None = None
    door: DoorDoc | None = None
    state: ObjectState | None = None


class RegistryDoc(Schema):
    dictionary: str = DEFAULT_DICTIONARY
    markers: list[MarkerDoc]


def _vec(value: list[float]) -> tuple[float, float, float]:
    return (value[0], value[1], value[2])


def registry_from_dict(data: Any, *, source: str = "<registry>",
                       known_types: Mapping[str, Any] | None = None) -> MarkerRegistry:
    """Validate a registry mapping; `known_types` (object type catalogue) checks every `type`."""
    file = source
    doc = validate(RegistryDoc, data, file=file)
    try:
        count = int(aruco_dictionary(doc.dictionary).bytesList.shape[0])  # markers the dictionary holds
    except ValueError as exc:
        raise ConfigError(file, "dictionary", str(exc)) from None
    if not doc.markers:
        raise ConfigError(file, "markers", "empty: a registry names at least one marker")
    registry = MarkerRegistry(dictionary=doc.dictionary, source=source)
    used_ids: dict[int, str] = {}
    objects: set[str] = set()
    for index, entry in enumerate(doc.markers):
        key = join_key("markers", index)
        if not entry.object:
            raise ConfigError(file, join_key(key, "object"), "empty object id")
        if known_types is not None and entry.type not in known_types:
            hint = difflib.get_close_matches(entry.type, sorted(known_types), n=1)
            raise ConfigError(file, join_key(key, "type"), f"unknown object type {entry.type!r}"
                              + (f" (did you mean '{hint[0]}'?)" if hint else ""))
        if entry.object in objects:
            raise ConfigError(file, join_key(key, "object"), f"object {entry.object!r} has two markers")
        objects.add(entry.object)
        door = None
        if entry.door is not None:
            swing = entry.door.swing
            if swing is not None and not any(swing.axis):
                raise ConfigError(file, join_key(key, "door.swing.axis"), "a zero vector is no axis")
            door = Door(entry.door.marker, entry.door.size, _vec(entry.door.closed_at),
                        _vec(entry.door.handle) if entry.door.handle is not None else None,
                        Swing(_vec(swing.hinge), _vec(swing.axis), swing.angle) if swing is not None else None)
        spec = MarkerSpec(
            marker_id=entry.id, object_id=entry.object, object_type=entry.type, size=entry.size,
            name=entry.name or "", offset=_vec(entry.offset),
            extent=_vec(entry.extent) if entry.extent is not None else None,
            receptacle=Volume(_vec(entry.receptacle.center), _vec(entry.receptacle.size), entry.receptacle.walls)
            if entry.receptacle else None,
            door=door, state=tuple(entry.state.given().items()) if entry.state else ())
        for mid, what in ((entry.id, join_key(key, "id")), *(((door.marker_id, join_key(key, "door.marker")),)
                                                             if door else ())):
            problem = number_problem(mid, low=0, high=count - 1, integer=True)
            if problem:
                raise ConfigError(file, what, problem)
            if mid in used_ids:
                raise ConfigError(file, what, f"marker id {mid} is already used by {used_ids[mid]}")
            used_ids[mid] = what
        registry.markers[entry.id] = spec
        if door is not None:
            registry.doors[door.marker_id] = spec
    return registry


def load_registry(path: str | Path, known_types: Mapping[str, Any] | None = None) -> MarkerRegistry:
    return registry_from_dict(load_yaml(path), source=str(path), known_types=known_types)
