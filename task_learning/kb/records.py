"""What the knowledge base stores, as plain data: learned goals (with how they were confirmed),
policies (with who approved them), routines (task anticipation's days), and the lifting of goal
literals that lets a goal learned once ground again in a world whose ids differ."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from task_learning.types import ActionCall, GoalLiteral, Truth

# `ConfirmationAnswer.operator` of an answer nobody gave (task_learning.oversight.operator uses
# the same value): stored as a timeout, never as the safe default that stood in for it.
TIMEOUT_OPERATOR = "timeout"
OBJECT_VAR = "?object"


class Confirmation(str, Enum):
    """How a learned goal was confirmed: the one input of the confirmation policy.

    OPERATOR_YES and OPERATOR_DESCRIPTION come from a person in an oversight dialogue.
    IMPORTED_TRUSTED marks a goal from `kb import --trust-confirmations`: the person importing
    vouched for the exporter's operator confirmations (and the goal's literals were re-grounded
    from its text), so it counts as confirmed. NONE: nobody confirmed it (a run without
    oversight, a plain import, or a knowledge base older than this column)."""

    OPERATOR_YES = "operator_yes"
    OPERATOR_DESCRIPTION = "operator_description"
    IMPORTED_TRUSTED = "imported_trusted"
    NONE = "none"

    @property
    def counts_as_confirmed(self) -> bool:
        return self is not Confirmation.NONE


def parse_confirmation(value: Any) -> Confirmation:
    """A stored or exported value; anything unknown (or missing) is NONE, never a confirmation."""
    try:
        return Confirmation(str(value or "none"))
    except ValueError:
        return Confirmation.NONE


@dataclass
class LearnedGoal:
    """A goal learned for an object in context, with what it came from."""

    task: str
    context: str  # "mug in dish rack"
    object_type: str
    text: str
    literals: list[GoalLiteral]  # lifted: ?object and object types
    condition: str = ""
    confirmation: Confirmation = Confirmation.NONE
    provenance: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0

    @property
    def confirmed(self) -> bool:
        """Confirmed by an operator (or imported with trusted confirmations): may be executed
        where the policy asks for confirmation, without asking again."""
        return self.confirmation.counts_as_confirmed

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "context": self.context,
            "object_type": self.object_type,
            "text": self.text,
            "literals": [lit.to_dict() for lit in self.literals],
            "condition": self.condition,
            "confirmed": self.confirmed,
            "confirmation": self.confirmation.value,
            "provenance": self.provenance,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LearnedGoal":
        return cls(
            task=str(data["task"]),
            context=str(data["context"]),
            object_type=str(data["object_type"]),
            text=str(data["text"]),
            literals=[GoalLiteral.from_dict(d) for d in data.get("literals", [])],
            condition=str(data.get("condition", "")),
            confirmation=parse_confirmation(data.get("confirmation")),
            provenance=dict(data.get("provenance") or {}),
            created_at=float(data.get("created_at") or 0.0),
        )


POLICY_LEARNED = "learned"  # this robot's executor learned it from its own successful actions
POLICY_UNREVIEWED = "none"  # imported, or of unknown origin: replayed only once an operator approves
MAX_POLICY_ACTIONS = 200  # a recipe longer than any plan (the planner's max_actions is 100)


def policy_approved_by(operator: str) -> str:
    """The approval recorded when an operator said yes to an unreviewed policy (who said it)."""
    return f"operator:{operator or 'unknown'}"


@dataclass
class Policy:
    """A successful action sequence for (task, object type, gross location), lifted like goals.

    `approval` says why it may be replayed: POLICY_LEARNED (this robot reached the goal with
    these actions), policy_approved_by(operator) (an operator approved it, from a question built
    from the actions), or POLICY_UNREVIEWED (imported or of unknown origin: never replayed
    until approved)."""

    task: str
    object_type: str
    location: str
    goal_key: str  # the lifted goal it achieves, as text
    actions: list[ActionCall]
    successes: int = 0
    failures: int = 0
    approval: str = POLICY_LEARNED

    @property
    def reviewed(self) -> bool:
        return self.approval != POLICY_UNREVIEWED

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "object_type": self.object_type,
            "location": self.location,
            "goal_key": self.goal_key,
            "actions": [action_to_dict(a) for a in self.actions],
            "successes": self.successes,
            "failures": self.failures,
            "approval": self.approval,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Policy":
        """An exported policy, unreviewed whatever the file says (an import is not a review)."""
        actions = data.get("actions", [])
        if not isinstance(actions, list) or len(actions) > MAX_POLICY_ACTIONS:
            raise ValueError(f"actions: expected a list of at most {MAX_POLICY_ACTIONS} actions")
        successes, failures = data.get("successes", 0), data.get("failures", 0)
        for name, value in (("successes", successes), ("failures", failures)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
                raise ValueError(f"{name}: expected a whole number from 0 to 1000000000, got {value!r:.40}")
        return cls(
            task=str(data["task"]),
            object_type=str(data["object_type"]),
            location=str(data["location"]),
            goal_key=str(data["goal_key"]),
            actions=[action_from_dict(a) for a in actions],
            successes=successes,
            failures=failures,
            approval=POLICY_UNREVIEWED,
        )


@dataclass(frozen=True)
class StoredRoutine:
    """One day the robot saw (task anticipation): the day ("weekday"/"weekend"), the
    facts of its context ("working_from_home", ...), the tasks in the order they were done, and
    an explanation used when the day is shown to the LLM as an example."""

    day: str
    facts: tuple[str, ...]
    tasks: tuple[str, ...]
    explanation: str = ""
    source: str = ""  # where it came from: "config" (the seeded days), "observed" (a day watched)
    created_at: float = 0.0
    routine_id: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "facts": list(self.facts), "tasks": list(self.tasks),
                "explanation": self.explanation, "source": self.source, "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StoredRoutine":
        """An exported routine; its strings must be strings (a number or a list where a name goes
        is refused, not turned into text)."""
        def names(key: str) -> tuple[str, ...]:
            value = data.get(key)
            if value is None:
                return ()
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ValueError(f"{key}: expected a list of names")
            return tuple(value)

        day, explanation, source = data["day"], data.get("explanation") or "", data.get("source") or ""
        if not isinstance(day, str) or not day.strip():
            raise ValueError("day: expected a name (weekday or weekend)")
        if not isinstance(explanation, str) or not isinstance(source, str):
            raise ValueError("explanation and source must be text")
        tasks = names("tasks")
        if not tasks:
            raise ValueError("tasks: a routine needs at least one task")
        return cls(day=day, facts=tuple(sorted(names("facts"))), tasks=tasks, explanation=explanation,
                   source=source, created_at=float(data.get("created_at") or 0.0))

    def same_day(self, other: "StoredRoutine") -> bool:
        """The same remembered day (what an import of an export already imported would repeat).
        The config's seeded days are the same days whenever they were seeded."""
        def key(r: StoredRoutine) -> tuple[str, tuple[str, ...], tuple[str, ...], str, str, float | None]:
            return (r.day, tuple(sorted(r.facts)), r.tasks, r.explanation, r.source,
                    None if r.source == "config" else r.created_at)
        return key(self) == key(other)


