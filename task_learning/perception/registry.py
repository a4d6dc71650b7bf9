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
        receptacle:                  # furniture that holds things: its inner volume, marker frame
          center: [0, 0.34, -0.25]
          size: [0.6, 0.3, 0.4]
        door:                        # furniture that opens: a second marker on its door
          marker: 4
          size: 0.12
          closed_at: [0, 0.34, 0.02] # door marker centre in the body marker frame when closed
        state: {isDirty: false}      # optional: states a camera cannot see (AI2-THOR keys)

The marker frame is OpenCV's: origin at the marker centre, x to the right, y up, z out of the face.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from task_learning.config import check_keys, expect_number, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.safe_text import has_control_characters
from task_learning.world.scene import STATE_KEYS, check_state_value

DEFAULT_DICTIONARY = "DICT_4X4_50"


@dataclass(frozen=True)
class Volume:
    """An axis-aligned box in a marker's frame."""

    center: tuple[float, float, float]
    size: tuple[float, float, float]

    def contains(self, point: np.ndarray, margin: float = 0.0) -> bool:
        half = np.asarray(self.size) / 2.0 + margin
        return bool(np.all(np.abs(np.asarray(point) - np.asarray(self.center)) <= half))

    @property
    def volume(self) -> float:
        return float(np.prod(self.size))


@dataclass(frozen=True)
class Door:
    marker_id: int
    size: float
    closed_at: tuple[float, float, float]


@dataclass(frozen=True)
class MarkerSpec:
    marker_id: int
    object_id: str
    object_type: str
    size: float
    name: str = ""
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    receptacle: Volume | None = None
    door: Door | None = None
    # states a camera cannot see (isDirty, isCooked, ...), as AI2-THOR keys
    state: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.marker_id, "object": self.object_id, "type": self.object_type,
                               "size": self.size, "offset": list(self.offset)}
        if self.name:
            out["name"] = self.name
        if self.receptacle is not None:
            out["receptacle"] = {"center": list(self.receptacle.center), "size": list(self.receptacle.size)}
        if self.door is not None:
            out["door"] = {"marker": self.door.marker_id, "size": self.door.size,
                           "closed_at": list(self.door.closed_at)}
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


