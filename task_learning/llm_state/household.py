"""The open-world household of the LLM-State paper's experiments, as a deterministic symbolic world.

Rooms, light switches, closed containers that hide their contents until opened, appliances
(fridge, microwave, toaster), a robot with `hands` hands (two, as in the paper), and objects the
robot sees only in its own room. It takes the paper's nine primitives (`move(o)`, `pickup(o)`,
`placein(o1, o2)`, `placeon(o1, o2)`, `open(o)`, `close(o)`, `switchon(o)`, `switchoff(o)`,
`wait()`) and answers each with a binary success flag, as VirtualHome's API does in the paper.
The reason for a failure is kept for logs and tests; the planner never sees it.

Rules (the preconditions the prompts' "Important!" block states, plus the hidden ones the
paper's failures come from):
* move(x): x is a room, or an object the robot has seen; the robot goes to x's room and is then
  close to x's piece of furniture and everything visible on or in it (the appendix's
  "You are closed to"). Moving to a room leaves it close to nothing.
* acting on an object needs it close (held objects are always close) and visible;
* pickup needs a free hand and a graspable, pickable object; open/close/switchon/switchoff need a
  free hand (two held items block them, as the prompt warns);
* placein needs an open container (or one that does not open, like a toaster) with room left:
  a toaster takes one slice (Fig. 4 of the paper), a microwave one item;
* switching on a toaster toasts what is in it, a microwave (closed) heats what is in it; both
  then turn off by themselves. Light switches start on, containers closed, appliances off.

This world is not the AI2-THOR-speaking `world/symbolic.py`: the paper's primitives, lower-case
VirtualHome names and several rooms do not fit a one-room AI2-THOR kitchen, so the grounding
stack does not run on it.
"""
from __future__ import annotations

import difflib
import functools
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import BeforeValidator, Field

from task_learning.errors import ConfigError, TaskLearningError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, bounded, invalid, load_model
from task_learning.llm_state.calls import PLAN_FUNCTIONS, Call

log = logging.getLogger(__name__)

DEFAULT_HANDS = 2
_DIGITS = re.compile(r"\d+$")


def class_of(name: str) -> str:
    """lightswitch2 -> lightswitch; kitchen1 -> kitchen."""
    return _DIGITS.sub("", name)


@dataclass(frozen=True)
class ObjectClass:
    name: str
    container: bool = False
    openable: bool = False
    surface: bool = False
    switchable: bool = False
    pickable: bool = False
    capacity: int = 0  # 0: no limit
    effect: str = ""  # attribute switching on gives to the contents (toasted, hot)
    needs_closed: bool = False
    starts_on: bool = False


@dataclass(frozen=True)
class MapSpec:
    name: str
    rooms: tuple[str, ...]
    start: str
    objects: tuple[tuple[str, str, str], ...]  # (name, relation ROOM|ON|IN, parent)
    heldout: bool = False  # written after the offline model: reported apart


@dataclass(frozen=True)
class TaskSpec:
    name: str
    goal: str
    level: str  # simple | hard
    cap: int
    check: tuple[Mapping[str, Any], ...]
    special: bool = False
    setup: Mapping[str, Any] = field(default_factory=dict)
    heldout: bool = False  # not in the paper, written after the offline model: reported apart


@dataclass(frozen=True)
class Household:
    """Everything households.yaml and tasks.yaml define."""

    classes: Mapping[str, ObjectClass]
    maps: Mapping[str, MapSpec]
    tasks: Mapping[str, TaskSpec]

    @property
    def paper_maps(self) -> list[str]:
        return [n for n, m in self.maps.items() if not m.heldout]

    @property
    def paper_tasks(self) -> list[str]:
        return [n for n, t in self.tasks.items() if not t.heldout]

    def map(self, name: str) -> MapSpec:
        if name not in self.maps:
            raise TaskLearningError(f"unknown map {name!r} (known: {', '.join(self.maps)})")
        return self.maps[name]

    def task(self, name: str) -> TaskSpec:
        if name not in self.tasks:
            raise TaskLearningError(f"unknown task {name!r} (known: {', '.join(self.tasks)})")
        return self.tasks[name]


