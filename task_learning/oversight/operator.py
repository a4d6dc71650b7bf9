"""The operator contract: anything that answers a ConfirmationRequest.

A simulated user, a person at a terminal, the panel behind the ROS node, or a ROS client of that
node all implement `ask`; the oversight flow does not know which one it talks to.
"""
from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from task_learning.errors import TaskLearningError
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest


@runtime_checkable
class Operator(Protocol):
    """Answers one question. Must return (never raise) on the normal paths; a raising operator is
    treated by the flow as a dead one: no goal is confirmed."""

    name: str

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer: ...


class RelayOperator(Protocol):
    """An operator asked on another node's behalf (the oversight node's queue and what wraps it):
    the asker's name and request id travel with the question, for the record and the reply."""

    name: str

    def ask(self, request: ConfirmationRequest, *, asker: str = "",
            asker_request_id: str = "") -> ConfirmationAnswer: ...


class OperatorGone(TaskLearningError):
    """The operator can no longer answer at all (a terminal's input closed): this question and
    every later one end with no goal, and nobody is asked again (never consent). A
    TaskLearningError: a layer that asks ends that question as for a dead operator and carries on;
    the oversight flow names it (OversightStatus.OPERATOR_GONE) and the run exits non-zero."""


# `ConfirmationAnswer.operator` of an answer nobody gave: the question timed out (or its operator
# went away) and resolved to the configured safe default. Such answers are never counted as the
# user's instructions or words.
TIMEOUT_OPERATOR = "timeout"  # the knowledge base stores such answers as timeouts (kb.store)


def timeout_answer(request: ConfirmationRequest, kind: AnswerKind = AnswerKind.TIMEOUT) -> ConfirmationAnswer:
    """What a question that got no answer in time resolves to: TIMEOUT, or a configured safe
    default "no". Never consent."""
    if kind is AnswerKind.YES or kind is AnswerKind.DESCRIPTION:
        raise ValueError(f"a timeout cannot answer {kind.value!r}")
    return ConfirmationAnswer(request.request_id, kind, "", TIMEOUT_OPERATOR, time.time())


class ScriptedOperator:
    """Answers from a fixed list, in order (tests, demos, replaying a recorded dialogue).

    Items are "yes", "no", "timeout", or any other text (a goal description). When the script runs
    out the operator times out, which the flow treats as no consent."""

    name = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self._answers = list(answers)
        self.asked: list[ConfirmationRequest] = []

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self.asked.append(request)
        if not self._answers:
            return timeout_answer(request)
        text = self._answers.pop(0)
        word = text.strip().strip(".!").lower()
        if word == "timeout":
            return timeout_answer(request)
        if word in ("yes", "no"):
            return ConfirmationAnswer(request.request_id, AnswerKind(word), "", self.name, time.time())
        return ConfirmationAnswer(request.request_id, AnswerKind.DESCRIPTION, text, self.name, time.time())
