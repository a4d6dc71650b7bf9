"""Scenes: the objects of a household task, where they start, and where the user wants them.

A scene comes from `config/scenes/<name>.yaml` (the paper's tasks, the STARS paper appendix A) or from
recorded AI2-THOR object metadata (`../fixtures/ai2thor`). Either way its objects are AI2-THOR
object dicts, so everything downstream reads one format. YAML scenes are validated strictly:
every error names the file and the key, because a silently misread scene would corrupt every
experiment run on it.

Scene YAML keys: name, task, location, context (STARS+CTX user-context sentences),
selection_context (STARS*: the STARS paper footnote 3's sentences, given to Selection only), types (extra
object types), objects (list of {type, id, at, preferred, state, capacity, position}), subtasks (list of {name,
instruction, places}), closable (openables that must end closed), assertions (optional check of
the completion measure's total), agent ({position}), slice_requires_knife.

A scene in an iTHOR FloorPlan names it (`floorplan: FloorPlan1`) instead of listing objects: the
objects come from the FloorPlan's recorded metadata (world/floorplans.py), or from a recording of
one's own (`floorplan: my_rooms.json#205`, relative to the scene file); `task_objects`
(list of {object, at, preferred}) says which of them to put away, where each starts (`at`, moved
there at reset: AI2-THOR's SetObjectPoses) and where the user wants it (`preferred`).
"""
from __future__ import annotations

import difflib
import gzip
import io
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping

from pydantic import BeforeValidator

from task_learning.errors import ConfigError
from task_learning.inputs.config import MAX_NESTING, MAX_YAML_BYTES, config_path, join_key, load_yaml
from task_learning.inputs.files import read_input_bytes
from task_learning.inputs.names import normalize_name
from task_learning.inputs.safe_text import has_control_characters
from task_learning.inputs.schema import PlainText, Schema, bounded, invalid, validate
from task_learning.world import layout
from task_learning.world.catalog import FLAG_KEYS, ObjectType, TypesDoc, load_object_types, object_types
from task_learning.world.recorded import (
    MAX_CONTAINMENT_DEPTH,
    MAX_COORDINATE_M,
    check_containment,
    check_record,
    drop_fixed_in_movable,
)
from task_learning.world.recorded import MAX_OBJECTS as MAX_RECORDED_OBJECTS

# AI2-THOR's 42 object keys, in its order (ai2thor 5.x).
AI2THOR_OBJECT_KEYS = (
    "name", "position", "rotation", "visible", "isInteractable", "receptacle", "toggleable",
    "isToggled", "breakable", "isBroken", "canFillWithLiquid", "isFilledWithLiquid", "fillLiquid",
    "dirtyable", "isDirty", "canBeUsedUp", "isUsedUp", "cookable", "isCooked", "temperature",
    "isHeatSource", "isColdSource", "sliceable", "isSliced", "openable", "isOpen", "openness",
    "pickupable", "isPickedUp", "moveable", "mass", "salientMaterials", "receptacleObjectIds",
    "distance", "objectType", "objectId", "assetId", "parentReceptacles", "controlledObjects",
    "isMoving", "axisAlignedBoundingBox", "objectOrientedBoundingBox",
)
log = logging.getLogger(__name__)
MAX_CAPACITY = 1000  # objects directly inside one receptacle
_ID_PATTERN = re.compile(r"^[A-Z][A-Za-z0-9]*\|[^\s]+$")
DEFAULT_AGENT_POSITION = {"x": 0.0, "y": 0.9, "z": 0.0}


@dataclass
class Subtask:
    """One subtask the user teaches (the STARS paper B.1): e.g. clear an object that is on the table."""

    name: str
    instruction: str
    places: list[str]  # object ids whose contents the subtask works through

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instruction": self.instruction, "places": list(self.places)}


