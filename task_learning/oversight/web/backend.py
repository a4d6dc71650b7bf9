"""The in-process backend of the web panel: `task-learning run --operator web`.

The run's questions wait in a `QueueOperator` (as for the Qt panel of `--operator panel`); the
page answers them through `QueueOperator.submit`, naming the paired operator whose token the page
holds (the web server checked it against the knowledge base) and the client it came from.
"""
from __future__ import annotations

import time
from typing import Callable

from task_learning.oversight.pairing import OperatorCredentials
from task_learning.oversight.pending import QueueOperator, SubmitResult
from task_learning.types import AnswerKind, ConfirmationRequest


class QueueBackend:
    """Questions of this process, answered from the page."""

    def __init__(self, timeout_s: float = 600.0, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` decides when a question expires (the queue's own; a test sets it to expire a
        question once the page shows it, whatever the machine's load)."""
        self._listener: Callable[[], None] | None = None
        self.queue = QueueOperator(timeout_s=timeout_s, max_timeout_s=max(600.0, timeout_s),
                                   on_change=self._changed, clock=clock)
        self.queue.name = "web"

    def _changed(self) -> None:
        if self._listener is not None:
            self._listener()

    def set_listener(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    def pending(self) -> list[ConfirmationRequest]:
        return self.queue.pending()

    def submit(self, request_id: str, answer: AnswerKind, description: str,
               credentials: OperatorCredentials, client: str) -> SubmitResult:
        return self.queue.submit(request_id, answer, description, credentials.name, client=client,
                                 verified=True)

    def image(self, request_id: str) -> bytes | None:
        return None  # the in-process worlds publish no camera images to this panel

    def close(self) -> None:
        """Every question still waiting resolves to the safe default (never a yes)."""
        self.queue.close()
