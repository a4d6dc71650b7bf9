"""The confirmation policy, enforced where motion happens (the task-learning loop and the planner).

One rule: when confirmation is required (any +O condition; on the ROS graph whenever the planner's
`require_confirmation` parameter is true), a goal is executed only if an operator confirmed it:
said yes to it, described it, or vouched for it on import (`kb import --trust-confirmations`).
Any other goal (learned without oversight, imported untrusted, read from a knowledge base older
than the confirmation column) is put to the operator again as the paper's yes/no question before
anything moves. A timeout, a dead operator or a "no" is never a confirmation.

`GoalConfirmer` asks that one question through the oversight flow, so it is counted, persisted and
phrased like any other proposal (a question the operator already answered is answered from the
knowledge base when the operator is a RememberingOperator, as in the oversight node).
`goal_covered` answers the ReachGoal side: are these literals part of some confirmed goal?
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NoReturn, Protocol, Sequence

from task_learning.kb import Confirmation, KnowledgeBase, LearnedGoal, lift_literals
from task_learning.oversight.flow import (
    Analysis,
    OversightCounts,
    OversightLimits,
    OversightStatus,
    OversightSubject,
    run_oversight,
)
from task_learning.oversight.operator import Operator
from task_learning.oversight.phrasing import goal_clause, goal_sentence
from task_learning.types import AnswerKind, CandidateSource, GoalCandidate, GoalLiteral

log = logging.getLogger(__name__)


class Confirmed(Protocol):
    """An oversight outcome, as far as confirmation goes (planning.loop.OversightReport)."""

    @property
    def confirmed(self) -> bool: ...


def requires_confirmation(condition: str, require_confirmation: bool = False) -> bool:
    """Any +O condition, or the graph's `require_confirmation` parameter."""
    return condition.upper().endswith("+O") or require_confirmation


def confirmation_of(oversight: Confirmed | None, source: CandidateSource) -> Confirmation:
    """How an elicited goal was confirmed: by the oversight dialogue (yes, or the operator's own
    description), or not at all."""
    if oversight is None or not oversight.confirmed:
        return Confirmation.NONE
    return Confirmation.OPERATOR_DESCRIPTION if source is CandidateSource.USER else Confirmation.OPERATOR_YES


@dataclass
class ConfirmationVerdict:
    confirmation: Confirmation
    counts: OversightCounts = field(default_factory=OversightCounts)
    message: str = ""
    by: str = ""  # who confirmed it (the operator of the answer that did)
    provenance: dict[str, Any] = field(default_factory=dict)  # who, through which client, when

    @property
    def confirmed(self) -> bool:
        return self.confirmation.counts_as_confirmed


class GoalConfirmer:
    """Puts one goal to the operator as a yes/no question (no proposals beyond it, no request
    for words: a "no" leaves the caller to elicit anew or to give up)."""

    def __init__(self, operator: Operator, *, kb: KnowledgeBase | None = None, task: str = "",
                 timeout_s: float = 0.0) -> None:
        self.operator = operator
        self.kb = kb  # persists question and answer in-process; None when the operator does
        self.task = task
        self.timeout_s = timeout_s

    def __call__(self, *, object_id: str, object_description: str, text: str,
                 literals: Sequence[GoalLiteral]) -> ConfirmationVerdict:
        candidate = GoalCandidate(text=text, score=1.0, source=CandidateSource.INITIAL,
                                  candidate_id=1, viable=True, literals=list(literals))

        def no_analysis(_sentence: str) -> NoReturn:
            raise RuntimeError("a stored goal is confirmed as it is, not re-described")

        outcome = run_oversight(ranked=[candidate], reselect=lambda _r: None, operator=self.operator,
                                analyze=no_analysis, selected=candidate, kb=self.kb,
                                subject=OversightSubject(object_description, object_id=object_id, task=self.task,
                                                         context=object_description),
                                limits=OversightLimits(max_proposals=1, max_descriptions=0, timeout_s=self.timeout_s))
        if outcome.status is OversightStatus.CONFIRMED:
            return ConfirmationVerdict(Confirmation.OPERATOR_YES, outcome.counts, "confirmed by the operator",
                                       outcome.confirmed_by, dict(outcome.provenance))
        message = (outcome.status.reason if outcome.status in (OversightStatus.TIMEOUT, OversightStatus.OPERATOR_FAILED,
                                                        OversightStatus.OPERATOR_GONE)
                   else "the operator did not confirm it")
        log.info("goal %r for %s not confirmed: %s", text, object_description, message)
        return ConfirmationVerdict(Confirmation.NONE, outcome.counts, message)


