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
Confirm needs its own executor thread, hence a MultiThreadedExecutor (sized from max_pending)
and a reentrant group; run_node runs it, and on SIGINT/SIGTERM `stop_work` resolves every waiting
question before the executor stops.
"""
from __future__ import annotations

import threading
from typing import Any

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.kb.store import DEFAULT_DB, resolve_db_path
from task_learning.oversight.operator import timeout_answer
from task_learning.oversight.pending import QueueOperator, parse_safe_default, refused_answer
from task_learning.safe_text import printable
from task_learning.types import ConfirmationRequest
from task_learning.stop_signals import StopSignals
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
          "timeout of its own (at most max_timeout_s)", min=0.1, max=86400.0),
    Param("max_timeout_s", 600.0, "Longest a question may wait, whatever a request asks for",
          min=0.1, max=86400.0),
    Param("max_pending", 8, "Questions that may wait at once; a Confirm request beyond them is "
          "refused at once", min=1, max=1000),
    # Dynamic: an unquoted YAML `yes`/`no` arrives as a bool; it is refused or read as "no".
    Param("safe_default", "no", "What an unanswered question resolves to: no or timeout; never yes "
          "(refused at start)", dynamic_typing=True),
    Param("db_path", DEFAULT_DB, "SQLite knowledge base where every question and answer is "
          "persisted; default $ROS_HOME/task_learning/task_learning.sqlite, the planner's; empty: not "
          "persisted; relative paths are relative to the node's working directory"),
    Param("task", "", "Task name stored with each question"),
    Param("max_description_chars", 2000, "Longest goal description accepted, in characters",
          min=1, max=1000000),
    Param("pending_topic", PENDING_TOPIC, "Topic where the pending questions are published, latched, "
          "for panels"),
    Param("threads", 8, "Executor threads (at least max_pending + 2: each waiting Confirm call "
          "holds one)", min=2, max=1024),
    Param("remember_answers", True, "With a db: a question answered before (also before a restart) "
          "is answered from the knowledge base instead of being asked again"),
)


MAX_ID_CHARS = 64
MAX_QUESTION_CHARS = 2000
MAX_CANDIDATES = 64


def _request_problem(question: ConfirmationRequest) -> str:
    """Why a Confirm request is not put to the operator (sizes, control characters), or ""."""
    if len(question.request_id) > MAX_ID_CHARS:
        return f"request_id: {len(question.request_id)} characters, at most {MAX_ID_CHARS}"
    if not question.question.strip() or len(question.question) > MAX_QUESTION_CHARS:
        return f"question: must have 1 to {MAX_QUESTION_CHARS} characters"
    if len(question.candidates) > MAX_CANDIDATES:
        return f"candidates: {len(question.candidates)}, at most {MAX_CANDIDATES}"
    for name in ("request_id", "question", "object_id", "object_description"):
        value = getattr(question, name)
        if printable(value) != value or len(value) > MAX_QUESTION_CHARS:
            return f"{name}: control characters are not allowed (or too long)"
    return ""


class OversightNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("oversight", **kwargs)
        get = declare_parameters(self, PARAMETERS).__getitem__
        self._publish_lock = threading.Lock()
        safe_default = parse_safe_default(get("safe_default"), file="oversight parameters")
        self.kb = None
        db_path = resolve_db_path(str(get("db_path") or ""))
        if db_path:
            from task_learning.kb.store import KnowledgeBase

            self.kb = KnowledgeBase(db_path)
        self.queue = QueueOperator(
            timeout_s=float(get("timeout_s")), safe_default=safe_default, kb=self.kb,
            task=str(get("task")), max_description_chars=int(get("max_description_chars")),
            on_change=self._publish_pending, max_timeout_s=float(get("max_timeout_s")),
            max_pending=int(get("max_pending")))
        # Every waiting Confirm holds an executor thread; two more than the questions that may
        # wait keep answer/list (and the refusals beyond capacity) served whatever waits.
        self.executor_threads = max(int(get("threads")), self.queue.max_pending + 2)
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
            f"oversight ready: timeout {self.queue.timeout_s:g} s (at most "
            f"{self.queue.max_timeout_s:g}), at most {self.queue.max_pending} waiting, safe default "
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
        problem = _request_problem(question)
        if problem:
            self.get_logger().error(f"confirmation request refused: {problem}")
            response.answer = convert.confirmation_answer_to_msg(
                refused_answer(ConfirmationRequest(printable(question.request_id, 64), ""), problem))
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
        if len(msg.request_id) > MAX_ID_CHARS or len(msg.answered_by) > MAX_ID_CHARS:
            response.accepted = False
            response.message = f"request_id and answered_by: at most {MAX_ID_CHARS} characters"
            return response
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

    def stop_work(self) -> None:
        """SIGINT/SIGTERM: every waiting question resolves at once (never as consent), so no
        Confirm callback holds the executor's shutdown."""
        self.queue.close()

    def destroy_node(self) -> None:
        queue = getattr(self, "queue", None)  # absent when the parameters were refused
        if queue is not None:
            queue.close()  # waiting callers get the safe default, never consent
        kb = getattr(self, "kb", None)
        if kb is not None:
            kb.close()
        super().destroy_node()


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(OversightNode, args, name="oversight", signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
