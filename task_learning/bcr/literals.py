"""Literal text syntax of the BCR domain files, and literal truth read off AI2-THOR metadata.

Domain files write literals as text so they read like the paper: ``inside(o, r)`` (true),
``not holding(o)`` (false), ``possibly visible(o)`` (possibly_true), ``possibly not visible(o)``
(possibly_false). Goals reuse `task_learning.types.GoalLiteral`.

An argument that is a bare AI2-THOR type (no ``|``, CamelCase, e.g. ``BreadSliced``) in a goal
means "some object of that type": slicing creates objects whose ids are unknown when the task is
stated, so ``cooked(BreadSliced)`` holds once any slice is toasted.
"""
from __future__ import annotations

import itertools
import re
from typing import Any, Callable, Hashable, Iterable, Mapping

from task_learning.types import GoalLiteral, Truth

# A hashable summary of a state (StateView.signature): the same action in the same signature is a loop.
StateSignature = tuple[Hashable, ...]

# "Close" in the reference evaluation: within 1.75 m.
NEAR_DISTANCE_M = 1.75

_LITERAL = re.compile(r"^\s*(possibly\s+)?(not\s+)?([a-z_][a-z0-9_]*)\s*\(([^()]*)\)\s*$")


class LiteralSyntaxError(ValueError):
    """Text that is not ``[possibly] [not] predicate(arg, ...)``."""


def parse_literal(text: str) -> GoalLiteral:
    """'possibly not visible(o)' -> GoalLiteral('visible', ('o',), POSSIBLY_FALSE)."""
    match = _LITERAL.match(str(text))
    if not match:
        raise LiteralSyntaxError(
            f"not a literal: {text!r} (expected '[possibly] [not] predicate(arg, ...)')")
    possibly, negated, predicate, body = match.groups()
    args = tuple(a.strip() for a in body.split(",") if a.strip())
    if possibly:
        truth = Truth.POSSIBLY_FALSE if negated else Truth.POSSIBLY_TRUE
    else:
        truth = Truth.FALSE if negated else Truth.TRUE
    return GoalLiteral(predicate, args, truth)


def literal_text(literal: GoalLiteral) -> str:
    """Inverse of `parse_literal`: the form shown to the LLM and in the tree."""
    body = f"{literal.predicate}({', '.join(literal.args)})"
    prefix = {
        Truth.TRUE: "",
        Truth.FALSE: "not ",
        Truth.POSSIBLY_TRUE: "possibly ",
        Truth.POSSIBLY_FALSE: "possibly not ",
    }[literal.truth]
    return prefix + body


def positive(truth: Truth) -> bool:
    """Whether a truth value asks for the literal to hold (true / possibly_true)."""
    return truth in (Truth.TRUE, Truth.POSSIBLY_TRUE)


def is_type_placeholder(arg: str) -> bool:
    """'BreadSliced' (a type standing for any object of it) as opposed to an id 'Bread|1'."""
    return "|" not in arg and arg[:1].isupper()


