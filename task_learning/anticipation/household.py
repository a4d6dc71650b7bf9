"""The household of the task-anticipation paper's traces as a small symbolic world, with Base8's feasibility rules.

Places joined by `next_to` facts, objects on places or in containers (appliances and the bag),
appliances that open and switch on, and any number of actors ("human", "agent", "agent2") each at
a place holding up to two objects. Actions are the traces' `move/grab/put/open/close/switchon/
switchoff`. `check` applies the Action Feasibility Rules of the Base8 prompt and returns why an
action is not feasible (with the rule it breaks); the agents' actions are checked, the simulated
human's moves are not (the traces' human goes from kitchentable to a coffee table in one step).

Literals: on(object,place), in(object,container), switchedon(x), closed(x)."""
from __future__ import annotations

import copy
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, load_model

ACTIONS = ("move", "grab", "put", "open", "close", "switchon", "switchoff")
ARITY = {"move": 1, "grab": 1, "put": 2, "open": 1, "close": 1, "switchon": 1, "switchoff": 1}
PREDICATES = ("on", "in", "switchedon", "closed")
CARRY_LIMIT = 2  # the task-anticipation paper: at most two objects held
_LITERAL = re.compile(r"^\s*(\w+)\(([^()]*)\)\s*$")
_LITERALS = re.compile(r"\w+\([^()]*\)")

# Rule names as the Base8 prompt names them (the human's-objects rule has no name there).
MOVEMENT = "Movement Limitation(Critical)"
OBJECT_LOCATION = "Object Location"
CARRYING = "Carrying Limit"
SAFETY = "Appliance Safety"
HUMAN_OBJECTS = "Human's Objects"
ACTIONS_RULE = "Possible actions"


@dataclass(frozen=True)
class Action:
    name: str
    args: tuple[str, ...]  # without the actor

    def text(self, actor: str = "agent") -> str:
        return f"{self.name}({','.join((actor,) + self.args)})"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Literal:
    predicate: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.predicate}({','.join(self.args)})"


def parse_literal(text: str) -> Literal:
    m = _LITERAL.match(text)
    if not m or m.group(1) not in PREDICATES:
        raise ValueError(f"{text!r} is not a literal ({', '.join(p + '(...)' for p in PREDICATES)})")
    args = tuple(a.strip() for a in m.group(2).split(",") if a.strip())
    if len(args) != (2 if m.group(1) in ("on", "in") else 1):
        raise ValueError(f"{text!r}: wrong number of arguments")
    return Literal(m.group(1), args)


@dataclass(frozen=True)
class Container:
    name: str
    at: str
    opens: bool
    switches: bool
    holds_objects: bool = True
    switch_needs_closed: bool = False


@dataclass(frozen=True)
class Infeasible:
    rule: str
    why: str  # completes "was not feasible since ..."


@dataclass
class HouseholdSpec:
    source: str
    locations: tuple[str, ...]
    adjacent: frozenset[frozenset[str]]
    containers: dict[str, Container]
    objects: dict[str, str]
    start: dict[str, str]
    task_goals: dict[str, tuple[Literal, ...]]
    days: list[dict[str, Any]]