def _vector(value: Any, n: int, *, file: str, key: str, positive: bool = False) -> tuple[float, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != n:
        raise ConfigError(file, key, f"expected a list of {n} numbers, got {value!r}")
    for i, v in enumerate(value):
        expect_number(v, file=file, key=join_key(key, i), low=0.0 if positive else -MAX_EXTENT_M,
                      high=MAX_EXTENT_M, low_open=positive)
    return tuple(float(v) for v in value)


def _size(value: Any, *, file: str, key: str) -> float:
    """A marker's side in metres: in (0, MAX_MARKER_SIZE_M]."""
    return float(expect_number(value, file=file, key=key, low=0.0, high=MAX_MARKER_SIZE_M, low_open=True))


def _marker_id(value: Any, *, file: str, key: str, count: int) -> int:
    """An id of the registry's dictionary, which holds `count` markers (ids 0 to count - 1)."""
    return int(expect_number(value, file=file, key=key, low=0, high=count - 1, integer=True))


def _name(value: Any, *, file: str, key: str) -> str:
    """An id, type or name: a string without control characters (it reaches terminals and logs)."""
    text = expect_type(value, str, file=file, key=key).strip()
    if has_control_characters(text):
        raise ConfigError(file, key, f"control characters in {text!r}")
    return text


def registry_from_dict(data: Any, *, source: str = "<registry>",
                       known_types: Mapping[str, Any] | None = None) -> MarkerRegistry:
    """Validate a registry mapping; `known_types` (object type catalogue) checks every `type`."""
    file = source
    body = check_keys(data, file=file, key="", required=["markers"], optional=["dictionary"])
    dictionary = expect_type(body.get("dictionary", DEFAULT_DICTIONARY), str, file=file, key="dictionary")
    try:
        count = int(aruco_dictionary(dictionary).bytesList.shape[0])  # markers the dictionary holds
    except ValueError as exc:
        raise ConfigError(file, "dictionary", str(exc)) from None
    entries = expect_type(body["markers"], list, file=file, key="markers")
    if not entries:
        raise ConfigError(file, "markers", "empty: a registry names at least one marker")
    registry = MarkerRegistry(dictionary=dictionary, source=source)
    used_ids: dict[int, str] = {}
    objects: set[str] = set()
    for index, entry in enumerate(entries):
        key = join_key("markers", index)
        check_keys(entry, file=file, key=key, required=["id", "object", "type", "size"],
                   optional=["name", "offset", "receptacle", "door", "state"])
        marker_id = _marker_id(entry["id"], file=file, key=join_key(key, "id"), count=count)
        object_id = _name(entry["object"], file=file, key=join_key(key, "object"))
        object_type = _name(entry["type"], file=file, key=join_key(key, "type"))
        if not object_id:
            raise ConfigError(file, join_key(key, "object"), "empty object id")
        if known_types is not None and object_type not in known_types:
            hint = difflib.get_close_matches(object_type, sorted(known_types), n=1)
            raise ConfigError(file, join_key(key, "type"), f"unknown object type {object_type!r}"
                              + (f" (did you mean '{hint[0]}'?)" if hint else ""))
        if object_id in objects:
            raise ConfigError(file, join_key(key, "object"), f"object {object_id!r} has two markers")
        objects.add(object_id)
        receptacle = None
        if entry.get("receptacle") is not None:
            rkey = join_key(key, "receptacle")
            r = check_keys(entry["receptacle"], file=file, key=rkey, required=["center", "size"])
            receptacle = Volume(_vector(r["center"], 3, file=file, key=join_key(rkey, "center")),  # type: ignore[arg-type]
                                _vector(r["size"], 3, file=file, key=join_key(rkey, "size"), positive=True))  # type: ignore[arg-type]
        door = None
        if entry.get("door") is not None:
            dkey = join_key(key, "door")
            d = check_keys(entry["door"], file=file, key=dkey, required=["marker", "size", "closed_at"])
            door = Door(_marker_id(d["marker"], file=file, key=join_key(dkey, "marker"), count=count),
                        _size(d["size"], file=file, key=join_key(dkey, "size")),
                        _vector(d["closed_at"], 3, file=file, key=join_key(dkey, "closed_at")))  # type: ignore[arg-type]
        state = check_keys(entry.get("state") or {}, file=file, key=join_key(key, "state"),
                           optional=tuple(STATE_KEYS))
        for skey, svalue in state.items():
            check_state_value(skey, svalue, file=file, key=join_key(join_key(key, "state"), skey))
        spec = MarkerSpec(
            marker_id=marker_id, object_id=object_id, object_type=object_type,
            size=_size(entry["size"], file=file, key=join_key(key, "size")),
            name=_name(entry.get("name") or "", file=file, key=join_key(key, "name")),
            offset=_vector(entry.get("offset", [0, 0, 0]), 3, file=file, key=join_key(key, "offset")),  # type: ignore[arg-type]
            receptacle=receptacle, door=door, state=tuple((str(k), v) for k, v in state.items()))
        for mid, what in ((marker_id, join_key(key, "id")), *(((door.marker_id, join_key(key, "door.marker")),)
                                                              if door else ())):
            if mid in used_ids:
                raise ConfigError(file, what, f"marker id {mid} is already used by {used_ids[mid]}")
            used_ids[mid] = what
        registry.markers[marker_id] = spec
        if door is not None:
            registry.doors[door.marker_id] = spec
    return registry


def load_registry(path: str | Path, known_types: Mapping[str, Any] | None = None) -> MarkerRegistry:
    return registry_from_dict(load_yaml(path), source=str(path), known_types=known_types)
