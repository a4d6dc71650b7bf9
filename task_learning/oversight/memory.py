"""An operator with a memory: a question already answered (in this run, or before a crash or a
restart) is answered from the knowledge base instead of being put to the person again.

Both paths use it: `task-learning run` wraps its operator, and the oversight node wraps its
queue, so a robot restarted mid-task never asks its user the same thing twice. Timeouts are not
remembered: a question nobody answered is asked again.
"""
from __future__ import annotations

from task_learning.kb import KnowledgeBase
from task_learning.oversight.operator import Operator
from task_learning.types import ConfirmationAnswer, ConfirmationRequest

REMEMBERED = "(remembered)"


class RememberingOperator:
    def __init__(self, inner: Operator, kb: KnowledgeBase, task: str = "") -> None:
        self.inner = inner
        self.kb = kb
        self.task = task
        self.name = getattr(inner, "name", "operator")
        self.remembered = 0

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        previous = self.kb.previous_answer(task=self.task, question=request.question)
        if previous is None:
            return self.inner.ask(request)
        self.remembered += 1
        who = previous.operator if previous.operator.endswith(REMEMBERED) else f"{previous.operator} {REMEMBERED}"
        return ConfirmationAnswer(request.request_id, previous.answer, previous.description, operator=who)
