"""A simulated user with consistent preferences (the STARS paper's experimental "user", footnote 6).

It answers yes exactly when the proposed goal, as the robot grounded it, puts the object in one of
the scene's preferred destinations and leaves a closable destination closed; otherwise no. Asked to
describe the goal, it says it the way the paper's users did: "the goal is that the mug is in the
cupboard and the cupboard is closed".

It reads the ground truth (scene preferences); that is its job. It never talks to the LLM.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from task_learning.inputs.names import normalize_name
from task_learning.types import (
    AnswerKind,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    Truth,
)

if TYPE_CHECKING:
    from task_learning.oversight.flow import Analysis

log = logging.getLogger(__name__)

PLACEMENT_PREDICATES = ("inside", "on")
# Furniture one puts things on rather than in (AI2-THOR types); everything else takes "in".
def _relation(dest_type: str) -> str:
    """'on' or 'in' for the destination: the catalogue's kind when it knows the type (a stove
    burner is a surface), else by the list of surface types below."""
    from task_learning.world.catalog import load_object_types, relation_for

    if dest_type in load_object_types():
        return relation_for(dest_type)
    return "on" if dest_type in SURFACE_TYPES else "in"


SURFACE_TYPES = frozenset({
    "DiningTable", "CounterTop", "Desk", "Chair", "Shelf", "Bookshelf", "SideTable", "CoffeeTable",
    "Sofa", "Bed", "Dresser", "TVStand", "Stool", "Floor", "ShelvingUnit", "Ottoman", "ArmChair",
})


def _type_of(object_id: str) -> str:
    return object_id.split("|", 1)[0]


class SimulatedOperator:
    """Answers from preferences {object_id: [acceptable destination ids]}.

    closable: ids of openables that must end closed (a goal putting the object in one must close it).
    names: spoken names by id ("Cupboard|1" -> "cupboard"); by default from the id's type.
    analyze: optional goal sentence -> analysis, for candidates the robot has not analysed (TBP+O),
      as a person reads the sentence even when the robot did not check it.
    """

    name = "simulated"

    def __init__(self, preferences: Mapping[str, Iterable[str]], *,
                 closable: Iterable[str] = (), names: Mapping[str, str] | None = None,
                 analyze: Callable[[str], Analysis] | None = None) -> None:
        self.preferences = {obj: list(dests) for obj, dests in preferences.items()}
        self.closable = set(closable)
        self.names = dict(names or {})
        self.analyze = analyze
        self.asked: list[ConfirmationRequest] = []

    @classmethod
    def from_scene(cls, scene: Any, *, analyze: Callable[[str], Analysis] | None = None) -> "SimulatedOperator":
        """From a world `Scene` (preferences, closable, objects as AI2-THOR dicts)."""
        names = {}
        for obj in getattr(scene, "objects", []) or []:
            object_id = obj.get("objectId", "")
            if object_id:
                names[object_id] = normalize_name(obj.get("objectType") or _type_of(object_id))
        return cls(getattr(scene, "preferences", {}) or {},
                   closable=getattr(scene, "closable", []) or [], names=names, analyze=analyze)

    # --- judging -----------------------------------------------------------------------------

    def spoken(self, object_id: str) -> str:
        return self.names.get(object_id) or normalize_name(_type_of(object_id))

    def literals_of(self, candidate: GoalCandidate | None) -> list[GoalLiteral]:
        if candidate is None:
            return []
        if candidate.literals:
            return list(candidate.literals)
        if candidate.viable is None and self.analyze is not None:
            try:
                analysis = self.analyze(candidate.text)
            except Exception as exc:  # noqa: BLE001 - an unreadable candidate gets no yes
                log.warning("simulated operator could not read %r: %s", candidate.text, exc)
                return []
            if getattr(analysis, "viable", False):
                return list(getattr(analysis, "literals", []) or [])
        return []

    def _subject(self, request: ConfirmationRequest, literals: list[GoalLiteral]) -> str:
        if request.object_id:
            return request.object_id
        for lit in literals:
            if lit.predicate in PLACEMENT_PREDICATES and lit.args and lit.args[0] in self.preferences:
                return lit.args[0]
        return ""

    def accepts(self, object_id: str, literals: list[GoalLiteral]) -> bool:
        """Yes iff the object ends in a preferred destination, a closable destination ends closed,
        and nothing in the goal contradicts that (the object elsewhere, a closable left open)."""
        preferred = set(self.preferences.get(object_id, []))
        if not preferred or not literals:
            return False
        placed_in: set[str] = set()
        closed: set[str] = set()
        for lit in literals:
            if lit.predicate in PLACEMENT_PREDICATES and lit.args and lit.args[0] == object_id:
                if lit.truth is not Truth.TRUE or len(lit.args) < 2:
                    return False
                if lit.args[1] not in preferred:
                    return False
                placed_in.add(lit.args[1])
            elif lit.predicate == "open" and lit.args:
                if lit.truth is Truth.FALSE:
                    closed.add(lit.args[0])
                elif lit.args[0] in self.closable:
                    return False
            elif lit.predicate == "holding" and lit.truth is Truth.TRUE:
                return False  # a goal that ends with the robot holding it leaves it nowhere
        if not placed_in:
            return False
        return all(dest in closed for dest in placed_in if dest in self.closable)

    def describe(self, object_id: str) -> str:
        """The preferred goal in the user's words; "" when the user has no preference."""
        dests = self.preferences.get(object_id) or []
        if not dests:
            return ""
        dest = dests[0]
        relation = _relation(_type_of(dest))
        thing, place = self.spoken(object_id), self.spoken(dest)
        text = f"the goal is that the {thing} is {relation} the {place}"
        if dest in self.closable:
            text += f" and the {place} is closed"
        return text

    # --- Operator ----------------------------------------------------------------------------

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self.asked.append(request)
        if request.wants_description:
            text = self.describe(request.object_id)
            if not text:
                return ConfirmationAnswer(request.request_id, AnswerKind.NO, "", self.name, time.time())
            return ConfirmationAnswer(request.request_id, AnswerKind.DESCRIPTION, text, self.name,
                                      time.time())
        literals = self.literals_of(request.candidate)
        verdict = self.accepts(self._subject(request, literals), literals)
        return ConfirmationAnswer(request.request_id, AnswerKind.YES if verdict else AnswerKind.NO,
                                  "", self.name, time.time())