class ImportCounts(NamedTuple):
    goals: int
    policies: int
    routines: int  # new routines; a day the knowledge base already has is not added twice
    policies_unreviewed: int = 0  # of the policies: replayed only once an operator approves them


def action_to_dict(call: ActionCall) -> dict[str, Any]:
    return {"action": call.action, "object_id": call.object_id, "params": [list(p) for p in call.params]}


def action_from_dict(data: dict[str, Any]) -> ActionCall:
    return ActionCall(
        action=str(data["action"]),
        object_id=str(data.get("object_id", "")),
        params=tuple((str(k), v) for k, v in data.get("params", [])),
    )


_KEY_LITERAL = re.compile(r"^(?:(?P<truth>[a-z_]+):)?(?P<predicate>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>[^()]*)\)$")


def parse_goal_key(key: str) -> list[GoalLiteral]:
    """The literals of a goal key (the inverse of goal_key); ValueError when it is not one."""
    literals = []
    for part in key.split(" & "):
        found = _KEY_LITERAL.match(part.strip())
        if not found:
            raise ValueError(f"goal_key: {part.strip()[:80]!r} is not a literal such as inside(?object, Fridge)")
        args = tuple(a.strip() for a in found["args"].split(",")) if found["args"].strip() else ()
        literals.append(GoalLiteral(found["predicate"], args, Truth(found["truth"] or "true")))
    return literals


def lift_literals(literals: list[GoalLiteral], object_id: str, type_of: dict[str, str]) -> list[GoalLiteral]:
    """Replace the object by ?object and other ids by their type, so the goal transfers."""
    lifted = []
    for lit in literals:
        args = tuple(OBJECT_VAR if a == object_id else type_of.get(a, a) for a in lit.args)
        lifted.append(GoalLiteral(lit.predicate, args, lit.truth))
    return lifted


def ground_lifted(
    literals: list[GoalLiteral], object_id: str, ids_by_type: dict[str, list[str]]
) -> list[GoalLiteral] | None:
    """The inverse of lift_literals in a given world: ?object becomes the object, a type becomes
    the one object of that type (the first by id when several). None when a type is absent: the
    goal no longer applies in this world (e.g. its destination disappeared)."""
    grounded = []
    for lit in literals:
        args = []
        for arg in lit.args:
            if arg == OBJECT_VAR:
                args.append(object_id)
            elif "|" in arg:
                args.append(arg)  # already an id
            else:
                candidates = sorted(ids_by_type.get(arg, []))
                if not candidates:
                    return None
                args.append(candidates[0])
        grounded.append(GoalLiteral(lit.predicate, tuple(args), lit.truth))
    return grounded


def goal_key(literals: list[GoalLiteral]) -> str:
    return " & ".join(sorted(str(lit) for lit in literals))
