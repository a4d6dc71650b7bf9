"""An operator with a memory: a question already answered (in this run, or before a crash or a
restart) is answered from the knowledge base instead of being put to the person again.

Both paths use it: `task-learning run` wraps its operator, and the oversight node wraps its
queue, so a robot restarted mid-task never asks its user the same thing twice. Timeouts (and
withdrawn questions) are not remembered: a question nobody answered is asked again.

Remembered answers are keyed by provenance, not by words alone: behind the oversight
node a question matches only an earlier question of the same verified asker, about the same
object and candidate goal, answered by a paired operator whose signature the node checked. A
question put by anyone else, or an answer nobody verified, can never answer the planner's. A
remembered yes is issued a fresh confirmation id naming the question it came from.
"""
from __future__ import annotations

from typing import Any

from task_learning.kb import KnowledgeBase
from task_learning.oversight.confirmations import ConfirmationLedger
from task_learning.oversight.operator import Operator
from task_learning.types import ConfirmationAnswer, ConfirmationRequest

REMEMBERED = "(remembered)"


class RememberingOperator:
    def __init__(self, inner: Operator, kb: KnowledgeBase, task: str = "",
                 ledger: ConfirmationLedger | None = None) -> None:
        self.inner = inner
        self.kb = kb
        self.task = task
        self.ledger = ledger
        self.name = getattr(inner, "name", "operator")
        self.remembered = 0

    def ask(self, request: ConfirmationRequest, **asked: Any) -> ConfirmationAnswer:
        """`asked` (the oversight node): asker and asker_request_id, passed on to its queue."""
        asker = str(asked.get("asker", ""))
        if asker:
            candidate = request.candidate.text if request.candidate is not None else ""
            previous = self.kb.previous_answer(task=self.task, question=request.question, asked_by=asker,
                                               object_id=request.object_id, candidate_text=candidate)
        else:
            previous = self.kb.previous_answer(task=self.task, question=request.question)
        if previous is None:
            return self.inner.ask(request, **asked) if asked else self.inner.ask(request)
        self.remembered += 1
        who = previous.operator if previous.operator.endswith(REMEMBERED) else f"{previous.operator} {REMEMBERED}"
        answer = ConfirmationAnswer(request.request_id, previous.answer, previous.description, operator=who)
        if self.ledger is not None and asker:
            answer.confirmation_id = self.ledger.issue(request, answer, asker=asker,
                                                       remembered_from=previous.request_id)
        return answer
