"""Proposals through the ROS graph's oversight node (the `oversight/confirm` service), and a
simulated operator that answers them through `oversight/answer` as someone who knows the day's
routine would.

Kept apart from the core: it imports the ROS client (`task_learning_nodes.clients.oversight_client`)
lazily, so the core library stays free of rclpy."""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Sequence

from task_learning.anticipation.proposals import RoutineOperator
from task_learning.errors import TaskLearningError

if TYPE_CHECKING:
    from task_learning.oversight.pairing import OperatorCredentials
    from task_learning_nodes.clients.oversight_client import OversightClient

log = logging.getLogger(__name__)


def oversight_client(name: str, wait_s: float, *, asker: str = "",
                     credentials: OperatorCredentials | None = None) -> OversightClient:
    """An OversightClient whose node is up, or a clear error: an Operator that asks as the stack
    node `asker` (signed with the stack key), or an answering client of a paired operator."""
    try:
        from task_learning_nodes.clients.oversight_client import OversightClient
    except ImportError as exc:
        raise TaskLearningError(f"the ROS client is not available ({exc}); run `make setup`") from None
    client = OversightClient(name=name, service_wait_s=wait_s, asker=asker, credentials=credentials)
    if not client.available(wait_s):
        client.close()
        raise TaskLearningError(f"the oversight node is not running (no oversight/confirm service after {wait_s:g} s); "
                                "start it with `task-learning bringup --nodes oversight`")
    return client


def run_day_on_node(day: str, question_tag: str, seed: int, wait_s: float) -> dict[str, Any]:
    """The anticipation node's day (its AnticipateDay action), as RobotDayResult.to_dict(), or a
    clear error."""
    try:
        from task_learning_nodes.nodes.anticipation import request_day as run_day
    except ImportError as exc:
        raise TaskLearningError(f"the ROS client is not available ({exc}); run `make setup`") from None
    return run_day(day, question_tag, seed, wait_s)


class SimulatedRoutineAnswerer:
    """Answers, through the oversight node, the day's "Shall I ... next? (<tag>)" questions (and no
    others) as `RoutineOperator` would; runs in a thread of its own until `stop()`."""

    def __init__(self, routine: Sequence[str], tag: str, wait_s: float = 10.0, db: str | None = None) -> None:
        """`db`: the oversight node's knowledge base, where the simulated operator pairs itself
        once (else its token file must exist: `task-learning operator --pair --name simulated`)."""
        from task_learning.oversight.pairing import operator_credentials

        self.user = RoutineOperator(routine)
        self.tag = tag
        creds, line = operator_credentials("simulated", db=db, wait_s=wait_s)
        if creds is None:
            raise TaskLearningError(f"the simulated operator is {line}")
        self.client = oversight_client("simulated_routine", wait_s, credentials=creds)
        self.answered: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="simulated-routine-operator", daemon=True)

    def start(self) -> "SimulatedRoutineAnswerer":
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set() and self.client.ok():
            try:
                pending = [r for r in self.client.pending(fresh=True)
                           if r.request_id not in self.answered and r.question.endswith(self.tag)]
            except TaskLearningError as exc:
                log.warning("simulated operator: %s", exc)
                self._stop.wait(0.2)
                continue
            if not pending:
                self.client.wait_for_update(0.1)
                continue
            for request in pending:
                answer = self.user.ask(request)
                reply = self.client.submit(request.request_id, answer.answer, answer.description)
                self.answered.add(request.request_id)
                if not reply.accepted:
                    log.warning("simulated operator: answer refused: %s", reply.message)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10.0)
        self.client.close()
