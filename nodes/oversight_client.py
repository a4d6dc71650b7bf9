"""ROS client of the oversight node, for the panel, the terminal CLI and goal elicitation.

`OversightClient` is both a `PanelBackend` (pending / submit) and an `Operator` (ask: the Confirm
service), so `run_oversight` can talk to a person behind the node exactly as to a simulated user.
With no node given it makes its own node and executor and spins them while waiting (the CLI, the
panel's QTimer); given a node, the caller must be spinning it in another thread (a
MultiThreadedExecutor), and the client waits on the futures.

If the node is not there, calls raise `OversightUnavailable` (a TaskLearningError): the flow
treats that as a dead operator, so nothing is confirmed.
"""
from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest
from task_learning_interfaces.msg import ConfirmationAnswer as AnswerMsg
from task_learning_interfaces.srv import AnswerConfirmation, Confirm, ListPendingConfirmations
from task_learning_nodes import convert
from task_learning_nodes.node_base import wait_for_future
from task_learning_nodes.oversight import (
    ANSWER_SERVICE,
    CONFIRM_SERVICE,
    LIST_SERVICE,
    PENDING_TOPIC,
    PendingMsg,
)
from task_learning_nodes.qos import latched


class OversightUnavailable(TaskLearningError):
    """The oversight node did not answer (not running, or the call timed out)."""


@dataclass(frozen=True)
class SubmitReply:
    accepted: bool
    message: str


