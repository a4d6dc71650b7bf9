"""Anticipated tasks are proposed to the operator before the robot does anything for them.

"Shall I prepare coffee next?" goes through the oversight layer's `Operator` contract (a simulated
operator, a terminal, the panel, or the oversight node behind a ROS client), is stored in the
knowledge base like every other question, and only a "yes" from an operator confirms: a "no", a
timeout, an answer to another question or an operator that raises are never consent.

With the task's goal literals given (`literals`), the question carries them as its candidate goal,
so the oversight node's confirmation of a yes is bound to exactly those literals; the answer (and
its confirmation id, over ROS) is kept per task in `answers` for the one execution it allows."""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from task_learning.kb.store import TIMEOUT_OPERATOR, KnowledgeBase
from task_learning.lifecycle.cancellation import RunStopped
from task_learning.oversight.operator import Operator
from task_learning.types import (
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
)

log = logging.getLogger(__name__)
KB_TASK = "task anticipation"


def proposal_question(task: str) -> str:
    """'Prepare coffee' -> 'Shall I prepare coffee next?'"""
    return f"Shall I {task[:1].lower()}{task[1:]} next?"


@dataclass
class Proposals:
    """The day's proposals: what was asked, confirmed and refused (a task is asked once a day)."""

    operator: Operator
    context: str = ""
    kb: KnowledgeBase | None = None
    timeout_s: float = 0.0
    # Said after the question: through the oversight node, the day ("(trace_01, 2026-11-22)"), so
    # the node's memory of answered questions never replays yesterday's "yes" as today's.
    question_suffix: str = ""
    literals: Mapping[str, Sequence[GoalLiteral]] | None = None  # task -> its goal literals
    asked: list[str] = field(default_factory=list)
    answers: dict[str, ConfirmationAnswer] = field(default_factory=dict)  # the yes per confirmed task
    confirmed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # no, timeout or a failed operator

    def confirm_new(self, tasks: Sequence[str]) -> list[str]:
        """Ask about every task not asked yet today; returns the confirmed ones of `tasks`, in order."""
        for task in tasks:
            if task not in self.asked:
                self.asked.append(task)
                (self.confirmed if self._ask(task) else self.refused).append(task)
        return [t for t in tasks if t in self.confirmed]

    def _ask(self, task: str) -> bool:
        goal = list((self.literals or {}).get(task) or [])
        candidate = GoalCandidate(text=f"the goal is that I {task[:1].lower()}{task[1:]}", score=1.0,
                                  source=CandidateSource.INITIAL, candidate_id=1, viable=True,
                                  literals=goal) if goal else None
        request = ConfirmationRequest(request_id=f"anticipate-{uuid.uuid4().hex[:12]}",
                                      question=proposal_question(task) + self.question_suffix,
                                      object_description=task, candidate=candidate,
                                      timeout_s=self.timeout_s)
        if self.kb is not None:
            self.kb.record_question(request, task=KB_TASK, context=self.context)
        try:
            answer = self.operator.ask(request)
        except RunStopped:
            raise  # the day was stopped: this question confirms nothing and no other is asked
        except Exception as exc:  # noqa: BLE001 - a dead operator is no consent
            log.error("operator %s failed on %r: %s", getattr(self.operator, "name", "?"), request.question, exc)
            return False
        if not isinstance(answer, ConfirmationAnswer) or answer.request_id != request.request_id:
            log.error("operator answered another question: %r", answer)
            return False
        if not answer.stamp:
            answer.stamp = time.time()
        if self.kb is not None:
            self.kb.record_answer(answer)
        confirmed = answer.answer is AnswerKind.YES and answer.operator != TIMEOUT_OPERATOR
        if confirmed:
            self.answers[task] = answer
        return confirmed


class RoutineOperator:
    """A simulated operator who knows the human's real routine for the day: yes to a task of it,
    no to anything else. It reads the ground truth; that is its job."""

    name = "simulated"

    def __init__(self, routine: Sequence[str]) -> None:
        self.routine = list(routine)
        self.asked: list[str] = []

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self.asked.append(request.question)
        yes = request.object_description in self.routine
        return ConfirmationAnswer(request.request_id, AnswerKind.YES if yes else AnswerKind.NO, "", self.name,
                                  time.time())