@dataclass
class Household:
    """The world's state. Copy with `clone()`; `apply` mutates."""

    spec: HouseholdSpec
    place: dict[str, str]  # object -> place, container, or actor holding it
    at: dict[str, str]  # actor -> place
    held: dict[str, list[str]] = field(default_factory=dict)
    open: set[str] = field(default_factory=set)
    on: set[str] = field(default_factory=set)

    @classmethod
    def initial(cls, spec: HouseholdSpec, actors: tuple[str, ...] = ("human", "agent")) -> "Household":
        at = {a: spec.start.get(a, spec.start.get("agent", spec.locations[0])) for a in actors}
        return cls(spec, dict(spec.objects), at, {a: [] for a in actors})

    def clone(self) -> "Household":
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ queries
    def adjacent(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.spec.adjacent

    def neighbours(self, place: str) -> list[str]:
        return [p for p in self.spec.locations if self.adjacent(place, p)]

    def location_of(self, thing: str) -> str:
        """The place an object or container is at (a held object: its holder's place)."""
        if thing in self.spec.containers:
            return self.spec.containers[thing].at
        where = self.place.get(thing, "")
        if where in self.at:
            return self.at[where]
        if where in self.spec.containers:
            return self.spec.containers[where].at
        return where

    def holder(self, obj: str) -> str:
        where = self.place.get(obj, "")
        return where if where in self.at else ""

    def holds(self, lit: Literal) -> bool:
        p, a = lit.predicate, lit.args
        if p in ("on", "in"):
            return self.place.get(a[0]) == a[1]
        if p == "switchedon":
            return a[0] in self.on
        if p == "closed":
            return a[0] not in self.open
        return False

    def path(self, start: str, goal: str) -> list[str]:
        """Shortest chain of adjacent places from start to goal (excluding start); [] if none."""
        prev: dict[str, str] = {start: start}
        queue = deque([start])
        while queue:
            cur = queue.popleft()
            if cur == goal:
                out = []
                while cur != start:
                    out.append(cur)
                    cur = prev[cur]
                return out[::-1]
            for nxt in self.neighbours(cur):
                if nxt not in prev:
                    prev[nxt] = cur
                    queue.append(nxt)
        return []

    def describe(self) -> str:
        """The current state in the words of the Base8 prompt."""
        parts = [f"{a} location: {loc}" for a, loc in self.at.items()]
        for obj, where in self.place.items():
            if where in self.at:
                parts.append(f"{obj} held by {where}")
            elif where in self.spec.containers:
                parts.append(f"{obj} inside {where}")
            else:
                parts.append(f"{obj} on {where}")
        for c in self.spec.containers.values():
            parts.append(f"{c.name} at {c.at}")
            if c.opens:
                parts.append(f"{c.name} door {'open' if c.name in self.open else 'closed'}")
            if c.switches:
                parts.append(f"{c.name} {'switchedon' if c.name in self.on else 'not switchedon'}")
        return ", ".join(parts)

    # ------------------------------------------------------------------ rules
    def check(self, actor: str, action: Action) -> Infeasible | None:
        """Why `actor` may not do `action` under the Base8 Action Feasibility Rules (None: it may)."""
        name, args = action.name, action.args
        if name not in ACTIONS or len(args) != ARITY[name]:
            return Infeasible(ACTIONS_RULE, f"{action.text(actor)} is not one of the possible actions "
                                            f"({', '.join(ACTIONS)} with their arguments)")
        here = self.at[actor]
        held = self.held[actor]
        if name == "move":
            dest = args[0]
            if dest not in self.spec.locations:
                return Infeasible(MOVEMENT, f"{dest} is not a location you can move to")
            if dest == here:
                return Infeasible(MOVEMENT, f"you are already at {dest}")
            if not self.adjacent(here, dest):
                return Infeasible(MOVEMENT, f"you can only move to adjacent locations. {dest} and {here} are not "
                                            "next to each other")
            return None
        target = args[0]
        if name == "grab":
            if target not in self.place:
                return Infeasible(OBJECT_LOCATION, f"{target} is not an object you can pick up")
            owner = self.holder(target)
            if owner and owner != actor:
                return Infeasible(HUMAN_OBJECTS if owner == "human" else OBJECT_LOCATION,
                                  f"the {owner} is holding {target}")
            if owner == actor:
                return Infeasible(OBJECT_LOCATION, f"you are already holding {target}")
            if self.location_of(target) != here:
                return Infeasible(OBJECT_LOCATION, f"you must be in the same location as {target} to grab it. "
                                                   f"{target} is at {self.location_of(target)} and you are at {here}")
            inside = self.place[target]
            if inside in self.spec.containers and self.spec.containers[inside].opens and inside not in self.open:
                return Infeasible(OBJECT_LOCATION, f"{target} is inside {inside}, which is closed")
            if len(held) >= CARRY_LIMIT:
                return Infeasible(CARRYING, "you cannot hold more than two objects at a time")
            return None
        if name == "put":
            obj, dest = args
            if obj not in held:
                return Infeasible(OBJECT_LOCATION, f"you are not holding {obj}")
            if dest in self.spec.containers:
                c = self.spec.containers[dest]
                if not c.holds_objects:
                    return Infeasible(OBJECT_LOCATION, f"nothing can be put in {dest}")
                if c.at != here:
                    return Infeasible(OBJECT_LOCATION, f"you must be at {c.at} to put something in {dest}; "
                                                       f"you are at {here}")
                if c.opens and dest not in self.open:
                    return Infeasible(OBJECT_LOCATION, f"{dest} is closed")
                return None
            if dest not in self.spec.locations:
                return Infeasible(OBJECT_LOCATION, f"{dest} is not a surface or container")
            if dest != here:
                return Infeasible(OBJECT_LOCATION, f"you must be at {dest} to put something on it; you are at {here}")
            return None
        # open / close / switchon / switchoff
        appliance = self.spec.containers.get(target)
        if appliance is None or (name in ("open", "close") and not appliance.opens) or (
                name.startswith("switch") and not appliance.switches):
            return Infeasible(ACTIONS_RULE, f"{target} cannot be {'opened or closed' if name in ('open', 'close') else 'switched'}")
        if appliance.at != here:
            return Infeasible(OBJECT_LOCATION, f"you must be at {appliance.at} to {name} {target}; you are at {here}")
        if len(held) >= CARRY_LIMIT:
            return Infeasible(CARRYING, f"you are holding two objects: put one down before you {name} {target}")
        if name == "open" and target in self.on:
            return Infeasible(SAFETY, f"{target} is switched on: it must not be opened")
        if name == "switchon" and appliance.switch_needs_closed and target in self.open:
            return Infeasible(SAFETY, f"{target} is open: close it before switching it on")
        return None

    def apply(self, actor: str, action: Action, *, checked: bool = True) -> Infeasible | None:
        """Do the action (nothing changes when it is infeasible). `checked=False` skips the
        movement rule only (the simulated human); every other rule still holds."""
        problem = self.check(actor, action)
        if problem is not None:
            unchecked_move = (not checked and action.name == "move" and action.args[0] in self.spec.locations
                              and action.args[0] != self.at[actor])
            if not unchecked_move:
                return problem
        name, args = action.name, action.args
        if name == "move":
            self.at[actor] = args[0]
        elif name == "grab":
            self.place[args[0]] = actor
            self.held[actor].append(args[0])
        elif name == "put":
            self.held[actor].remove(args[0])
            self.place[args[0]] = args[1]
        elif name == "open":
            self.open.add(args[0])
        elif name == "close":
            self.open.discard(args[0])
        elif name == "switchon":
            self.on.add(args[0])
        elif name == "switchoff":
            self.on.discard(args[0])
        return None


def feedback_text(action_text: str, problem: Infeasible) -> str:
    """What is appended to the previous prompt when an answer is infeasible (the task-anticipation paper, Example 03)."""
    return (f"Your previous action {action_text} was not feasible since {problem.why}. Please select a "
            f"feasible action.\n\nEnsure the Action Feasibility Rules: {problem.rule} is strictly respected.")


def log_line(actions: dict[str, Action | None]) -> str:
    """One step in the traces' log format: `< human > [find] < kitchentable > | < agent > ...`."""
    words = {"move": "find", "put": "putback"}
    parts = []
    for actor, a in actions.items():
        if a is None:
            parts.append(f"< {actor} > [wait]")
        else:
            parts.append(f"< {actor} > [{words.get(a.name, a.name)}] " + " ".join(f"< {x} >" for x in a.args))
    return " | ".join(parts)


def default_path() -> Path:
    return config_path("anticipation", "household.yaml")


class ContainerDoc(Schema):
    at: str  # a location
    opens: bool
    switches: bool
    holds_objects: bool = True
    switch_needs_closed: bool = False


class StartDoc(Schema):
    human: str
    agent: str


class DayDoc(Schema):
    name: str
    source: str
    context: str
    tasks: list[str]


class HouseholdDoc(Schema):
    """household.yaml."""

    locations: list[str]
    adjacent: list[list[str]]
    containers: dict[str, ContainerDoc]
    objects: dict[str, str]  # object -> location or container
    start: StartDoc
    task_goals: dict[str, str | list[str]]  # task -> literals (one comma-separated string, or a list)
    days: list[DayDoc]


def load_household(path: str | Path | None = None, tasks: tuple[str, ...] | None = None) -> HouseholdSpec:
    """Load and check config/anticipation/household.yaml (every name used must exist; every task of
    the list, when given, must have goals)."""
    file = Path(path) if path else default_path()
    doc = load_model(HouseholdDoc, file)
    locations = tuple(doc.locations)
    for i, pair in enumerate(doc.adjacent):
        if len(pair) != 2 or any(p not in locations for p in pair):
            raise ConfigError(file, f"adjacent[{i}]", f"expected two locations of the list, got {pair!r}")
    for name, spec in doc.containers.items():
        if spec.at not in locations:
            raise ConfigError(file, join_key(join_key("containers", name), "at"), f"{spec.at!r} is not a location")
    containers = {name: Container(name, spec.at, spec.opens, spec.switches, spec.holds_objects,
                                  spec.switch_needs_closed) for name, spec in doc.containers.items()}
    for name, where in doc.objects.items():
        if where not in locations and where not in containers:
            raise ConfigError(file, join_key("objects", name), f"{where!r} is neither a location nor a container")
    start = doc.start.model_dump()
    for actor, where in start.items():
        if where not in locations:
            raise ConfigError(file, join_key("start", actor), f"{where!r} is not a location")
    goals = {task: _goals(lits, join_key("task_goals", task), set(doc.objects) | set(containers) | set(locations),
                          file) for task, lits in doc.task_goals.items()}
    if tasks is not None:
        missing = [t for t in tasks if t not in goals]
        if missing:
            raise ConfigError(file, "task_goals", f"no goals for task(s) {', '.join(missing)}")
    for i, day in enumerate(doc.days):
        bad = [t for t in day.tasks if t not in goals]
        if bad:
            raise ConfigError(file, f"days[{i}].tasks", f"task(s) without goals: {', '.join(bad)}")
    return HouseholdSpec(str(file), locations, frozenset(frozenset(pair) for pair in doc.adjacent), containers,
                         dict(doc.objects), start, goals, [day.model_dump() for day in doc.days])


def _goals(lits: str | list[str], key: str, names: set[str], file: Path) -> tuple[Literal, ...]:
    """A task's goal literals, every argument a name of the household."""
    texts = _LITERALS.findall(lits) if isinstance(lits, str) else lits
    if not texts:
        raise ConfigError(file, key, "no goal literals")
    parsed = []
    for j, text in enumerate(texts):
        try:
            lit = parse_literal(text)
        except ValueError as exc:
            raise ConfigError(file, f"{key}[{j}]", str(exc)) from None
        unknown = [a for a in lit.args if a not in names]
        if unknown:
            raise ConfigError(file, f"{key}[{j}]", f"unknown name(s) {', '.join(unknown)}")
        parsed.append(lit)
    return tuple(parsed)
