"""What a production may condition on (the bootstrapped-productions paper): environment knowledge and world knowledge.

Environment knowledge is what the robot has perceived: the receptacles it knows in advance (names,
types, distance, opened or not, explored or not), the objects it has seen and where, what its one
gripper holds, where it stands, and which earlier tasks ended in done (True) or quit (False).

World knowledge maps natural-language statements about kinds of things ("egg is commonly stored in
a/an fridge") to True or False. A missing statement is unknown, not false: it is asked of an
oracle (the LLM) once and the answer is cached (and persisted when a store is given). A statement
that names one particular object or place ("SinkBasin_28084e25 is a suitable place for slicing")
is never sent to the LLM: it raises UnknownStatement, as the paper's OracleQuery did.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol

from task_learning.inputs.names import normalize_name

log = logging.getLogger(__name__)

GRIPPER = "RobotGripper"


def name_equal(a: str, b: str) -> bool:
    """'knife' == 'Knife', 'countertop' == 'CounterTop', 'sinkbasin_28084e25' == 'SinkBasin_28084e25'."""
    return _squash(a) == _squash(b)


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", normalize_name(text)) if "|" not in text else text.strip().lower()


class UnknownStatement(ValueError):
    """A statement the world knowledge cannot settle (it names one object, or no oracle)."""

    def __init__(self, statement: str) -> None:
        super().__init__(f"got unknown statement: {statement}")
        self.statement = statement


@dataclass
class Receptacle:
    name: str
    type: str
    distance: float = 0.0
    openable: bool = False
    is_open: bool = False
    explored: bool = False


@dataclass
class Thing:
    name: str
    type: str
    location: str = ""  # a receptacle name, GRIPPER, or '' (seen once, place unknown)
    pickupable: bool = True
    sliceable: bool = False
    sliced: bool = False


@dataclass
class EnvKnowledge:
    """The robot's environment knowledge at one moment (a value: the world adapter makes a new
    one after every action)."""

    location: str = ""
    receptacles: dict[str, Receptacle] = field(default_factory=dict)
    objects: dict[str, Thing] = field(default_factory=dict)
    previous_tasks: dict[str, bool] = field(default_factory=dict)

    @property
    def held(self) -> list[str]:
        return sorted(n for n, t in self.objects.items() if t.location == GRIPPER)

    def receptacle_names(self) -> list[str]:
        """Nearest first, then by name."""
        return sorted(self.receptacles, key=lambda n: (self.receptacles[n].distance, n))

    def object_names(self) -> list[str]:
        def distance(name: str) -> float:
            where = self.objects[name].location
            if where == GRIPPER:
                return -1.0
            return self.receptacles[where].distance if where in self.receptacles else 1e9
        return sorted(self.objects, key=lambda n: (distance(n), n))

    def entity_names(self) -> list[str]:
        return self.object_names() + self.receptacle_names()

    def type_of(self, name: str) -> str:
        if name in self.objects:
            return self.objects[name].type
        if name in self.receptacles:
            return self.receptacles[name].type
        return ""

    def kind_matches(self, name: str, kind: str) -> bool:
        """A name matches a kind when its type or its own name equals it."""
        return name_equal(self.type_of(name), kind) or name_equal(name, kind)

    def contents(self, receptacle: str) -> list[str]:
        return sorted(n for n, t in self.objects.items() if t.location == receptacle)

    def mentions_instance(self, statement: str) -> bool:
        words = statement.lower()
        return any(name.lower() in words for name in list(self.objects) + list(self.receptacles)
                   if name.lower() != self.type_of(name).lower())

    def state_key(self, task: str) -> str:
        """A hash of the task and everything known: the node of the state-transition graph."""
        data = {
            "task": task.lower(),
            "at": self.location,
            "r": sorted((n, r.is_open, r.explored) for n, r in self.receptacles.items()),
            "o": sorted((n, t.location, t.sliced) for n, t in self.objects.items()),
            "p": sorted(self.previous_tasks.items()),
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "receptacles": [asdict(r) for r in self.receptacles.values()],
            "objects": [asdict(o) for o in self.objects.values()],
            "previous_tasks": dict(self.previous_tasks),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EnvKnowledge":
        return cls(
            location=str(data.get("location", "")),
            receptacles={r["name"]: Receptacle(**r) for r in data.get("receptacles", [])},
            objects={o["name"]: Thing(**o) for o in data.get("objects", [])},
            previous_tasks={str(k): bool(v) for k, v in (data.get("previous_tasks") or {}).items()},
        )

    def copy(self) -> "EnvKnowledge":
        return EnvKnowledge.from_dict(json.loads(json.dumps(self.to_dict())))


class StatementStore(Protocol):
    """Where answered statements persist (the knowledge base)."""

    def statement_truth(self, statement: str) -> bool | None:
        ...

    def record_statement(self, statement: str, truth: bool, source: str) -> None:
        ...


class WorldKnowledge:
    """Statement -> True/False; unknown statements go to `oracle` once (None: no oracle)."""

    def __init__(self, statements: dict[str, bool] | None = None, *,
                 oracle: Callable[[str], bool | None] | None = None,
                 store: StatementStore | None = None, source: str = "llm") -> None:
        self.statements: dict[str, bool] = {self._key(k): bool(v) for k, v in (statements or {}).items()}
        self.oracle = oracle
        self.store = store
        self.source = source  # recorded with each answer the store keeps (the catalogue prefetch marks its own)
        self.asked: list[str] = []

    @staticmethod
    def _key(statement: str) -> str:
        return " ".join(statement.lower().split())

    def truth(self, statement: str, env: EnvKnowledge | None = None) -> bool:
        key = self._key(statement)
        if env is not None and env.mentions_instance(statement):
            raise UnknownStatement(statement)
        if key in self.statements:
            return self.statements[key]
        if self.store is not None:
            stored = self.store.statement_truth(key)
            if stored is not None:
                self.statements[key] = stored
                return stored
        if self.oracle is None:
            raise UnknownStatement(statement)
        answer = self.oracle(statement)
        self.asked.append(key)
        if answer is None:
            raise UnknownStatement(statement)
        self.statements[key] = bool(answer)
        if self.store is not None:
            self.store.record_statement(key, bool(answer), self.source)
        return bool(answer)
