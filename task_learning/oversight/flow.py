"""The +O conditions (STARS+O, TBP+O) for one object: propose, reselect on "no", then ask for words.

The STARS paper §4.4 / B.7: the goal Selection picked is put to the user as a yes/no question; on "no",
Selection runs again without it; after 5 proposals (or when the options run out) the user is asked
to describe the goal, and the description is analysed like any other goal sentence; if it is not
viable the robot says why and asks again (bounded here by `max_descriptions`).

Safety: a timeout, an operator that raises, or a "no" to the request for a description ends the
dialogue with `chosen=None`: nothing unconfirmed is ever returned for execution. An operator that
raises RunStopped (the goal was cancelled) or DependencyFailed (the oversight node stopped
answering) ends more than the dialogue: the exception goes on to the caller, which ends the goal.

Counting follows appendix C: every answer the user gives is one instruction; a yes/no answer is one
word and one yes/no instruction; a description counts its words ("the goal is that the steak knife
is in the dishwasher" = 11). `proposed` counts goals put to the user, `sourced` the proposed goals
actually used (a confirmed LLM candidate; a goal the user described is not sourced). The task-level
floor (initial task instructions and completion confirmations) is the caller's to add.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Protocol, Sequence

from task_learning.kb import KnowledgeBase
from task_learning.lifecycle.cancellation import DependencyFailed, RunStopped
from task_learning.oversight.answers import goal_sentence_from_words, object_noun
from task_learning.oversight.operator import TIMEOUT_OPERATOR, Operator, OperatorGone
from task_learning.oversight.phrasing import (
    count_words,
    description_question,
    goal_clause,
    goal_sentence,
    proposal_question,
)
from task_learning.types import (
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    Mismatch,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_DESCRIPTION_CHARS = 2000
ROBOT = "robot"


class Analysis(Protocol):
    """What `analyze` returns (grounding's GoalAnalysis has these fields), read only."""

    @property
    def viable(self) -> bool: ...

    @property
    def mismatches(self) -> Sequence[Mismatch]: ...

    @property
    def literals(self) -> Sequence[GoalLiteral]: ...


OPERATOR_GONE_REASON = "the operator's input closed (nobody is left to answer)"


class OversightStatus(str, Enum):
    CONFIRMED = "confirmed"  # the operator said yes to a proposed candidate
    DESCRIBED = "described"  # the operator described a viable goal in words
    TIMEOUT = "timeout"  # no answer in time: no goal
    OPERATOR_FAILED = "operator_failed"  # the operator raised / is unreachable: no goal
    OPERATOR_GONE = "operator_gone"  # the operator's input closed: no goal, nobody asked again
    DECLINED = "declined"  # the operator said "no" when asked for a description
    GAVE_UP = "gave_up"  # every description allowed was unusable

    @property
    def reason(self) -> str:
        """Why the dialogue ended without a goal, in words for a result ("" when it has one)."""
        return _NO_GOAL_REASONS.get(self, "")


_NO_GOAL_REASONS = {
    OversightStatus.TIMEOUT: "the operator did not answer in time",
    OversightStatus.OPERATOR_FAILED: "the operator could not be asked",
    OversightStatus.OPERATOR_GONE: OPERATOR_GONE_REASON,
    OversightStatus.DECLINED: "the operator refused every proposal and gave no goal",
    OversightStatus.GAVE_UP: "no usable goal: the proposals were refused and the descriptions could not be used",
}


@dataclass
class OversightCounts:
    """Appendix C measures for the oversight dialogue (add the task's floor of instructions)."""

    instructions: int = 0
    yes_no: int = 0
    words: int = 0
    proposed: int = 0
    sourced: int = 0
    accepted: int = 0  # yes answers (the paper's acceptance rate = accepted / proposed)
    descriptions: int = 0  # goal descriptions the user gave

    def add(self, other: "OversightCounts") -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Turn:
    """One line of the dialogue; `speaker` is "robot" or the operator's name."""

    speaker: str
    text: str
    request_id: str = ""

    def __str__(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class OversightOutcome:
    chosen: GoalCandidate | None
    counts: OversightCounts
    transcript: list[Turn] = field(default_factory=list)
    status: OversightStatus = OversightStatus.GAVE_UP
    rejected: list[GoalCandidate] = field(default_factory=list)
    # The oversight node's id for the answer that confirmed `chosen` (over ROS; "" in-process):
    # what the planner checks with that node before it executes the goal.
    confirmation_id: str = ""
    # Who said yes to the goal or described it ("" without a goal): the operator of the answer
    # that confirmed it (over ROS the paired operator whose signature the oversight node checked).
    confirmed_by: str = ""
    # That answer's provenance: operator, client, answered_at, confirmation id, request id.
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def confirmed(self) -> bool:
        return self.chosen is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "chosen": self.chosen.to_dict() if self.chosen else None,
            "counts": self.counts.to_dict(),
            "transcript": [{"speaker": t.speaker, "text": t.text, "request_id": t.request_id}
                           for t in self.transcript],
            "rejected": [c.text for c in self.rejected],
            "confirmation_id": self.confirmation_id,
            "confirmed_by": self.confirmed_by,
            "provenance": dict(self.provenance),
        }


@dataclass(frozen=True)
class OversightSubject:
    """What one dialogue is about: the object as the questions name it ("mug in the dish rack"),
    and where the knowledge base files its questions (task, context: "" is the description)."""

    object_description: str
    object_id: str = ""
    task: str = ""
    context: str = ""


@dataclass(frozen=True)
class OversightLimits:
    """How long a dialogue may go: proposals before the operator is asked for words, descriptions
    asked for before it gives up, each question's timeout (0: the operator's own) and the longest
    description analysed."""

    max_proposals: int = 5
    max_descriptions: int = 3
    timeout_s: float = 0.0
    max_description_chars: int = DEFAULT_MAX_DESCRIPTION_CHARS


class _Dialogue:
    """State of one oversight dialogue; `run_oversight` is the public face."""

    def __init__(self, *, operator: Operator, subject: OversightSubject, analyze: Callable[[str], Analysis], kb: KnowledgeBase | None,
                 limits: OversightLimits, new_request_id: Callable[[], str]) -> None:
        self.operator = operator
        self.object_description = subject.object_description
        self.object_id = subject.object_id
        self.analyze = analyze
        self.kb = kb
        self.task = subject.task
        self.context = subject.context or subject.object_description
        self.timeout_s = limits.timeout_s
        self.max_description_chars = limits.max_description_chars
        self.new_request_id = new_request_id
        self.counts = OversightCounts()
        self.transcript: list[Turn] = []
        self.gone = False  # the operator's input closed (OperatorGone)

    def say(self, text: str, request_id: str = "") -> None:
        self.transcript.append(Turn(ROBOT, text, request_id))

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer | None:
        """Put a question; None when the operator failed. Persists question and answer."""
        self.say(request.question, request.request_id)
        if self.kb is not None:
            self.kb.record_question(request, task=self.task, context=self.context)
        try:
            answer = self.operator.ask(request)
        except (RunStopped, DependencyFailed):
            raise  # the whole goal ends (cancelled, or the oversight node stopped answering)
        except OperatorGone as exc:
            self.transcript.append(Turn("system", f"operator gone: {exc}", request.request_id))
            self.gone = True
            return None
        except Exception as exc:  # noqa: BLE001 - a dead operator must not become a confirmed goal
            log.error("operator %s failed on %s: %s", getattr(self.operator, "name", "?"),
                      request.request_id, exc)
            self.transcript.append(Turn("system", f"operator failed: {exc}", request.request_id))
            return None
        if not isinstance(answer, ConfirmationAnswer) or answer.request_id != request.request_id:
            log.error("operator returned an answer for another question: %r", answer)
            self.transcript.append(Turn("system", "operator answered another question",
                                        request.request_id))
            return None
        if not answer.stamp:
            answer.stamp = time.time()
        if self.kb is not None:
            self.kb.record_answer(answer, client=answer.client)  # in-process too: which front end
        speaker = answer.operator or getattr(self.operator, "name", "operator")
        if answer.answer is AnswerKind.DESCRIPTION:
            self.transcript.append(Turn(speaker, answer.description, request.request_id))
        else:
            self.transcript.append(Turn(speaker, answer.answer.value, request.request_id))
        return answer

    def ask_or_end(self, request: ConfirmationRequest,
                   rejected: list[GoalCandidate]) -> ConfirmationAnswer | OversightOutcome:
        """Put a question; the answer, or, when the operator failed or gave no answer in time,
        the outcome that ends the dialogue with no goal (nothing unconfirmed goes on)."""
        answer = self.ask(request)
        if answer is None:
            status = OversightStatus.OPERATOR_GONE if self.gone else OversightStatus.OPERATOR_FAILED
            return self.outcome(status, None, rejected)
        if _timed_out(answer):
            self.say("No answer in time; no goal is confirmed.", request.request_id)
            return self.outcome(OversightStatus.TIMEOUT, None, rejected)
        return answer

    def count_yes_no(self, answer: ConfirmationAnswer) -> None:
        self.counts.instructions += 1
        self.counts.yes_no += 1
        self.counts.words += 1

    def count_description(self, text: str) -> None:
        words = count_words(text)
        if words:
            self.counts.instructions += 1
            self.counts.descriptions += 1
            self.counts.words += words

    def fill_analysis(self, cand: GoalCandidate) -> None:
        """An option nobody analysed (TBP+O proposes raw template responses) is analysed before it
        is shown, so the operator (and the panel) see its grounded goal and its mismatches. It is
        proposed either way: in TBP+O judging viability is the user's job."""
        if cand.viable is not None:
            return
        try:
            analysis = self.analyze(goal_sentence(cand.text))
        except Exception as exc:  # noqa: BLE001 - a failed analysis drops that candidate, never confirms it
            log.warning("analysis of %r failed: %s", cand.text, exc)
            return
        cand.viable = bool(getattr(analysis, "viable", False))
        cand.mismatches = list(getattr(analysis, "mismatches", []) or [])
        cand.literals = list(getattr(analysis, "literals", []) or []) if cand.viable else []

    def use_description(self, text: str, next_id: int) -> tuple[GoalCandidate | None, str]:
        """Analyse the user's words; the goal, or the feedback saying why it cannot be used."""
        if not text.strip() or not count_words(text):
            return None, "The description was empty."
        if len(text) > self.max_description_chars:
            return None, (f"The description is too long ({len(text)} characters; at most "
                          f"{self.max_description_chars}).")
        # Plain words ("put it in the recycling bin", "in the fridge, closed") become the goal
        # sentence they stand for, about this object; a goal sentence stays as it was.
        sentence = goal_sentence_from_words(text, object_noun(self.object_description))
        try:
            analysis = self.analyze(sentence)
        except Exception as exc:  # noqa: BLE001 - the operator is told the sentence was not analysed
            log.error("analysis of %r failed: %s", sentence, exc)
            return None, "I could not analyse that sentence."
        mismatches = list(getattr(analysis, "mismatches", []) or [])
        literals = list(getattr(analysis, "literals", []) or [])
        if getattr(analysis, "viable", False) and literals:
            return GoalCandidate(text=sentence, score=1.0, source=CandidateSource.USER,
                                 candidate_id=next_id, viable=True, mismatches=mismatches,
                                 literals=literals), ""
        feedback = " ".join(m.feedback for m in mismatches if m.feedback).strip()
        return None, feedback or "I could not interpret that goal."

    def request(self, question: str, *, candidate: GoalCandidate | None,
                candidates: list[GoalCandidate], wants_description: bool) -> ConfirmationRequest:
        return ConfirmationRequest(
            request_id=self.new_request_id(), question=question, object_id=self.object_id,
            object_description=self.object_description, candidate=candidate,
            candidates=list(candidates), wants_description=wants_description,
            timeout_s=self.timeout_s)

    def outcome(self, status: OversightStatus, chosen: GoalCandidate | None,
                rejected: list[GoalCandidate], by: ConfirmationAnswer | None = None) -> OversightOutcome:
        """`by`: the answer that confirmed `chosen` (who gave it and its provenance are kept with
        the outcome)."""
        if chosen is None or by is None:
            return OversightOutcome(chosen, self.counts, self.transcript, status, rejected)
        who = by.operator or getattr(self.operator, "name", "operator")
        return OversightOutcome(chosen, self.counts, self.transcript, status, rejected,
                                by.confirmation_id, who, answer_provenance(by))


def answer_provenance(answer: ConfirmationAnswer) -> dict[str, Any]:
    """An answer's provenance as the knowledge base keeps it with a goal: who, through which
    client, when, and the oversight node's confirmation id (over ROS)."""
    return {"operator": answer.operator, "client": answer.client, "answered_at": answer.stamp,
            "confirmation_id": answer.confirmation_id, "request_id": answer.request_id}


def _timed_out(answer: ConfirmationAnswer) -> bool:
    """A timeout, or the safe default standing in for one: never consent, and the dialogue ends
    (asking again would only wait out the same absent operator)."""
    return answer.answer is AnswerKind.TIMEOUT or answer.operator == TIMEOUT_OPERATOR


def _new_request_id() -> str:
    return uuid.uuid4().hex[:16]


def _dedupe(candidates: Sequence[GoalCandidate]) -> list[GoalCandidate]:
    seen: set[str] = set()
    unique = []
    for cand in candidates:
        key = goal_clause(cand.text).lower()
        if key and key not in seen:
            seen.add(key)
            unique.append(cand)
    return unique


def _always(choice: GoalCandidate) -> Callable[[list[GoalCandidate]], GoalCandidate | None]:
    """A 'Selection' that keeps choosing `choice` (the option Selection already picked)."""
    return lambda _options: choice


def _pick(reselect: Callable[[list[GoalCandidate]], GoalCandidate | None],
          remaining: list[GoalCandidate]) -> GoalCandidate:
    """Selection over the remaining options; when it fails or answers outside them, the best-ranked
    remaining option (the list is ordered best first)."""
    try:
        choice = reselect(list(remaining))
    except Exception as exc:  # noqa: BLE001 - falls back to the best-ranked option, still asked
        log.warning("reselection failed (%s); proposing the best-ranked remaining option", exc)
        choice = None
    if choice is not None:
        for cand in remaining:
            if cand is choice:
                return cand
        key = goal_clause(choice.text).lower()
        for cand in remaining:
            if goal_clause(cand.text).lower() == key:
                return cand
        log.warning("reselection chose %r, not among the remaining options", choice.text)
    return remaining[0]


def run_oversight(
    *,
    ranked: list[GoalCandidate],
    reselect: Callable[[list[GoalCandidate]], GoalCandidate | None],
    operator: Operator,
    subject: OversightSubject,
    analyze: Callable[[str], Analysis],
    selected: GoalCandidate | None = None,
    kb: KnowledgeBase | None = None,
    limits: OversightLimits = OversightLimits(),
    new_request_id: Callable[[], str] = _new_request_id,
) -> OversightOutcome:
    """Confirm a goal for one object with the operator.

    ranked: the options to propose, best first (STARS+O: the viable candidates; TBP+O: the
      template responses). reselect: Selection over a reduced list (None: take the best-ranked).
    selected: the option Selection already picked, proposed first without calling `reselect`.
    subject: the object (the question reads "For a mug in the dish rack ...").
    analyze: goal sentence -> analysis (.viable, .mismatches, .literals), used on descriptions.
    kb: a KnowledgeBase (record_question/record_answer) persisting every question and answer;
      None when the operator persists them itself (the ROS oversight node does).
    Returns the chosen goal (None unless the operator confirmed or described it), the appendix C
    counts, and the transcript.
    """
    dialogue = _Dialogue(operator=operator, subject=subject, analyze=analyze, kb=kb, limits=limits,
                         new_request_id=new_request_id)
    rejected: list[GoalCandidate] = []
    proposed = _propose(dialogue, _dedupe(ranked), reselect, selected, rejected, limits.max_proposals)
    if isinstance(proposed, OversightOutcome):
        return proposed
    next_id = max((c.candidate_id for c in ranked), default=0) + 1
    return _ask_for_words(dialogue, proposed, rejected, next_id, limits.max_descriptions)


def _propose(dialogue: _Dialogue, remaining: list[GoalCandidate],
             reselect: Callable[[list[GoalCandidate]], GoalCandidate | None], selected: GoalCandidate | None,
             rejected: list[GoalCandidate], max_proposals: int) -> OversightOutcome | ConfirmationAnswer | None:
    """Put options to the operator, Selection's pick first, until one is confirmed (the outcome)
    or the proposals run out (None); an answer that described a goal instead goes on to be used
    (that answer)."""
    first = selected
    while remaining and dialogue.counts.proposed < max_proposals:
        if first is not None:  # Selection's own pick goes first (matched among the remaining)
            cand = _pick(_always(first), remaining)
            first = None
        else:
            cand = _pick(reselect, remaining)
        dialogue.fill_analysis(cand)
        request = dialogue.request(proposal_question(dialogue.object_description, cand.text),
                                   candidate=cand, candidates=remaining, wants_description=False)
        dialogue.counts.proposed += 1
        answer = dialogue.ask_or_end(request, rejected)
        if isinstance(answer, OversightOutcome):
            return answer
        if answer.answer is AnswerKind.YES:
            dialogue.count_yes_no(answer)
            dialogue.counts.accepted += 1
            if cand.viable is not False:
                dialogue.counts.sourced += 1
                dialogue.say("Ok.", request.request_id)
                return dialogue.outcome(OversightStatus.CONFIRMED, cand, rejected, answer)
            reason = " ".join(m.feedback for m in cand.mismatches if m.feedback) or "I cannot interpret it."
            dialogue.say(f"I cannot use that goal: {reason}", request.request_id)
        elif answer.answer is AnswerKind.NO:
            dialogue.count_yes_no(answer)
        remaining.remove(cand)
        rejected.append(cand)
        if answer.answer not in (AnswerKind.YES, AnswerKind.NO):  # the operator described a goal instead
            return answer
    return None


def _ask_for_words(dialogue: _Dialogue, volunteered: ConfirmationAnswer | None, rejected: list[GoalCandidate],
                   next_id: int, max_descriptions: int) -> OversightOutcome:
    """Ask the operator to describe the goal (or use the description they volunteered) until one
    is usable, they decline, or `max_descriptions` were asked for."""
    feedback = ""
    descriptions = 0
    while descriptions < max_descriptions:
        if volunteered is not None:
            answer, volunteered = volunteered, None
        else:
            request = dialogue.request(description_question(dialogue.object_description, feedback),
                                       candidate=None, candidates=rejected, wants_description=True)
            asked = dialogue.ask_or_end(request, rejected)
            if isinstance(asked, OversightOutcome):
                return asked
            answer = asked
            if answer.answer is AnswerKind.NO:
                dialogue.count_yes_no(answer)
                dialogue.say("Ok, I will not learn a goal for it.", request.request_id)
                return dialogue.outcome(OversightStatus.DECLINED, None, rejected)
            if answer.answer is AnswerKind.YES:
                dialogue.count_yes_no(answer)
                descriptions += 1
                feedback = "I need the goal in words."
                continue
        descriptions += 1
        dialogue.count_description(answer.description)
        goal, feedback = dialogue.use_description(answer.description, next_id)
        if goal is not None:
            dialogue.say("Ok.")
            return dialogue.outcome(OversightStatus.DESCRIBED, goal, rejected, answer)
        dialogue.say(f"I cannot use that goal: {feedback}")
    return dialogue.outcome(OversightStatus.GAVE_UP, None, rejected)
