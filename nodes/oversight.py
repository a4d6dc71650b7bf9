"""oversight_node: the operator's side of STARS+O as ROS services.

- `oversight/confirm` (Confirm): goal elicitation asks; the call blocks until a panel, the terminal
  or a service call answers, or until the question's timeout, which answers with the configured
  safe default (never "yes").
- `oversight/answer` (AnswerConfirmation): a panel or terminal answers a pending question; bad
  answers (unknown/expired id, empty or oversized description) are refused with a message and
  leave the queue as it was.
- `oversight/list_pending` (ListPendingConfirmations), and the pending questions published
  (latched) on `oversight/pending` whenever the queue changes.

Every question and its answer are persisted in the SQLite knowledge base (`db_path`). The logic is
`task_learning.oversight.pending.QueueOperator`; this file is only the ROS wiring. A blocking
Confirm needs its own executor thread, hence a MultiThreadedExecutor and a reentrant group.
"""
from __future__ import annotations

import threading
from typing import Any

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.oversight.operator import timeout_answer
from task_learning.oversight.pending import QueueOperator, parse_safe_default
from task_learning.types import ConfirmationRequest
from task_learning_interfaces.srv import AnswerConfirmation, Confirm, ListPendingConfirmations
from task_learning_nodes import convert
from task_learning_nodes.node_base import run_node
from task_learning_nodes.params import Param, declare_parameters
from task_learning_nodes.qos import latched

CONFIRM_SERVICE = "oversight/confirm"
ANSWER_SERVICE = "oversight/answer"
LIST_SERVICE = "oversight/list_pending"
PENDING_TOPIC = "oversight/pending"
# The pending list is published as the List service's response message: the same data a panel
# would fetch, with no extra message definition.
PendingMsg = ListPendingConfirmations.Response

PARAMETERS = (
    Param("timeout_s", 120.0, "Seconds a question waits for the operator when the request sets no "
          "timeout of its own", min=0.1, max=86400.0),
    # Dynamic: an unquoted YAML `yes`/`no` arrives as a bool; it is refused or read as "no".
    Param("safe_default", "no", "What an unanswered question resolves to: no or timeout; never yes "
          "(refused at start)", dynamic_typing=True),
    Param("db_path", "", "SQLite knowledge base where every question and answer is persisted; empty: "
          "not persisted; relative paths are relative to the node's working directory"),
    Param("task", "", "Task name stored with each question"),
    Param("max_description_chars", 2000, "Longest goal description accepted, in characters",
          min=1, max=1000000),
    Param("pending_topic", PENDING_TOPIC, "Topic where the pending questions are published, latched, "
          "for panels"),
    Param("threads", 8, "Executor threads: each waiting Confirm call holds one", min=2, max=256),
    Param("remember_answers", True, "With a db: a question answered before (also before a restart) "
          "is answered from the knowledge base instead of being asked again"),
)


class OversightNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("oversight", **kwargs)
        get = declare_parameters(self, PARAMETERS).__getitem__
        self._publish_lock = threading.Lock()
        safe_default = parse_safe_default(get("safe_default"), file="oversight parameters")
        self.kb = None
        db_path = str(get("db_path") or "")
        if db_path:
            from task_learning.kb.store import KnowledgeBase

            self.kb = KnowledgeBase(db_path)
        self.executor_threads = int(get("threads"))  # run_node's executor
        self.queue = QueueOperator(
            timeout_s=float(get("timeout_s")), safe_default=safe_default, kb=self.kb,
            task=str(get("task")), max_description_chars=int(get("max_description_chars")),
            on_change=self._publish_pending)
        # With a knowledge base, a question answered before (e.g. before a restart) is answered
        # from it and not put to the operator again.
        self.operator: Any = self.queue
        if self.kb is not None and bool(get("remember_answers")):
            from task_learning.oversight.memory import RememberingOperator

            self.operator = RememberingOperator(self.queue, self.kb, str(get("task")))
        group = ReentrantCallbackGroup()
        self.pending_pub = self.create_publisher(PendingMsg, str(get("pending_topic")), latched())
        self.create_service(Confirm, CONFIRM_SERVICE, self._on_confirm, callback_group=group)
        self.create_service(AnswerConfirmation, ANSWER_SERVICE, self._on_answer, callback_group=group)
        self.create_service(ListPendingConfirmations, LIST_SERVICE, self._on_list, callback_group=group)
        self._publish_pending()
        self.get_logger().info(
            f"oversight ready: timeout {self.queue.timeout_s:g} s, safe default "
            f"{self.queue.safe_default.value}, db {db_path or '(none)'}")

    def _publish_pending(self) -> None:
        # Serialised, and the list read under the lock: with several Confirm threads, the last
        # message published is always the current queue (never an older snapshot published late).
        with self._publish_lock:
            queue = getattr(self, "queue", None)
            msg = PendingMsg()
            msg.pending = [convert.confirmation_request_to_msg(r)
                           for r in (queue.pending() if queue else [])]
            self.pending_pub.publish(msg)

    def _on_confirm(self, request: Confirm.Request, response: Confirm.Response) -> Confirm.Response:
        try:
            question = convert.confirmation_request_from_msg(request.request)
        except (ValueError, KeyError, TypeError) as exc:
            # A malformed question is not put to anyone, and is never consent.
            self.get_logger().error(f"malformed confirmation request refused: {exc}")
            bad = ConfirmationRequest(request.request.request_id or "malformed", "")
            response.answer = convert.confirmation_answer_to_msg(timeout_answer(bad))
            return response
        if not question.request_id:
            import uuid

            question.request_id = uuid.uuid4().hex[:16]
        self.get_logger().info(f"asking [{question.request_id}] {question.question}")
        answer = self.operator.ask(question)
        self.get_logger().info(f"[{answer.request_id}] answered {answer.answer.value} by {answer.operator}")
        response.answer = convert.confirmation_answer_to_msg(answer)
        return response

    def _on_answer(self, request: AnswerConfirmation.Request,
                   response: AnswerConfirmation.Response) -> AnswerConfirmation.Response:
        msg = request.answer
        result = self.queue.submit(msg.request_id, msg.answer, msg.description,
                                   msg.answered_by or "operator")
        if not result.accepted:
            self.get_logger().warning(f"answer refused: {result.message}")
        response.accepted = result.accepted
        response.message = result.message
        return response

    def _on_list(self, _request: ListPendingConfirmations.Request,
                 response: ListPendingConfirmations.Response) -> ListPendingConfirmations.Response:
        response.pending = [convert.confirmation_request_to_msg(r) for r in self.queue.pending()]
        return response

    def release_waiters(self) -> None:
        """Before the executor stops: questions still waiting get the safe default, never consent."""
        queue = getattr(self, "queue", None)
        if queue is not None:
            queue.close()

    def destroy_node(self) -> None:
        queue = getattr(self, "queue", None)  # absent when the parameters were refused
        if queue is not None:
            queue.close()  # waiting callers get the safe default, never consent
        kb = getattr(self, "kb", None)
        if kb is not None:
            kb.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    return run_node(OversightNode, args, name="oversight")


if __name__ == "__main__":
    raise SystemExit(main())