@dataclass
class Scene:
    """A household task's world: AI2-THOR object dicts plus the user's hidden preferences.

    `preferences` and `closable` are ground truth for scoring only (completion measure); nothing
    that proposes goals may read them.
    """

    name: str
    task: str
    location: str
    objects: list[dict[str, Any]]
    task_objects: list[str] = field(default_factory=list)
    subtasks: list[Subtask] = field(default_factory=list)
    preferences: dict[str, list[str]] = field(default_factory=dict)
    closable: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    # STARS* (the STARS paper footnote 3): sentences given to Selection only, as a system prompt
    selection_context: list[str] = field(default_factory=list)
    assertions: int = 0
    source: str = ""
    agent: dict[str, Any] = field(default_factory=lambda: {"position": dict(DEFAULT_AGENT_POSITION)})
    # alternatives a seeded world may pick from: object id -> acceptable starting receptacles
    placement_options: dict[str, list[str]] = field(default_factory=dict)
    # per receptacle id: at most this many objects directly inside (absent: unlimited)
    capacities: dict[str, int] = field(default_factory=dict)
    types: dict[str, ObjectType] = field(default_factory=dict)
    slice_requires_knife: bool = False
    # the iTHOR FloorPlan the scene is set in ('' for scenes written object by object), and the
    # objects moved away from their recorded place at reset: object id -> receptacle id
    floorplan: str = ""
    start_moves: dict[str, str] = field(default_factory=dict)
    # the recorded AI2-THOR metadata the objects came from, as load_scene takes it
    # ('/abs/file.json#key' or '/abs/file.json'); '' for scenes written object by object. The
    # AI2-THOR backend tells a stand-in simulator where it is (Unity serves the FloorPlan itself).
    recording: str = ""

    def by_id(self) -> dict[str, dict[str, Any]]:
        return {o["objectId"]: o for o in self.objects}

    def object(self, object_id: str) -> dict[str, Any]:
        for record in self.objects:
            if record["objectId"] == object_id:
                return record
        raise KeyError(object_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "task": self.task,
            "location": self.location,
            "source": self.source,
            "objects": self.objects,
            "task_objects": list(self.task_objects),
            "subtasks": [s.to_dict() for s in self.subtasks],
            "preferences": {k: list(v) for k, v in self.preferences.items()},
            "closable": list(self.closable),
            "context": list(self.context),
            "selection_context": list(self.selection_context),
            "assertions": self.assertions,
        }


# ---------------------------------------------------------------------------------------------
# AI2-THOR object records


def make_object_record(object_type: ObjectType, object_id: str, *, name: str = "") -> dict[str, Any]:
    """A fresh AI2-THOR object dict (all 42 keys) for an object of this type, at rest."""
    flags = {key: object_type.flag(key) for key in FLAG_KEYS}
    record: dict[str, Any] = {
        "name": name or object_id.replace("|", "_"),
        "position": layout.vec(0.0, 0.0, 0.0),
        "rotation": layout.vec(0.0, 0.0, 0.0),
        "visible": True,
        "isInteractable": False,
        "receptacle": flags["receptacle"],
        "toggleable": flags["toggleable"],
        "isToggled": False,
        "breakable": flags["breakable"],
        "isBroken": False,
        "canFillWithLiquid": flags["canFillWithLiquid"],
        "isFilledWithLiquid": False,
        "fillLiquid": None,
        "dirtyable": flags["dirtyable"],
        "isDirty": False,
        "canBeUsedUp": flags["canBeUsedUp"],
        "isUsedUp": False,
        "cookable": flags["cookable"],
        "isCooked": False,
        "temperature": "Cold" if flags["isColdSource"] else "RoomTemp",
        "isHeatSource": flags["isHeatSource"],
        "isColdSource": flags["isColdSource"],
        "sliceable": flags["sliceable"],
        "isSliced": False,
        "openable": flags["openable"],
        "isOpen": False,
        "openness": 0.0,
        "pickupable": flags["pickupable"],
        "isPickedUp": False,
        "moveable": flags["moveable"],
        "mass": object_type.mass,
        "salientMaterials": list(object_type.salient_materials),
        "receptacleObjectIds": [],
        "distance": 0.0,
        "objectType": object_type.name,
        "objectId": object_id,
        "assetId": f"{object_type.name}_1",
        "parentReceptacles": [],
        "controlledObjects": None,
        "isMoving": False,
        "axisAlignedBoundingBox": None,
        "objectOrientedBoundingBox": None,
    }
    return record


# ---------------------------------------------------------------------------------------------
# Loading


def scene_file(name: str) -> Path:
    return config_path("scenes", f"{name}.yaml")


def available_scenes() -> list[str]:
    folder = config_path("scenes")
    return sorted(p.stem for p in folder.glob("*.yaml") if p.stem != "object_types")


