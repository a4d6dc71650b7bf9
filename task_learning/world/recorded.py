"""Recorded AI2-THOR object metadata checked before it becomes a scene.

A FloorPlan a user recorded (or edited by hand) is input like any configuration file, and a
scene with nonsense in it corrupts every run on it without a word: an id with an escape
sequence reaches the operator's terminal, the string "false" read as a boolean is true, a NaN
position poisons every distance, a containment cycle sends the world's walks round forever. So
every record is checked against the types AI2-THOR itself writes (ai2thor 5.x, the 42 keys), and
the first problem is a ConfigError naming the file, the object (index and id) and the field.

Lenient only where real recordings are: `null` for the list fields (receptacleObjectIds,
parentReceptacles, salientMaterials, controlledObjects) and for the bounding boxes, and keys this
project does not read may be absent. Unknown extra keys are kept (a newer AI2-THOR may add some).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from task_learning.errors import ConfigError
from task_learning.inputs.config import MAX_NESTING, join_key
from task_learning.inputs.numbers import non_finite_path, number_problem
from task_learning.inputs.safe_text import has_control_characters

BOOLEAN_KEYS = (
    "visible", "isInteractable", "receptacle", "toggleable", "isToggled", "breakable", "isBroken",
    "canFillWithLiquid", "isFilledWithLiquid", "dirtyable", "isDirty", "canBeUsedUp", "isUsedUp",
    "cookable", "isCooked", "isHeatSource", "isColdSource", "sliceable", "isSliced", "openable", "isOpen",
    "pickupable", "isPickedUp", "moveable", "isMoving",
)
TEXT_KEYS = ("name", "assetId")
ID_LIST_KEYS = ("receptacleObjectIds", "parentReceptacles", "controlledObjects")
TEMPERATURES = ("Hot", "Cold", "RoomTemp")
# Numbers with the range AI2-THOR gives them (metres, kilograms, degrees).
NUMBER_RANGES = {"openness": (0.0, 1.0), "mass": (0.0, 100_000.0), "distance": (0.0, 100_000.0)}
MAX_COORDINATE_M = 10_000.0  # a FloorPlan is a few metres across; rotations are degrees
MAX_OBJECTS = 100_000
# Containment deeper than this is a broken recording (a real one: an egg in a bowl in a fridge).
MAX_CONTAINMENT_DEPTH = 16


def _key(index: int, object_id: str | None, field: str = "") -> str:
    where = f"objects[{index}]" + (f" ({object_id})" if object_id else "")
    return join_key(where, field) if field else where


def _text(value: Any, where: str, key: str, *, required: bool = False) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(where, key, f"expected a non-empty string, got {value!r}" if required
                          else f"expected a string, got {value!r}")
    if has_control_characters(value):
        raise ConfigError(where, key, f"control characters in {value!r}")


def _vector(value: Any, where: str, key: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(where, key, f"expected {{x, y, z}} numbers, got {value!r}")
    for axis in "xyz":
        if axis not in value:
            raise ConfigError(where, join_key(key, axis), "missing")
        problem = number_problem(value[axis], low=-MAX_COORDINATE_M, high=MAX_COORDINATE_M)
        if problem:
            raise ConfigError(where, join_key(key, axis), problem)


def check_record(raw: Any, index: int, where: str) -> None:
    """One recorded object: ConfigError naming `where`, the object and the field at the first
    value of the wrong type, out of range or with control characters."""
    if not isinstance(raw, Mapping):
        raise ConfigError(where, _key(index, None), f"expected an object dict, got {type(raw).__name__}")
    object_id = raw.get("objectId")
    _text(object_id, where, _key(index, None, "objectId"), required=True)
    _text(raw.get("objectType"), where, _key(index, object_id, "objectType"), required=True)
    found = non_finite_path(raw, max_depth=MAX_NESTING)  # NaN or infinities anywhere (bounding boxes too)
    if found is not None:
        raise ConfigError(where, _key(index, object_id, found[0]), found[1])
    for name in BOOLEAN_KEYS:
        if name in raw and not isinstance(raw[name], bool):
            raise ConfigError(where, _key(index, object_id, name),
                              f"expected true or false, got {type(raw[name]).__name__} {raw[name]!r}")
    for name in TEXT_KEYS:
        _text(raw.get(name), where, _key(index, object_id, name))
    for name in ID_LIST_KEYS + ("salientMaterials",):
        value = raw.get(name)
        if value is None:
            continue
        if not isinstance(value, list):
            raise ConfigError(where, _key(index, object_id, name), f"expected a list or null, got {value!r}")
        for i, item in enumerate(value):
            _text(item, where, _key(index, object_id, f"{name}[{i}]"), required=True)
    for name, (low, high) in NUMBER_RANGES.items():
        if name in raw:
            problem = number_problem(raw[name], low=low, high=high)
            if problem:
                raise ConfigError(where, _key(index, object_id, name), problem)
    if "temperature" in raw and raw["temperature"] not in TEMPERATURES:
        raise ConfigError(where, _key(index, object_id, "temperature"),
                          f"expected one of {', '.join(TEMPERATURES)}, got {raw['temperature']!r}")
    if raw.get("fillLiquid") is not None:
        _text(raw["fillLiquid"], where, _key(index, object_id, "fillLiquid"))
    if "position" not in raw:
        raise ConfigError(where, _key(index, object_id, "position"), "missing (every recorded object has one)")
    _vector(raw["position"], where, _key(index, object_id, "position"))
    if raw.get("rotation") is not None:
        _vector(raw["rotation"], where, _key(index, object_id, "rotation"))
    for name in ("axisAlignedBoundingBox", "objectOrientedBoundingBox"):
        value = raw.get(name)
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError(where, _key(index, object_id, name), f"expected a mapping or null, got {value!r}")


def drop_fixed_in_movable(records: list[dict[str, Any]]) -> int:
    """AI2-THOR's physics reports a fixed object as inside a movable one that touches it (in the
    recorded FloorPlan9 a cabinet is "in" a cup and a counter top "in" a plate and a toaster,
    each the other way round too): a link no world has. Such parent links (an object that is
    neither pickupable nor moveable, inside one that is) are dropped before containment is
    checked; returns how many. A cycle between objects that could hold each other stays a cycle
    and is refused."""
    movable = {r["objectId"] for r in records if r.get("pickupable") or r.get("moveable")}
    dropped = 0
    for record in records:
        if record["objectId"] in movable:
            continue
        kept = [p for p in record["parentReceptacles"] if p not in movable]
        dropped += len(record["parentReceptacles"]) - len(kept)
        record["parentReceptacles"] = kept
    return dropped


def check_containment(records: Sequence[Mapping[str, Any]], recorded_children: Mapping[str, list[str]],
                      where: str, *, cycles: bool = True) -> None:
    """Every id a record names as parent or child is an object of the scene; with `cycles`,
    containment (parentReceptacles) has no cycle and is at most MAX_CONTAINMENT_DEPTH deep."""
    by_id = {r["objectId"]: r for r in records}
    index_of = {r["objectId"]: i for i, r in enumerate(records)}
    for record in records:
        oid = record["objectId"]
        for i, child in enumerate(recorded_children.get(oid, [])):
            if child not in by_id:
                raise ConfigError(where, _key(index_of[oid], oid, f"receptacleObjectIds[{i}]"),
                                  f"lists {child!r}, which is not an object of the scene")
        for i, parent in enumerate(record["parentReceptacles"]):
            if parent not in by_id:
                raise ConfigError(where, _key(index_of[oid], oid, f"parentReceptacles[{i}]"),
                                  f"names receptacle {parent!r}, which is not an object of the scene")
    if cycles:
        _check_cycles_and_depth(records, index_of, where)


def _check_cycles_and_depth(records: Sequence[Mapping[str, Any]], index_of: Mapping[str, int], where: str) -> None:
    """No object is (through any of its parents) inside itself, and no chain of containment is
    longer than MAX_CONTAINMENT_DEPTH: a depth-first walk over every parent link, without
    recursion."""
    parents = {r["objectId"]: list(r["parentReceptacles"]) for r in records}
    depth: dict[str, int] = {}  # finished: the longest chain of parents above the object
    for start in parents:
        if start in depth:
            continue
        path = [start]
        pending = [iter(parents[start])]
        while pending:
            parent = next(pending[-1], None)
            if parent is None:
                done = path.pop()
                pending.pop()
                depth[done] = 1 + max((depth[p] for p in parents[done]), default=-1)
                if depth[done] > MAX_CONTAINMENT_DEPTH:
                    raise ConfigError(where, _key(index_of[done], done, "parentReceptacles"),
                                      f"contained more than {MAX_CONTAINMENT_DEPTH} levels deep")
                continue
            if parent in path:
                cycle = " in ".join(path[path.index(parent):] + [parent])
                raise ConfigError(where, _key(index_of[path[-1]], path[-1], "parentReceptacles"),
                                  f"containment cycle: {cycle}")
            if parent not in depth:
                path.append(parent)
                pending.append(iter(parents[parent]))