class StateView:
    """Indexed view of one metadata dict, built once per decision so literal checks are O(1)."""

    def __init__(self, metadata: Mapping[str, Any]) -> None:
        self.metadata = metadata
        self.objects: dict[str, Mapping[str, Any]] = {
            str(o["objectId"]): o for o in (metadata.get("objects") or [])}
        self.by_type: dict[str, list[str]] = {}
        self._children: dict[str, list[str]] = {}
        for oid, obj in self.objects.items():
            self.by_type.setdefault(str(obj.get("objectType", "")), []).append(oid)
            for parent in obj.get("parentReceptacles") or ():
                self._children.setdefault(str(parent), []).append(oid)
        held = [str(o["objectId"]) for o in (metadata.get("inventoryObjects") or [])]
        if not held:
            held = [oid for oid, o in self.objects.items() if o.get("isPickedUp")]
        self.held: list[str] = held
        agent = metadata.get("agent") or {}
        self.agent_location = str(agent.get("location", "") or "")
        # a world may say how far its agent acts without moving (a robot's belief: 0, only at
        # what it navigated to); AI2-THOR's distance otherwise
        reach = agent.get("reachM")
        self.near_m = NEAR_DISTANCE_M if not isinstance(reach, (int, float)) else float(reach)

    def get(self, object_id: str) -> Mapping[str, Any] | None:
        return self.objects.get(object_id)

    def flag(self, object_id: str, key: str) -> bool:
        obj = self.objects.get(object_id)
        return bool(obj and obj.get(key))

    def parents(self, object_id: str) -> list[str]:
        obj = self.objects.get(object_id)
        return list((obj or {}).get("parentReceptacles") or [])

    def contents(self, receptacle_id: str) -> list[str]:
        obj = self.objects.get(receptacle_id)
        listed = list((obj or {}).get("receptacleObjectIds") or [])
        return listed or list(self._children.get(receptacle_id, ()))

    def is_near(self, object_id: str) -> bool:
        if not object_id:
            return False
        if object_id in self.held or self.agent_location == object_id:
            return True
        obj = self.objects.get(object_id)
        if obj is None:
            return False
        distance = obj.get("distance")
        return distance is not None and float(distance) <= self.near_m

    def expand(self, arg: str) -> list[str]:
        """An id stays itself; a type placeholder becomes every object of that type."""
        if is_type_placeholder(arg):
            return list(self.by_type.get(arg, []))
        return [arg]

    def signature(self, ids: Iterable[str] | None = None) -> StateSignature:
        """A hashable summary of the state relevant to action selection, used to detect loops
        (the same action tried again in the same state)."""
        objects = self.objects
        chosen = sorted(objects) if ids is None else sorted(i for i in ids if i in objects)
        rows = []
        for oid in chosen:
            get = objects[oid].get
            rows.append((oid, bool(get("isOpen")), bool(get("isToggled")), bool(get("isSliced")),
                         bool(get("isDirty")), bool(get("isCooked")),
                         bool(get("isFilledWithLiquid")), bool(get("visible")),
                         bool(get("isInteractable")), tuple(get("parentReceptacles") or ()),
                         tuple(get("receptacleObjectIds") or ()), self.is_near(oid)))
        return (tuple(sorted(self.held)), self.agent_location, tuple(rows))


def holds(literal: GoalLiteral, state: StateView) -> bool:
    """Whether the literal's asked-for truth matches the world (possibly_* count as their sign)."""
    value = evaluate(literal.predicate, literal.args, state)
    return value if positive(literal.truth) else not value


def evaluate(predicate: str, args: tuple[str, ...], state: StateView) -> bool:
    """Truth of predicate(args) in the world; type placeholders are existential."""
    if any(is_type_placeholder(a) for a in args):
        pools = [state.expand(a) for a in args]
        return any(evaluate(predicate, combo, state) for combo in itertools.product(*pools))
    rule = _PREDICATES.get(predicate)
    if rule is None:
        return False
    return rule(state, *args)


def _inside(state: StateView, x: str, r: str) -> bool:
    parents = state.parents(x)
    if r in parents:
        return True
    # A Sink holds things through its SinkBasin in AI2-THOR; accept the basin for the sink.
    return any(r in state.parents(p) for p in parents
               if str((state.get(p) or {}).get("objectType", "")).endswith("Basin"))


def _has_room(state: StateView, r: str) -> bool:
    # Room on a receptacle is only known by trying; metadata cannot refute it.
    return state.get(r) is not None


# predicate -> its truth in a state, given the predicate's arguments (one or two object ids)
_PREDICATES: dict[str, Callable[..., bool]] = {
    "inside": _inside,
    "on": _inside,  # AI2-THOR places "on" surfaces and "in" containers with the same relation
    "open": lambda s, x: s.flag(x, "isOpen"),
    "closed": lambda s, x: not s.flag(x, "isOpen"),
    "switched_on": lambda s, x: s.flag(x, "isToggled"),
    "holding": lambda s, x: x in s.held,
    "hand_empty": lambda s: not s.held,
    "near": lambda s, x: s.is_near(x),
    "visible": lambda s, x: s.flag(x, "visible") or x in s.held,
    "sliced": lambda s, x: s.flag(x, "isSliced"),
    "dirty": lambda s, x: s.flag(x, "isDirty"),
    "cooked": lambda s, x: s.flag(x, "isCooked"),
    "filled": lambda s, x: s.flag(x, "isFilledWithLiquid"),
    "exists": lambda s, x: s.get(x) is not None,
    "has_room": _has_room,
}

KNOWN_PREDICATES = frozenset(_PREDICATES)