def load_scene(name_or_path: str | Path) -> Scene:
    """A scene by name (config/scenes/<name>.yaml), YAML path, or recorded AI2-THOR metadata
    (a .json file; a file holding several scenes takes '#<key>', e.g. 'objects.json#21')."""
    text = str(name_or_path)
    base, key = text.rsplit("#", 1) if "#" in text else (text, "")
    looks_like_path = "/" in base or base.endswith((".yaml", ".yml", ".json", ".json.gz")) or Path(base).is_file()
    if not looks_like_path:
        path = scene_file(base)
        if not path.is_file():
            known = available_scenes()
            hint = difflib.get_close_matches(base, known, n=1)
            suffix = f" (did you mean '{hint[0]}'?)" if hint else f" (known: {', '.join(known)})"
            raise ConfigError(path, None, f"no scene named '{base}'{suffix}")
    else:
        path = Path(base)
    if path.suffix == ".json" or path.name.endswith(".json.gz"):
        return _load_metadata_file(path, key or None)
    return _load_yaml_scene(path)


def load_metadata_scenes(path: str | Path) -> dict[str, Scene]:
    """Every scene in a recorded-metadata file, keyed as in the file ('' for a single scene)."""
    path = Path(path)
    data = _read_json(path)
    groups = _metadata_groups(data, path)
    return {key: scene_from_metadata(objs, name=_scene_name(path, key, data), source=str(path))
            for key, objs in groups.items()}