class OversightClient:
    """Talk to `oversight_node`: list pending questions, answer them, or ask one (Confirm)."""

    def __init__(self, node: Node | None = None, *, name: str = "operator",
                 service_wait_s: float = 5.0, confirm_margin_s: float = 10.0,
                 default_timeout_s: float = 120.0, context: Any = None,
                 namespace: str = "", should_stop: Callable[[], bool] | None = None) -> None:
        self.name = name
        # On a caller's node: a wait also ends when this says so (the caller's goal was
        # cancelled) or the process is shutting down; the flow then confirms nothing.
        self.should_stop = should_stop
        self.service_wait_s = service_wait_s
        self.confirm_margin_s = confirm_margin_s
        self.default_timeout_s = default_timeout_s
        self._own = node is None
        if self._own:
            if not rclpy.ok(context=context):
                rclpy.init(context=context)
            safe = re.sub(r"\W", "_", name) or "operator"
            node = rclpy.create_node(f"oversight_{safe}_{uuid.uuid4().hex[:6]}", context=context,
                                     namespace=namespace or None)
            self._executor: SingleThreadedExecutor | None = SingleThreadedExecutor(context=context)
            self._executor.add_node(node)
        else:
            self._executor = None
        self.node = node
        # Own reentrant group: on a caller's node, the replies must be handled while the caller's
        # callback (e.g. a LearnGoal action) blocks waiting for them in another executor thread.
        group = ReentrantCallbackGroup()
        self._confirm = node.create_client(Confirm, CONFIRM_SERVICE, callback_group=group)
        self._answer = node.create_client(AnswerConfirmation, ANSWER_SERVICE, callback_group=group)
        self._list = node.create_client(ListPendingConfirmations, LIST_SERVICE, callback_group=group)
        self._latest: list[ConfirmationRequest] | None = None
        self._listed_at = 0.0
        self.resync_s = 2.0
        self._lock = threading.Lock()
        self._updated = threading.Condition(self._lock)
        self._updates = 0  # pending-topic messages received (wait_for_update waits for the next)
        node.create_subscription(PendingMsg, PENDING_TOPIC, self._on_pending, latched(),
                                 callback_group=group)

    # --- plumbing ----------------------------------------------------------------------------

    def _on_pending(self, msg: Any) -> None:
        with self._lock:
            self._latest = [convert.confirmation_request_from_msg(m) for m in msg.pending]
            self._updates += 1
            self._updated.notify_all()

    def spin_once(self, timeout_s: float = 0.0) -> None:
        """Let subscriptions run (own executor only; a panel's QTimer calls this)."""
        if self._executor is not None and self.ok():
            self._executor.spin_once(timeout_sec=timeout_s)

    def wait_for_update(self, timeout_s: float) -> bool:
        """Wait until the pending topic brings a new list (True) or `timeout_s` passes (False),
        for a loop that polls the questions: one spin_once is no wait, since it returns at once
        for the wake-up a finished service call leaves behind, so a loop of call + spin_once
        would list the questions as fast as the oversight node can answer."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            seen = self._updates
        while self.ok():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self._executor is not None:
                self._executor.spin_once(timeout_sec=left)
            with self._lock:
                if self._executor is None:  # the caller spins the node in another thread
                    self._updated.wait_for(lambda: self._updates != seen, timeout=left)
                if self._updates != seen:
                    return True
        return False

    def _call(self, client: Any, request: Any, timeout_s: float, what: str) -> Any:
        if not client.wait_for_service(timeout_sec=self.service_wait_s):
            raise OversightUnavailable(f"the oversight node is not running (no service "
                                       f"{client.srv_name} after {self.service_wait_s:g} s)")
        future = client.call_async(request)
        if self._executor is not None:
            self._executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        else:
            waited = wait_for_future(future, timeout_s, alive=client.service_is_ready,
                                     stop=self.should_stop)
            if waited == "stopped":
                future.cancel()
                raise OversightUnavailable(f"{what}: stopped before the oversight node answered")
            if waited == "gone":
                future.cancel()
                raise OversightUnavailable(f"{what}: the oversight node went away before answering")
        if not future.done():
            future.cancel()
            raise OversightUnavailable(f"{what}: no reply from the oversight node in {timeout_s:g} s")
        if future.exception() is not None:
            raise OversightUnavailable(f"{what}: {future.exception()}")
        return future.result()

    # --- PanelBackend --------------------------------------------------------------------------

    def pending(self, *, fresh: bool = False) -> list[ConfirmationRequest]:
        """The questions waiting, oldest first: from the latched topic, or the List service."""
        self.spin_once(0.0)
        now = time.monotonic()
        with self._lock:
            latest = self._latest
        if not fresh:
            ready = self._list.service_is_ready()
            if latest is not None and (now - self._listed_at < self.resync_s or not ready):
                return list(latest)
            if not ready:  # a panel polls: never block its event loop waiting for the node
                raise OversightUnavailable("the oversight node is not running (yet)")
        # First call, a periodic resync in case a topic update was missed, or fresh=True.
        response = self._call(self._list, ListPendingConfirmations.Request(), 5.0, "list")
        listed = [convert.confirmation_request_from_msg(m) for m in response.pending]
        with self._lock:
            self._latest = list(listed)
            self._listed_at = time.monotonic()
        return listed

    def submit(self, request_id: str, answer: str | AnswerKind, description: str = "",
               operator: str = "") -> SubmitReply:
        msg = AnswerMsg()
        msg.request_id = request_id
        msg.answer = answer.value if isinstance(answer, AnswerKind) else str(answer)
        msg.description = description
        msg.answered_by = operator or self.name
        request = AnswerConfirmation.Request()
        request.answer = msg
        response = self._call(self._answer, request, 5.0, "answer")
        if response.accepted:
            with self._lock:  # do not show an answered question until the topic catches up
                if self._latest is not None:
                    self._latest = [r for r in self._latest if r.request_id != request_id]
        return SubmitReply(bool(response.accepted), str(response.message))

    # --- Operator ------------------------------------------------------------------------------

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        """Confirm: blocks until the node answers (an operator's answer or its safe default)."""
        call = Confirm.Request()
        call.request = convert.confirmation_request_to_msg(request)
        wait = (request.timeout_s or self.default_timeout_s) + self.confirm_margin_s
        response = self._call(self._confirm, call, wait, f"question {request.request_id}")
        answer = convert.confirmation_answer_from_msg(response.answer)
        if not answer.stamp:
            answer.stamp = time.time()
        return answer

    def available(self, timeout_s: float) -> bool:
        """Whether the oversight node's Confirm service is there (waiting up to `timeout_s`)."""
        return bool(self._confirm.wait_for_service(timeout_sec=timeout_s))

    def ok(self) -> bool:
        """False once the ROS context is shut down (Ctrl-C, SIGTERM)."""
        return rclpy.ok(context=self.node.context)

    def close(self) -> None:
        if self._own:
            if self._executor is not None:
                self._executor.shutdown()
            try:
                self.node.destroy_node()
            except Exception:  # the context may already be shut down by a signal
                pass