def goal_covered(requested: Iterable[GoalLiteral], goals: Iterable[LearnedGoal],
                 type_of: Mapping[str, str]) -> tuple[bool, str]:
    """Are all `requested` literals (on this world's ids) part of confirmed goals? Each literal,
    lifted with one of the request's objects as a confirmed goal's object (an object of that
    goal's type), must be one of that goal's literals: "the cheese in the fridge and the fridge
    closed" is covered by the cheese's confirmed goal, "the fridge closed" alone is not.
    Returns (covered, the reason when not)."""
    requested = list(requested)
    confirmed = [g for g in goals if g.confirmed]
    objects = sorted({arg for literal in requested for arg in literal.args})
    types = dict(type_of)
    for literal in requested:
        if not any(lift_literals([literal], obj, types)[0] in goal.literals
                   for goal in confirmed for obj in objects if types.get(obj) == goal.object_type):
            return False, (f"no confirmed goal covers {literal}: only goals an operator confirmed "
                           f"may be reached (learn and confirm it with PerformTask under a +O "
                           f"condition, or set require_confirmation false on a test bench)")
    return True, ""


def confirmation_mismatch(*, answer: str, description: str, candidate: GoalCandidate | None,
                          chosen: GoalCandidate, analyze: Callable[[str], Analysis] | None = None) -> str:
    """Does an operator's confirmation (as the oversight node issued it) cover exactly the goal a
    node asks the planner to execute? "" when it does; else why not.

    A yes covers the candidate the operator was shown: same goal sentence, same literals. A
    description covers the goal that sentence means: same sentence, and (with `analyze`, the
    planner's own grounding of it in its world) the same literals, so a node that relays the
    answer cannot attach other literals to the operator's words."""
    wanted = set(chosen.literals)
    if not wanted:
        return "the goal has no literals"
    if answer == AnswerKind.YES.value:
        if candidate is None:
            return "the confirmation names no candidate goal"
        if goal_clause(candidate.text).lower() != goal_clause(chosen.text).lower():
            return f"the operator confirmed another goal ({candidate.text!r})"
        if set(candidate.literals) != wanted:
            return "the goal's literals are not the ones the operator confirmed"
        return ""
    if answer == AnswerKind.DESCRIPTION.value:
        sentence = goal_sentence(description)
        if not sentence or sentence.lower() != goal_sentence(chosen.text).lower():
            return "the goal is not the one the operator described"
        if analyze is not None:
            try:
                analysis = analyze(sentence)
            except Exception as exc:  # noqa: BLE001 - no verdict is no confirmation
                return f"the operator's description could not be analysed here ({exc})"
            if not getattr(analysis, "viable", False) or set(getattr(analysis, "literals", []) or []) != wanted:
                return "the goal's literals are not what the operator's description means here"
        return ""
    return f"the answer {answer!r} confirms nothing"


def literals_confirmed(requested: Iterable[GoalLiteral], candidate: GoalCandidate | None) -> str:
    """ReachGoal with a confirmation: "" when every requested literal is one of the confirmed
    candidate's (grounded, as asked); else why not."""
    if candidate is None or not candidate.literals:
        return "the confirmation names no goal literals"
    extra = [str(lit) for lit in requested if lit not in set(candidate.literals)]
    if extra:
        return f"not confirmed: {', '.join(extra)} (the operator confirmed {candidate.text!r})"
    return ""