def _read_json(path: Path) -> Any:
    """JSON, or gzipped JSON (name ending .gz), from a regular file. NaN and infinities are
    parsed, so that the record check (world/recorded.py) refuses them naming the object and the
    field; nesting deeper than Python can parse is refused here."""
    raw = read_input_bytes(path, max_bytes=MAX_YAML_BYTES)
    if path.name.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as handle:
                raw = handle.read(MAX_YAML_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise ConfigError(path, None, f"not a readable gzip file: {exc}") from None
        if len(raw) > MAX_YAML_BYTES:
            raise ConfigError(path, None, f"unpacks to more than {MAX_YAML_BYTES} bytes")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(path, None, f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(path, None, f"line {exc.lineno}, column {exc.colno}: malformed JSON: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(path, None, f"nested more than {MAX_NESTING} levels deep") from None


def _metadata_groups(data: Any, path: Path) -> dict[str, Any]:
    """Recognise the shapes recorded metadata comes in; '' keys a file holding one scene."""
    if isinstance(data, list):
        return {"": data}
    if isinstance(data, Mapping):
        if isinstance(data.get("objects"), list):
            return {"": data["objects"]}
        values = list(data.values())
        if values and all(isinstance(v, Mapping) and "objectId" in v for v in values):
            return {"": data}
        if values and all(isinstance(v, (list, Mapping)) for v in values):
            return {str(k): v for k, v in data.items()}
    raise ConfigError(path, None, "not AI2-THOR object metadata: expected a list of objects, a dict "
                      "objectId -> object, event metadata with 'objects', or scenes keyed by name")


def _scene_name(path: Path, key: str, data: Any) -> str:
    if key:
        return f"FloorPlan{key}" if key.isdigit() else key
    name = data.get("sceneName") if isinstance(data, Mapping) else None
    if isinstance(name, str):
        return name
    stem = path.name.split(".")[0]
    return stem[: -len("_objects")] if stem.endswith("_objects") else stem


def _load_metadata_file(path: Path, key: str | None) -> Scene:
    data = _read_json(path)
    groups = _metadata_groups(data, path)
    if key is None:
        if list(groups) != [""]:
            raise ConfigError(path, None, f"holds several scenes ({', '.join(groups)}); "
                              f"pick one as '{path}#<scene>'")
        key = ""
    if key not in groups:
        raise ConfigError(path, key, f"no such scene in the file (has: {', '.join(groups)})")
    scene = scene_from_metadata(groups[key], name=_scene_name(path, key, data),
                                source=f"{path}" + (f"#{key}" if key else ""))
    scene.recording = f"{path.resolve()}" + (f"#{key}" if key else "")
    return scene


def location_of_floorplan(name: str) -> str:
    """iTHOR numbering: FloorPlan1-30 kitchens, 201-230 living rooms, 301-330 bedrooms, 401-430
    bathrooms."""
    match = re.search(r"FloorPlan(\d+)", name)
    if not match:
        return "room"
    number = int(match.group(1))
    return {0: "kitchen", 2: "living room", 3: "bedroom", 4: "bathroom"}.get(number // 100, "room")


def scene_from_metadata(
    objects: Iterable[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]],
    name: str,
    *,
    source: str = "",
    task: str = "",
    location: str | None = None,
) -> Scene:
    """A scene from recorded AI2-THOR object metadata (a list, or a dict objectId -> object).

    Containment is taken from parentReceptacles (null counts as none) and each receptacle's
    receptacleObjectIds is rebuilt from it, so the two always agree. null lists become [].
    """
    items = list(objects.values()) if isinstance(objects, Mapping) else list(objects)
    where = source or name
    if not items:
        raise ConfigError(where, "objects", "no objects: recorded metadata lists at least one object")
    if len(items) > MAX_RECORDED_OBJECTS:
        raise ConfigError(where, "objects", f"{len(items)} objects, at most {MAX_RECORDED_OBJECTS}")
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(items):
        check_record(raw, index, where)
        if raw["objectId"] in seen:
            raise ConfigError(where, f"objects[{index}].objectId", f"duplicate id {raw['objectId']!r}")
        seen.add(raw["objectId"])
        record = dict(raw)
        record["parentReceptacles"] = list(raw.get("parentReceptacles") or [])
        record["receptacleObjectIds"] = []
        for flag in FLAG_KEYS + ("isOpen", "isToggled", "isSliced", "isPickedUp", "isDirty",
                                 "isCooked", "isFilledWithLiquid", "isBroken", "isUsedUp"):
            record[flag] = bool(record.get(flag, False))
        record["position"] = dict(raw["position"])
        records.append(record)
    recorded_children = {r["objectId"]: list(items[i].get("receptacleObjectIds") or [])
                         for i, r in enumerate(records)}
    check_containment(records, recorded_children, where, cycles=False)
    if drop_fixed_in_movable(records):
        log.debug("%s: dropped parent links of fixed objects inside movable ones (AI2-THOR physics)", where)
    check_containment(records, recorded_children, where)
    children_of: dict[str, list[str]] = {}
    for record in records:
        for parent in record["parentReceptacles"]:
            children_of.setdefault(parent, []).append(record["objectId"])
    for record in records:
        order = {cid: i for i, cid in enumerate(recorded_children[record["objectId"]])}
        record["receptacleObjectIds"] = sorted(children_of.get(record["objectId"], []),
                                               key=lambda c: order.get(c, len(order)))
    catalogue = load_object_types()
    capacities = {}
    for record in records:
        known = catalogue.get(record["objectType"])
        if known is not None and known.capacity is not None and record["receptacle"]:
            capacities[record["objectId"]] = max(known.capacity, len(record["receptacleObjectIds"]))
    positions = [r["position"] for r in records if r.get("position")]
    centre = layout.vec(
        sum(float(p["x"]) for p in positions) / max(1, len(positions)), 0.9,
        sum(float(p["z"]) for p in positions) / max(1, len(positions)),
    )
    return Scene(
        name=name,
        task=task,
        location=location or location_of_floorplan(name),
        objects=records,
        source=source,
        agent={"position": centre},
        capacities=capacities,
        types=catalogue,
    )


# ---------------------------------------------------------------------------------------------
# YAML scenes: the schema says what a file may hold; the builders below resolve what it means in
# its scene (references to objects, receptacles, capacities, the total of the completion measure).


def _reference(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"expected an object id or type name, got {value!r}")
    return value


# An object id, or a type or spoken name naming exactly one object of the scene ('DishRack',
# 'dish rack', 'table'): resolved by _SceneRefs once every object is known.
Ref = Annotated[str, BeforeValidator(_reference)]
Refs = Ref | list[Ref]
Coordinate = Annotated[float, bounded(low=-MAX_COORDINATE_M, high=MAX_COORDINATE_M)]


class Vec(Schema):
    x: Coordinate
    y: Coordinate
    z: Coordinate

    def as_dict(self) -> dict[str, float]:
        return layout.vec(self.x, self.y, self.z)


@dataclass(frozen=True)
class Needs:
    """A state key's metadata in ObjectState: the capability (an AI2-THOR flag) an object needs
    to be given that state."""

    capability: str


class ObjectState(Schema):
    """The state a scene (or a marker registry) may set per object, as AI2-THOR records it, with
    the capability each key needs (`temperature`: any object)."""

    isOpen: Annotated[bool, Needs("openable")] = False
    openness: Annotated[float, bounded(low=0.0, high=1.0), Needs("openable")] = 0.0
    isToggled: Annotated[bool, Needs("toggleable")] = False
    isDirty: Annotated[bool, Needs("dirtyable")] = False
    isFilledWithLiquid: Annotated[bool, Needs("canFillWithLiquid")] = False
    fillLiquid: Annotated[Literal["water", "coffee", "wine"] | None, Needs("canFillWithLiquid")] = None
    isCooked: Annotated[bool, Needs("cookable")] = False
    isSliced: Annotated[bool, Needs("sliceable")] = False
    isBroken: Annotated[bool, Needs("breakable")] = False
    isUsedUp: Annotated[bool, Needs("canBeUsedUp")] = False
    temperature: Literal["Hot", "Cold", "RoomTemp"] = "RoomTemp"

    def given(self) -> dict[str, Any]:
        """The keys the file set, with their values."""
        return {name: getattr(self, name) for name in type(self).model_fields if name in self.model_fields_set}

    @classmethod
    def needs(cls, name: str) -> str | None:
        """The capability state key `name` needs; None: any object may have it."""
        return next((m.capability for m in cls.model_fields[name].metadata if isinstance(m, Needs)), None)


class ObjectDoc(Schema):
    type: str
    id: str | None = None  # default '<Type>|<n>'
    at: Refs | None = None  # a list: the places a seeded world may start it in
    preferred: Refs | None = None
    state: ObjectState | None = None
    capacity: Annotated[int, bounded(low=0, high=MAX_CAPACITY, integer=True)] | None = None
    position: Vec | None = None
    name: PlainText | None = None


class SubtaskDoc(Schema):
    name: str
    instruction: str = ""
    places: Refs


class AgentDoc(Schema):
    position: Vec | None = None


class _TaskDoc(Schema):
    """What both kinds of scene file hold."""

    name: str | None = None  # default: the file's stem
    description: str | None = None
    task: str
    context: list[str] | None = None
    subtasks: list[SubtaskDoc] | None = None
    closable: list[Ref] | None = None
    assertions: int | None = None  # when given, must equal preferred places + closable


class SceneDoc(_TaskDoc):
    """A scene written object by object."""

    location: str
    objects: list[ObjectDoc]
    selection_context: list[str] | None = None
    types: TypesDoc | None = None
    agent: AgentDoc | None = None
    slice_requires_knife: bool = False


class TaskObjectDoc(Schema):
    object: Ref
    at: Ref | None = None
    preferred: Refs


class FloorplanSceneDoc(_TaskDoc):
    """A task set in an iTHOR FloorPlan (or a recording of one's own)."""

    floorplan: str
    task_objects: list[TaskObjectDoc]
    location: str | None = None  # default: the FloorPlan's room


def _load_yaml_scene(path: Path) -> Scene:
    data = load_yaml(path)
    if isinstance(data, Mapping) and "floorplan" in data:
        return floorplan_scene_from_dict(data, source=str(path), default_name=path.stem)
    return scene_from_dict(data, source=str(path), default_name=path.stem)


def floorplan_scene_from_dict(data: Any, *, source: str = "<scene>", default_name: str = "scene") -> Scene:
    """A task set in an iTHOR FloorPlan: its recorded objects, the task objects moved to where
    they start, the user's wanted places and the closable containers."""
    from task_learning.world.floorplans import canonical, floorplan_source

    file = source
    doc = validate(FloorplanSceneDoc, data, file=file)
    floorplan = doc.floorplan
    recording = _recording_spec(floorplan, file)
    if recording is None and canonical(floorplan) is None:
        raise ConfigError(file, "floorplan", f"expected an iTHOR scene name like 'FloorPlan1' or recorded "
                          f"metadata ('file.json#key'), got {floorplan!r}")
    try:
        recorded = load_scene(recording or floorplan_source(floorplan))
    except ConfigError as exc:
        raise ConfigError(file, "floorplan", f"{exc.file}: {exc.key + ': ' if exc.key else ''}{exc.message}"
                          if recording else exc.message) from None
    if recording is not None:
        floorplan = recorded.name
    records = recorded.objects
    resolver = _SceneRefs(records, recorded.types, file)
    if not doc.task_objects:
        raise ConfigError(file, "task_objects", "a task needs at least one object to put away")
    preferences: dict[str, list[str]] = {}
    start_moves: dict[str, str] = {}
    for index, entry in enumerate(doc.task_objects):
        key = join_key("task_objects", index)
        oid = resolver.resolve(entry.object, join_key(key, "object"))
        if oid in preferences:
            raise ConfigError(file, join_key(key, "object"), f"{oid} is listed twice")
        if not resolver.by_id[oid].get("pickupable"):
            raise ConfigError(file, join_key(key, "object"), f"{oid} cannot be picked up")
        if entry.at is not None:
            place = resolver.resolve(entry.at, join_key(key, "at"))
            if place == oid or not resolver.by_id[place]["receptacle"]:
                raise ConfigError(file, join_key(key, "at"), f"{place} is not a receptacle {oid} can be in")
            start_moves[oid] = place
        preferences[oid] = _destinations(entry.preferred, resolver, key)
    by_id = resolver.by_id
    for oid, place in start_moves.items():
        for parent in by_id[oid]["parentReceptacles"]:
            if oid in by_id[parent]["receptacleObjectIds"]:
                by_id[parent]["receptacleObjectIds"].remove(oid)
        by_id[oid]["parentReceptacles"] = [place]
        by_id[place]["receptacleObjectIds"].append(oid)
        _move_with_contents(by_id, oid, layout.slot_position(by_id[place], len(by_id[place]["receptacleObjectIds"]) - 1))
    closable = _closable(doc, resolver)
    return Scene(
        name=doc.name or default_name, task=doc.task, location=doc.location or recorded.location, objects=records,
        task_objects=[r["objectId"] for r in records if r["objectId"] in preferences],
        subtasks=_subtasks(doc, resolver), preferences=preferences, closable=closable,
        context=list(doc.context or []), assertions=_assertions(doc, preferences, closable, file), source=file,
        agent=recorded.agent, capacities=recorded.capacities, types=recorded.types,
        floorplan=canonical(floorplan) or floorplan, start_moves=start_moves, recording=recorded.recording,
    )


def _recording_spec(value: str, file: str) -> str | None:
    """A floor plan scene's `floorplan` naming recorded metadata ('rooms.json#205', relative to
    the scene file) as load_scene takes it; None when it is a FloorPlan name."""
    base = value.rsplit("#", 1)[0]
    if not base.endswith((".json", ".json.gz")):
        return None
    path = Path(base)
    if not path.is_absolute() and file and not file.startswith("<"):
        path = Path(file).parent / path
    return str(path) + value[len(base):]


def _destinations(pref: str | list[str], resolver: "_SceneRefs", key: str) -> list[str]:
    """The receptacles of an entry's `preferred` (one reference or a list): the goal's places,
    validated alike in recorded floor plans and in written scenes."""
    refs = pref if isinstance(pref, list) else [pref]
    if not refs:
        raise ConfigError(resolver.file, join_key(key, "preferred"), "empty list of destinations")
    dests = []
    for i, ref in enumerate(refs):
        where = join_key(key, "preferred") + (f"[{i}]" if isinstance(pref, list) else "")
        dest = resolver.resolve(ref, where)
        if not resolver.by_id[dest]["receptacle"]:
            raise ConfigError(resolver.file, where, f"{dest} is not a receptacle")
        dests.append(dest)
    return dests


def _closable(doc: _TaskDoc, resolver: "_SceneRefs") -> list[str]:
    closable = []
    for i, ref in enumerate(doc.closable or []):
        oid = resolver.resolve(ref, join_key("closable", i))
        if not resolver.by_id[oid]["openable"]:
            raise ConfigError(resolver.file, join_key("closable", i), f"{oid} is not openable")
        closable.append(oid)
    return closable


def _subtasks(doc: _TaskDoc, resolver: "_SceneRefs") -> list[Subtask]:
    subtasks = []
    for i, entry in enumerate(doc.subtasks or []):
        key = join_key(join_key("subtasks", i), "places")
        places = entry.places if isinstance(entry.places, list) else [entry.places]
        subtasks.append(Subtask(name=entry.name, instruction=entry.instruction,
                                places=[resolver.resolve(ref, join_key(key, j)) for j, ref in enumerate(places)]))
    return subtasks


def _assertions(doc: _TaskDoc, preferences: Mapping[str, list[str]], closable: list[str], file: str) -> int:
    """The completion measure's total; a file that states it must state it right."""
    total = len(preferences) + len(closable)
    if doc.assertions is not None and doc.assertions != total:
        raise ConfigError(file, "assertions", f"states {doc.assertions} but the scene defines {total} "
                          f"({len(preferences)} preferred places + {len(closable)} closable)")
    return total


def _move_with_contents(by_id: Mapping[str, dict[str, Any]], oid: str, position: dict[str, float]) -> None:
    by_id[oid]["position"] = dict(position)
    for slot, child in enumerate(by_id[oid]["receptacleObjectIds"]):
        _move_with_contents(by_id, child, layout.slot_position(by_id[oid], slot))


def scene_from_dict(data: Any, *, source: str = "<scene>", default_name: str = "scene") -> Scene:
    """A scene from its parsed YAML form (what `config/scenes/*.yaml` holds); errors name
    `source` and the key."""
    file = source
    doc = validate(SceneDoc, data, file=file)
    types = load_object_types()
    types.update(object_types(doc.types))
    if not doc.objects:
        raise ConfigError(file, "objects", "a scene needs at least one object")
    records = _object_records(doc.objects, types, file)
    resolver = _SceneRefs(records, types, file)
    placement_options: dict[str, list[str]] = {}
    preferences: dict[str, list[str]] = {}
    capacities: dict[str, int] = {}
    explicit_positions: dict[str, dict[str, float]] = {}
    for index, (entry, record) in enumerate(zip(doc.objects, records)):
        key = join_key("objects", index)
        oid = record["objectId"]
        if entry.at is not None:
            places = _start_places(entry.at, oid, resolver, join_key(key, "at"))
            record["parentReceptacles"] = [places[0]]
            if len(places) > 1:
                placement_options[oid] = places
        if entry.preferred is not None:
            preferences[oid] = _destinations(entry.preferred, resolver, key)
        capacity = entry.capacity if "capacity" in entry.model_fields_set else types[record["objectType"]].capacity
        if capacity is not None:
            if not record["receptacle"]:
                raise ConfigError(file, join_key(key, "capacity"), f"{oid} is not a receptacle")
            capacities[oid] = capacity
        if entry.position is not None:
            explicit_positions[oid] = entry.position.as_dict()
    _check_cycles(records, file)
    for record in records:
        for parent in record["parentReceptacles"]:
            resolver.by_id[parent]["receptacleObjectIds"].append(record["objectId"])
    for record in records:
        limit = capacities.get(record["objectId"])
        if limit is not None and len(record["receptacleObjectIds"]) > limit:
            raise ConfigError(file, "objects", f"{record['objectId']} holds {len(record['receptacleObjectIds'])} "
                              f"objects but its capacity is {limit}")
    place_objects(records, explicit_positions)
    closable = _closable(doc, resolver)
    agent = {"position": dict(DEFAULT_AGENT_POSITION)}
    if doc.agent is not None and doc.agent.position is not None:
        agent["position"] = doc.agent.position.as_dict()
    return Scene(
        name=doc.name or default_name, task=doc.task, location=doc.location, objects=records,
        task_objects=[r["objectId"] for r in records if r["objectId"] in preferences],
        subtasks=_subtasks(doc, resolver), preferences=preferences, closable=closable,
        context=list(doc.context or []), selection_context=list(doc.selection_context or []),
        assertions=_assertions(doc, preferences, closable, file), source=file, agent=agent,
        placement_options=placement_options, capacities=capacities, types=types,
        slice_requires_knife=doc.slice_requires_knife,
    )


def _object_records(entries: list[ObjectDoc], types: Mapping[str, ObjectType], file: str) -> list[dict[str, Any]]:
    """An AI2-THOR record per entry, with its id (given, or '<Type>|<n>') and its state."""
    records: list[dict[str, Any]] = []
    counters: dict[str, int] = {}
    for index, entry in enumerate(entries):
        key = join_key("objects", index)
        if entry.type not in types:
            hint = difflib.get_close_matches(entry.type, sorted(types), n=1)
            suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise ConfigError(file, join_key(key, "type"), f"unknown object type '{entry.type}'{suffix}; "
                              "declare it under 'types:' or in config/scenes/object_types.yaml")
        counters[entry.type] = counters.get(entry.type, 0) + 1
        object_id = entry.id or f"{entry.type}|{counters[entry.type]}"
        if not _ID_PATTERN.match(object_id) or has_control_characters(object_id):
            raise ConfigError(file, join_key(key, "id"), f"ids look like '<Type>|<n>', got {object_id!r}")
        if any(r["objectId"] == object_id for r in records):
            raise ConfigError(file, join_key(key, "id"), f"duplicate object id {object_id!r}")
        record = make_object_record(types[entry.type], object_id, name=entry.name or "")
        if entry.state is not None:
            _apply_state(record, types[entry.type], entry.state, file=file, key=join_key(key, "state"))
        records.append(record)
    return records


def _start_places(at: str | list[str], oid: str, resolver: "_SceneRefs", key: str) -> list[str]:
    """The receptacles an object may start in (the first: where the scene file puts it)."""
    refs = at if isinstance(at, list) else [at]
    if not refs:
        raise ConfigError(resolver.file, key, "empty list of places")
    places = []
    for i, ref in enumerate(refs):
        where = key + (f"[{i}]" if isinstance(at, list) else "")
        place = resolver.resolve(ref, where)
        if place == oid:
            raise ConfigError(resolver.file, where, f"{oid} cannot be inside itself")
        if not resolver.by_id[place]["receptacle"]:
            raise ConfigError(resolver.file, where, f"{place} is not a receptacle")
        places.append(place)
    return places


def place_objects(records: list[dict[str, Any]], explicit: Mapping[str, dict[str, float]] | None = None) -> None:
    """Give every object a position: furniture on a ring, contents in slots of their receptacle."""
    explicit = explicit or {}
    by_id = {r["objectId"]: r for r in records}
    roots = [r for r in records if not r["parentReceptacles"]]
    for record, position in zip([r for r in roots if r["objectId"] not in explicit],
                                layout.ring_positions(sum(1 for r in roots if r["objectId"] not in explicit))):
        record["position"] = position
    for oid, position in explicit.items():
        by_id[oid]["position"] = position

    def place_children(parent: dict[str, Any]) -> None:
        for slot, child_id in enumerate(parent["receptacleObjectIds"]):
            child = by_id[child_id]
            if child_id not in explicit:
                child["position"] = layout.slot_position(parent, slot)
            place_children(child)

    for root in roots:
        place_children(root)


def _check_cycles(records: list[dict[str, Any]], file: str) -> None:
    by_id = {r["objectId"]: r for r in records}
    for record in records:
        seen = {record["objectId"]}
        current = record
        while current["parentReceptacles"]:
            parent = current["parentReceptacles"][0]
            if parent in seen:
                raise ConfigError(file, "objects", f"containment cycle through {record['objectId']} and {parent}")
            seen.add(parent)
            if len(seen) > MAX_CONTAINMENT_DEPTH + 1:
                raise ConfigError(file, "objects", f"{record['objectId']} is contained more than "
                                  f"{MAX_CONTAINMENT_DEPTH} levels deep")
            current = by_id[parent]


def _apply_state(record: dict[str, Any], object_type: ObjectType, state: ObjectState, *, file: str, key: str) -> None:
    given = state.given()
    for name, value in given.items():
        needs = ObjectState.needs(name)
        if needs is not None and not object_type.flag(needs):
            raise ConfigError(file, join_key(key, name), f"{record['objectId']} is not {needs}")
        record[name] = value
    if "isOpen" in given and "openness" not in given:
        record["openness"] = 1.0 if record["isOpen"] else 0.0
    if "openness" in given:
        record["isOpen"] = float(record["openness"]) > 0.0
    if record.get("fillLiquid") and "isFilledWithLiquid" not in given:
        record["isFilledWithLiquid"] = True
    if record.get("isFilledWithLiquid") and not record.get("fillLiquid"):
        record["fillLiquid"] = "water"


class _SceneRefs:
    """Resolves a reference in a scene file: an object id, or a type/spoken name naming exactly
    one object of the scene ('DishRack', 'dish rack', 'table')."""

    def __init__(self, records: list[dict[str, Any]], types: Mapping[str, ObjectType], file: str) -> None:
        self.by_id = {r["objectId"]: r for r in records}
        self.file = file
        self.by_name: dict[str, list[str]] = {}
        for record in records:
            names = types[record["objectType"]].names() if record["objectType"] in types else {
                normalize_name(record["objectType"])}
            for name in names:
                self.by_name.setdefault(name, []).append(record["objectId"])

    def resolve(self, ref: str, key: str) -> str:
        if ref in self.by_id:
            return ref
        matches = self.by_name.get(normalize_name(ref), [])
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ConfigError(self.file, key, f"'{ref}' names {len(matches)} objects ({', '.join(matches)}); use an id")
        hint = difflib.get_close_matches(ref, list(self.by_id) + sorted(self.by_name), n=1)
        suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise ConfigError(self.file, key, f"no object '{ref}' in the scene{suffix}")