# ----------------------------------------------------------------------------- loading
MAX_CAP = 100_000  # steps of one episode
Count = Annotated[int, bounded(low=1, high=MAX_CAP, integer=True)]


class ClassDoc(Schema):
    container: bool = False
    openable: bool = False
    surface: bool = False
    switchable: bool = False
    pickable: bool = False
    capacity: Annotated[int, bounded(low=0, high=1000, integer=True)] = 0
    effect: str = ""
    needs_closed: bool = False
    starts_on: bool = False


class PlacedDoc(Schema):
    """An object of a map, in a room, on or in an object defined above it."""

    name: str
    room: str | None = None
    on: str | None = None
    in_: str | None = Field(None, alias="in")


class MapDoc(Schema):
    rooms: list[str]
    start: str
    objects: list[PlacedDoc]
    heldout: bool = False


class HouseholdsDoc(Schema):
    """households.yaml."""

    classes: dict[str, ClassDoc]
    maps: dict[str, MapDoc]


def _not_yaml_bool(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid('expected a list of strings (quote "on" and "off": YAML reads them as true and false)')
    return value


class CheckDoc(Schema):
    """One condition of a task's goal check (config/llm_state/tasks.yaml says what each key means)."""

    class_: str | None = Field(None, alias="class")
    from_on: str | None = None
    state: Annotated[list[str], BeforeValidator(_not_yaml_bool)] = Field(default_factory=list)
    on: str | None = None
    in_: str | None = Field(None, alias="in")
    not_on: str | None = None
    room: str | None = None
    not_held: bool = False
    count: Count | Literal["all"] = 1


class UngraspableDoc(Schema):
    count: Count
    class_: str | None = Field(None, alias="class")
    on: str | None = None


class SetupDoc(Schema):
    ungraspable: UngraspableDoc | None = None


class TaskDoc(Schema):
    goal: str
    level: Literal["simple", "hard"]
    cap: Count
    check: list[CheckDoc]
    special: bool = False
    setup: SetupDoc | None = None
    heldout: bool = False


class TasksDoc(Schema):
    """tasks.yaml."""

    tasks: dict[str, TaskDoc]


def _load_map(name: str, spec: MapDoc, classes: Mapping[str, ObjectClass], file: Path) -> MapSpec:
    key = join_key("maps", name)
    rooms = tuple(spec.rooms)
    if not rooms:
        raise ConfigError(file, join_key(key, "rooms"), "needs at least one room")
    if spec.start not in rooms:
        raise ConfigError(file, join_key(key, "start"), f"{spec.start!r} is not one of the rooms")
    objects: list[tuple[str, str, str]] = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(spec.objects):
        okey = join_key(join_key(key, "objects"), i)
        obj = entry.name
        where = [(k, v) for k, v in (("room", entry.room), ("on", entry.on), ("in", entry.in_)) if v is not None]
        if len(where) != 1:
            raise ConfigError(file, okey, "needs exactly one of room, on, in")
        relation, parent = where[0]
        if class_of(obj) not in classes:
            raise ConfigError(file, join_key(okey, "name"), f"unknown class {class_of(obj)!r}")
        if obj in seen or obj in rooms:
            raise ConfigError(file, join_key(okey, "name"), f"{obj!r} is defined twice")
        if relation == "room" and parent not in rooms:
            raise ConfigError(file, join_key(okey, "room"), f"{parent!r} is not one of the rooms")
        if relation != "room":
            if parent not in seen:
                raise ConfigError(file, join_key(okey, relation), f"{parent!r} is not defined above")
            cls = classes[class_of(parent)]
            if relation == "in" and not cls.container:
                raise ConfigError(file, join_key(okey, "in"), f"{parent!r} is not a container")
            if relation == "on" and not cls.surface:
                raise ConfigError(file, join_key(okey, "on"), f"{parent!r} is not a surface")
        seen[obj] = parent
        objects.append((obj, relation.upper(), parent))
    return MapSpec(name=name, rooms=rooms, start=spec.start, objects=tuple(objects), heldout=spec.heldout)


def _known(value: str, known: Any, *, what: str, file: Path, key: str) -> None:
    """`value` is one of `known` (classes, room classes, states); else a ConfigError naming it."""
    if value not in known:
        hint = difflib.get_close_matches(value, sorted(known), n=1)
        raise ConfigError(file, key, f"unknown {what} {value!r}" + (f" (did you mean '{hint[0]}'?)" if hint
                                                                   else f" (known: {', '.join(sorted(known))})"))


def _load_task(name: str, spec: TaskDoc, file: Path, classes: Mapping[str, ObjectClass], rooms: set[str]) -> TaskSpec:
    """A task of tasks.yaml; every class, room and state its checks name exists in households.yaml
    (a misspelt class would make a goal that never holds, or always holds with count all)."""
    key = join_key("tasks", name)
    states = {"on", "off", "open", "closed"} | {c.effect for c in classes.values() if c.effect}
    if not spec.check:
        raise ConfigError(file, join_key(key, "check"), "no goal check")
    for i, cond in enumerate(spec.check):
        ckey = join_key(join_key(key, "check"), i)
        if (cond.class_ is None) == (cond.from_on is None):
            raise ConfigError(file, ckey, "needs exactly one of class, from_on")
        for field_name, value in (("class", cond.class_), ("from_on", cond.from_on), ("on", cond.on),
                                  ("in", cond.in_), ("not_on", cond.not_on)):
            if value is not None:
                _known(value, classes, what="class", file=file, key=join_key(ckey, field_name))
        if cond.room is not None:
            _known(cond.room, rooms, what="room", file=file, key=join_key(ckey, "room"))
        for j, state in enumerate(cond.state):
            _known(state, states, what="state", file=file, key=join_key(join_key(ckey, "state"), j))
    ungraspable = spec.setup.ungraspable if spec.setup else None
    if ungraspable is not None:
        for field_name, value in (("class", ungraspable.class_), ("on", ungraspable.on)):
            if value is not None:
                _known(value, classes, what="class", file=file, key=join_key(join_key(key, "setup.ungraspable"),
                                                                           field_name))
    return TaskSpec(name=name, goal=spec.goal, level=spec.level, cap=spec.cap,
                    check=tuple(c.model_dump(by_alias=True, exclude_unset=True) for c in spec.check),
                    special=spec.special,
                    setup=spec.setup.model_dump(by_alias=True, exclude_unset=True) if spec.setup else {},
                    heldout=spec.heldout)


def load_household(folder: str | Path | None = None) -> Household:
    """Read and validate households.yaml and tasks.yaml (config/llm_state/ by default)."""
    base = Path(folder) if folder is not None else config_path("llm_state")
    return _load_household(str(base))


@functools.lru_cache(maxsize=4)
def _load_household(base: str) -> Household:
    house_file = Path(base) / "households.yaml"
    house = load_model(HouseholdsDoc, house_file)
    classes = {name: ObjectClass(name=name, **spec.model_dump()) for name, spec in house.classes.items()}
    maps = {name: _load_map(name, spec, classes, house_file) for name, spec in house.maps.items()}
    task_file = Path(base) / "tasks.yaml"
    rooms = {class_of(r) for m in maps.values() for r in m.rooms}
    tasks = {name: _load_task(name, spec, task_file, classes, rooms)
             for name, spec in load_model(TasksDoc, task_file).tasks.items()}
    return Household(classes=classes, maps=maps, tasks=tasks)


# ----------------------------------------------------------------------------- observation
@dataclass(frozen=True)
class Observation:
    """O_t as the appendix prints it: cumulative object, container and surface lists (every
    object seen so far, where it was last seen), the rooms, what is held, what is close, the room."""

    objects: tuple[tuple[str, str, str], ...]  # (name, IN|ON, parent) as last seen
    containers: tuple[str, ...]
    surfaces: tuple[str, ...]
    rooms: tuple[str, ...]
    holding: tuple[str, ...]
    close_to: tuple[str, ...]
    room: str

    @property
    def known(self) -> frozenset[str]:
        """Every name the robot may talk about: seen objects and rooms."""
        return frozenset([o[0] for o in self.objects] + list(self.rooms) + list(self.holding))

    def where(self, name: str) -> tuple[str, str] | None:
        for obj, rel, parent in self.objects:
            if obj == name:
                return rel, parent
        return None

    def render(self) -> str:
        def listing(items: list[str]) -> str:
            return "[" + ", ".join(repr(i) for i in items) + "]"

        placed = {o[0]: f"{o[0]} {o[1]} {o[2]}" for o in self.objects}
        return "\n".join([
            "Object List: " + listing(list(placed.values())),
            "Container List: " + listing([placed.get(c, c) for c in self.containers]),
            "Surface List: " + listing([placed.get(s, s) for s in self.surfaces]),
            "Room List: " + listing(list(self.rooms)),
            "Current Holding: " + listing(list(self.holding)),
            "You are closed to: " + listing(list(self.close_to)),
            f"Current Room: {self.room}",
        ])

    def to_dict(self) -> dict[str, Any]:
        return {"objects": [list(o) for o in self.objects], "containers": list(self.containers),
                "surfaces": list(self.surfaces), "rooms": list(self.rooms),
                "holding": list(self.holding), "close_to": list(self.close_to), "room": self.room}


# ----------------------------------------------------------------------------- the world
@dataclass
class _Thing:
    name: str
    cls: ObjectClass
    relation: str  # ROOM | ON | IN | HELD
    parent: str  # room name, object name, or "" when held
    is_open: bool = False
    is_on: bool = False
    graspable: bool = True
    attributes: set[str] = field(default_factory=set)  # toasted, hot


@dataclass(frozen=True)
class StepResult:
    success: bool
    reason: str = ""  # for logs and tests only: the planner sees the flag alone


class HouseholdWorld:
    """One episode on one map for one task. Deterministic: no randomness anywhere."""

    def __init__(self, household: Household, map_name: str, task: TaskSpec | None = None,
                 hands: int = DEFAULT_HANDS) -> None:
        if hands < 1:
            raise TaskLearningError(f"hands must be >= 1, got {hands}")
        spec = household.map(map_name)
        self.map_name = map_name
        self.rooms = spec.rooms
        self.hands = hands
        self.room = spec.start
        self.anchor = ""  # the furniture the robot stands at ("" = middle of the room)
        self.held: list[str] = []
        self.things: dict[str, _Thing] = {}
        for name, relation, parent in spec.objects:
            cls = household.classes[class_of(name)]
            self.things[name] = _Thing(name, cls, relation, parent, is_on=cls.starts_on)
        self.initial_on = {n for n, t in self.things.items() if t.relation == "ON"}
        self.initial_parent = {n: t.parent for n, t in self.things.items()}
        self.seen: dict[str, tuple[str, str]] = {}
        if task is not None:
            self._setup(task)
        self._look()

    def _setup(self, task: TaskSpec) -> None:
        spec = task.setup.get("ungraspable")
        if not spec:
            return
        names = sorted(n for n, t in self.things.items() if t.cls.pickable
                       and ("class" not in spec or class_of(n) == spec["class"])
                       and ("on" not in spec or class_of(t.parent) == spec["on"]))
        for name in names[: int(spec["count"])]:
            self.things[name].graspable = False

    # ------------------------------------------------------------------ geometry
    def room_of(self, name: str) -> str:
        if name in self.rooms:
            return name
        thing = self.things[name]
        if thing.relation == "HELD":
            return self.room
        if thing.relation == "ROOM":
            return thing.parent
        return self.room_of(thing.parent)

    def _top(self, name: str) -> str:
        """The piece of furniture (resting in a room) that `name` is on or in."""
        thing = self.things[name]
        while thing.relation in ("ON", "IN"):
            thing = self.things[thing.parent]
        return thing.name

    def visible(self, name: str) -> bool:
        thing = self.things.get(name)
        if thing is None:
            return False
        if thing.relation == "HELD":
            return True
        if self.room_of(name) != self.room:
            return False
        while thing.relation in ("ON", "IN"):
            parent = self.things[thing.parent]
            if thing.relation == "IN" and parent.cls.openable and not parent.is_open:
                return False
            thing = parent
        return True

    def close_to(self) -> list[str]:
        if not self.anchor:
            return []
        return [n for n in self.things if self.things[n].relation != "HELD" and self.visible(n)
                and self._top(n) == self.anchor]

    def _look(self) -> None:
        for name, thing in self.things.items():
            if thing.relation != "HELD" and self.visible(name):
                self.seen[name] = ("IN" if thing.relation in ("ROOM", "IN") else "ON", thing.parent)

    def observe(self) -> Observation:
        objects = tuple((n, rel, parent) for n, (rel, parent) in self.seen.items())
        return Observation(
            objects=objects,
            containers=tuple(n for n in self.seen if self.things[n].cls.container),
            surfaces=tuple(n for n in self.seen if self.things[n].cls.surface),
            rooms=self.rooms, holding=tuple(self.held), close_to=tuple(self.close_to()), room=self.room)

    # ------------------------------------------------------------------ actions
    def execute(self, call: Call) -> StepResult:
        """Run one primitive; a failed one changes nothing."""
        if call.name not in PLAN_FUNCTIONS or len(call.args) != PLAN_FUNCTIONS[call.name]:
            return StepResult(False, f"not a primitive: {call.render()}")
        result: StepResult = getattr(self, "_do_" + call.name)(*call.args)
        if result.success:
            self._look()
        return result

    def _reachable(self, name: str) -> StepResult | None:
        if name not in self.things:
            return StepResult(False, f"no object {name!r} here")
        if name in self.held:
            return None
        if not self.visible(name):
            return StepResult(False, f"{name} is not visible")
        if name not in self.close_to():
            return StepResult(False, f"not close to {name}")
        return None

    def _free_hand(self) -> bool:
        return len(self.held) < self.hands

    def _do_move(self, target: str) -> StepResult:
        if target in self.rooms:
            self.room, self.anchor = target, ""
            return StepResult(True)
        if target not in self.things or target not in self.seen:
            return StepResult(False, f"unknown object {target!r}")
        if target in self.held:
            return StepResult(False, f"{target} is in hand")
        self.room = self.room_of(target)
        self.anchor = self._top(target)
        return StepResult(True)

    def _do_pickup(self, name: str) -> StepResult:
        blocked = self._reachable(name)
        if blocked:
            return blocked
        thing = self.things[name]
        if name in self.held:
            return StepResult(False, f"{name} is already held")
        if not thing.cls.pickable or not thing.graspable:
            return StepResult(False, f"{name} cannot be grasped")
        if not self._free_hand():
            return StepResult(False, "both hands are full")
        if any(t.parent == name and t.relation in ("ON", "IN") for t in self.things.values()):
            return StepResult(False, f"something is on or in {name}")
        thing.relation, thing.parent = "HELD", ""
        self.held.append(name)
        return StepResult(True)

    def _place(self, name: str, target: str, relation: str) -> StepResult:
        if name not in self.held:
            return StepResult(False, f"{name} is not held")
        blocked = self._reachable(target)
        if blocked:
            return blocked
        dest = self.things[target]
        if relation == "IN":
            if not dest.cls.container:
                return StepResult(False, f"{target} is not a container")
            if dest.cls.openable and not dest.is_open:
                return StepResult(False, f"{target} is closed")
            inside = sum(1 for t in self.things.values() if t.relation == "IN" and t.parent == target)
            if dest.cls.capacity and inside >= dest.cls.capacity:
                return StepResult(False, f"{target} is full")
        elif not dest.cls.surface:
            return StepResult(False, f"{target} is not a surface")
        thing = self.things[name]
        thing.relation, thing.parent = relation, target
        self.held.remove(name)
        return StepResult(True)

    def _do_placein(self, name: str, target: str) -> StepResult:
        return self._place(name, target, "IN")

    def _do_placeon(self, name: str, target: str) -> StepResult:
        return self._place(name, target, "ON")

    def _toggle_check(self, name: str) -> StepResult | None:
        blocked = self._reachable(name)
        if blocked:
            return blocked
        if not self._free_hand():
            return StepResult(False, "both hands are full")
        return None

    def _do_open(self, name: str) -> StepResult:
        blocked = self._toggle_check(name)
        if blocked:
            return blocked
        thing = self.things[name]
        if not thing.cls.openable:
            return StepResult(False, f"{name} cannot be opened")
        if thing.is_open:
            return StepResult(False, f"{name} is already open")
        thing.is_open = True
        return StepResult(True)

    def _do_close(self, name: str) -> StepResult:
        blocked = self._toggle_check(name)
        if blocked:
            return blocked
        thing = self.things[name]
        if not thing.cls.openable or not thing.is_open:
            return StepResult(False, f"{name} is not open")
        thing.is_open = False
        return StepResult(True)

    def _do_switchon(self, name: str) -> StepResult:
        blocked = self._toggle_check(name)
        if blocked:
            return blocked
        thing = self.things[name]
        if not thing.cls.switchable:
            return StepResult(False, f"{name} cannot be switched")
        if thing.is_on:
            return StepResult(False, f"{name} is already on")
        if thing.cls.needs_closed and thing.is_open:
            return StepResult(False, f"{name} must be closed to switch on")
        if thing.cls.effect:
            for other in self.things.values():
                if other.relation == "IN" and other.parent == name:
                    other.attributes.add(thing.cls.effect)
            return StepResult(True)  # done at once: the appliance turns itself off
        thing.is_on = True
        return StepResult(True)

    def _do_switchoff(self, name: str) -> StepResult:
        blocked = self._toggle_check(name)
        if blocked:
            return blocked
        thing = self.things[name]
        if not thing.cls.switchable or not thing.is_on:
            return StepResult(False, f"{name} is not on")
        thing.is_on = False
        return StepResult(True)

    def _do_wait(self) -> StepResult:
        return StepResult(True)

    # ------------------------------------------------------------------ goal checks
    def _facts(self, name: str) -> set[str]:
        thing = self.things[name]
        facts = set(thing.attributes)
        if thing.cls.switchable and not thing.cls.effect:
            facts.add("on" if thing.is_on else "off")
        if thing.cls.openable:
            facts.add("open" if thing.is_open else "closed")
        return facts

    def _satisfies(self, name: str, cond: Mapping[str, Any]) -> bool:
        thing = self.things[name]
        if any(s not in self._facts(name) for s in cond.get("state", [])):
            return False
        if "on" in cond and not (thing.relation == "ON" and class_of(thing.parent) == cond["on"]):
            return False
        if "in" in cond and not (thing.relation == "IN" and class_of(thing.parent) == cond["in"]):
            return False
        if "not_on" in cond and thing.relation == "ON" and class_of(thing.parent) == cond["not_on"]:
            return False
        if cond.get("not_held") and thing.relation == "HELD":
            return False
        return not ("room" in cond and class_of(self.room_of(name)) != cond["room"])

    def check(self, task: TaskSpec) -> bool:
        """Does the task's goal hold in the world's true state?"""
        for cond in task.check:
            if "from_on" in cond:
                pool = [n for n in self.things if n in self.initial_on and self.things[n].cls.pickable
                        and class_of(self.initial_parent[n]) == cond["from_on"]]
            else:
                pool = [n for n in self.things if class_of(n) == cond["class"]]
                if "room" in cond:
                    pool = [n for n in pool if class_of(self.room_of(n)) == cond["room"]]
            good = [n for n in pool if self._satisfies(n, cond)]
            need = len(pool) if cond.get("count", 1) == "all" else int(cond.get("count", 1))
            if not pool or len(good) < need:
                return False
        return True
