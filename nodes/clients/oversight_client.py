"""ROS client of the oversight node, for the panel, the terminal CLI and goal elicitation.

`OversightClient` is both a `PanelBackend` (pending / submit) and an `Operator` (ask: the Confirm
service), so `run_oversight` can talk to a person behind the node exactly as to a simulated user.
With no node given it makes its own node and executor and spins them while waiting (the CLI, the
panel's QTimer); given a node, the caller must be spinning it in another thread (a
MultiThreadedExecutor), and the client waits on the futures.

If the node is not there, calls raise `OversightUnavailable` (a TaskLearningError): the flow
treats that as a dead operator, so nothing is confirmed.

Identities (task_learning.oversight.pairing): a stack node that asks (`asker`: planner,
goal_elicitation, anticipation) signs its Confirm, CheckConfirmation and Withdraw requests with
the stack key and accepts only replies the oversight node signed for that request; an operator's
client (`credentials`: terminal, panel, rqt, the simulated user) signs its answers with its
paired key. A question whose wait is stopped (the asker's goal was cancelled) is withdrawn.
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
from rclpy.client import Client
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.lifecycle.cancellation import DependencyFailed, RunStopped
from task_learning.oversight import pairing
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest, GoalCandidate
from task_learning_interfaces.msg import ConfirmationAnswer as AnswerMsg
from task_learning_interfaces.srv import (
    AnswerConfirmation,
    CheckConfirmation,
    Confirm,
    ListPendingConfirmations,
    WithdrawConfirmation,
)
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import wait_for_future
from task_learning_nodes.plumbing.oversight_names import (
    ANSWER_SERVICE,
    CHECK_SERVICE,
    CONFIRM_SERVICE,
    LIST_SERVICE,
    PENDING_TOPIC,
    WITHDRAW_SERVICE,
    PendingMsg,
)
from task_learning_nodes.plumbing.qos import latched, service_qos


class OversightUnavailable(TaskLearningError):
    """The oversight node did not answer (not running, or the call timed out), or its reply was
    not signed by it."""


class OversightStopped(OversightUnavailable):
    """The caller stopped waiting (its goal was cancelled, or the process is stopping)."""


class OversightNotAnswering(DependencyFailed):
    """A stack node's question got no (authentic) answer from the oversight node: the goal that
    asked ends naming it, instead of going on to the next object."""


@dataclass(frozen=True)
class SubmitReply:
    accepted: bool
    message: str


@dataclass(frozen=True)
class CheckedConfirmation:
    """The oversight node's word on a confirmation id (a signed reply)."""

    valid: bool
    message: str
    question_id: str = ""
    question: str = ""
    asked_by: str = ""
    answer: str = ""
    description: str = ""
    answered_by: str = ""
    client: str = ""
    answered_at: float = 0.0
    candidate: GoalCandidate | None = None

    def provenance(self) -> dict[str, Any]:
        """What a knowledge base keeps of who confirmed a goal, through which client, when."""
        return {"confirmation": "oversight", "question_id": self.question_id, "question": self.question,
                "asked_by": self.asked_by, "answer": self.answer, "answered_by": self.answered_by,
                "client": self.client, "answered_at": self.answered_at}


class OversightClient:
    """Talk to `oversight_node`: list pending questions, answer them, or ask one (Confirm)."""

    def __init__(self, node: Node | None = None, *, name: str = "operator",
                 service_wait_s: float = 5.0, confirm_margin_s: float = 10.0,
                 default_timeout_s: float = 120.0, context: Context | None = None,
                 namespace: str = "", should_stop: Callable[[], bool] | None = None,
                 asker: str = "", stack_key: pairing.StackKey | None = None,
                 credentials: pairing.OperatorCredentials | None = None) -> None:
        self.name = name
        # A stack node signs what it asks (the key file is read on first use); an operator's
        # client signs its answers.
        self.asker = asker
        self._stack_key = stack_key
        self.credentials = credentials
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
        assert node is not None  # given, or created above
        self.node: Node = node
        # Own reentrant group: on a caller's node, the replies must be handled while the caller's
        # callback (e.g. a LearnGoal action) blocks waiting for them in another executor thread.
        group = ReentrantCallbackGroup()
        qos = service_qos()
        self._confirm: Client = node.create_client(Confirm, CONFIRM_SERVICE, qos_profile=qos, callback_group=group)
        self._answer: Client = node.create_client(AnswerConfirmation, ANSWER_SERVICE, qos_profile=qos,
                                          callback_group=group)
        self._list: Client = node.create_client(ListPendingConfirmations, LIST_SERVICE, qos_profile=qos,
                                        callback_group=group)
        self._check: Client = node.create_client(CheckConfirmation, CHECK_SERVICE, qos_profile=qos,
                                         callback_group=group)
        self._withdraw: Client = node.create_client(WithdrawConfirmation, WITHDRAW_SERVICE, qos_profile=qos,
                                            callback_group=group)
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

    def _call(self, client: Client, request: Any, timeout_s: float, what: str) -> Any:
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
                raise OversightStopped(f"{what}: stopped before the oversight node answered")
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
               operator: str = "", *, credentials: pairing.OperatorCredentials | None = None,
               client_detail: str = "") -> SubmitReply:
        """Answer a pending question as this client's paired operator (the node takes the
        operator from the signature; `operator` is kept for the PanelBackend signature).
        `credentials`: another paired operator's, for this one answer (the web panel serves
        several); `client_detail`: said after the node's name in the client kept with the answer
        (the web page's address)."""
        creds = credentials or self.credentials
        if creds is None:
            return SubmitReply(False, "not paired: this client has no operator token (pair with "
                                      "`task-learning operator --pair`); nothing was sent")
        msg = AnswerMsg()
        msg.request_id = request_id
        msg.answer = answer.value if isinstance(answer, AnswerKind) else str(answer)
        msg.description = description
        msg.answered_by = creds.name
        msg.client = self.node.get_fully_qualified_name() + (f" ({client_detail})" if client_detail else "")
        request = AnswerConfirmation.Request()
        request.answer = msg
        request.signature = creds.sign_answer(msg.request_id, msg.answer, msg.description, msg.client)
        response = self._call(self._answer, request, 5.0, "answer")
        if response.accepted:
            with self._lock:  # do not show an answered question until the topic catches up
                if self._latest is not None:
                    self._latest = [r for r in self._latest if r.request_id != request_id]
        return SubmitReply(bool(response.accepted), str(response.message))

    # --- asking (the stack's nodes) -------------------------------------------------------------

    def stack_key(self) -> pairing.StackKey:
        if self._stack_key is None:
            self._stack_key = pairing.StackKey.load_or_create()
        return self._stack_key

    def _signed(self, request: Any) -> tuple[str, float]:
        request.asker = self.asker or self.name
        request.nonce = pairing.new_nonce()
        request.sent_at = time.time()
        return request.nonce, request.sent_at

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        """Confirm: blocks until the node answers (an operator's answer or its safe default).
        The answer keeps the caller's request id; its `confirmation_id` is the node's for a yes or
        a description. No answer, or a reply the node did not sign for this request, raises
        OversightNotAnswering (the asking goal ends naming the node); a stopped wait withdraws the
        question and raises RunStopped."""
        call = Confirm.Request()
        call.request = convert.confirmation_request_to_msg(request)
        sent = convert.confirmation_request_from_msg(call.request)  # what the node will digest
        nonce, sent_at = self._signed(call)
        key = self.stack_key()
        call.signature = key.sign(*pairing.confirm_fields(call.asker, nonce, sent_at, sent))
        # The node bounds every question's wait (its max_timeout_s); this is the client's net for a
        # node that stops answering: NaN, 0 or negative mean the default, inf a day.
        asked = request.timeout_s
        wait = (min(asked, 86400.0) if asked > 0 else self.default_timeout_s) + self.confirm_margin_s
        try:
            response = self._call(self._confirm, call, wait, f"question {request.request_id}")
        except OversightStopped as exc:
            self.withdraw(request.request_id, "the asker's goal was cancelled")
            raise RunStopped(str(exc)) from None
        except OversightUnavailable as exc:
            raise OversightNotAnswering(f"the oversight node did not answer: {exc}") from None
        reply = response.answer
        if not key.verify(response.signature, *pairing.confirm_reply_fields(
                nonce, response.question_id, reply.answer, reply.description, reply.answered_by,
                reply.confirmation_id)):
            raise OversightNotAnswering(f"question {request.request_id}: the reply was not signed by the "
                                        f"oversight node (another server on oversight/confirm?)")
        answer = convert.confirmation_answer_from_msg(reply)
        answer.request_id = request.request_id
        if not answer.stamp:
            answer.stamp = time.time()
        return answer

    def withdraw(self, asker_request_id: str, reason: str) -> bool:
        """Withdraw a question this node asked (best effort: the question times out otherwise)."""
        call = WithdrawConfirmation.Request(asker_request_id=asker_request_id, reason=reason)
        nonce, sent_at = self._signed(call)
        call.signature = self.stack_key().sign(*pairing.withdraw_fields(call.asker, nonce, sent_at,
                                                                          asker_request_id, reason))
        try:
            if not self._withdraw.service_is_ready():
                return False
            future = self._withdraw.call_async(call)
            if self._executor is not None:
                self._executor.spin_until_future_complete(future, timeout_sec=5.0)
            elif wait_for_future(future, 5.0, alive=self._withdraw.service_is_ready) != "done":
                future.cancel()
                return False
            result = future.result() if future.done() else None
            return bool(result is not None and result.withdrawn)
        except Exception:  # noqa: BLE001 - a withdrawal is a courtesy; the question's own timeout still ends it
            return False

    def check(self, confirmation_id: str, *, consume: bool, timeout_s: float = 10.0) -> CheckedConfirmation:
        """Ask the oversight node whether it issued this confirmation (and use it up when
        `consume`). Raises OversightUnavailable when it does not answer or the reply is not its."""
        call = CheckConfirmation.Request(confirmation_id=confirmation_id, consume=consume)
        nonce, sent_at = self._signed(call)
        key = self.stack_key()
        call.signature = key.sign(*pairing.check_fields(call.asker, nonce, sent_at, confirmation_id, consume))
        response = self._call(self._check, call, timeout_s, "check_confirmation")
        candidate = convert.goal_candidate_from_msg(response.candidate[0]) if response.candidate else None
        if not key.verify(response.signature, *pairing.check_reply_fields(
                nonce, response.valid, confirmation_id, response.question_id, response.answer,
                response.description, response.answered_by, candidate)):
            raise OversightUnavailable("check_confirmation: the reply was not signed by the oversight node")
        return CheckedConfirmation(bool(response.valid), str(response.message), response.question_id,
                                   response.question, response.asked_by, response.answer,
                                   response.description, response.answered_by, response.client,
                                   convert.time_from_msg(response.answered_at), candidate)

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
            except Exception:  # noqa: BLE001 - the context may already be shut down by a signal
                pass


class CheckedOperator:
    """An `Operator` for a stack node's own questions (the planner's: a stored goal nobody
    confirmed, an imported policy, new productions): a yes or a description counts only when the
    oversight node, on a signed check, vouches that a paired operator gave it to this asker's
    question, and it is used up there (one answer, one use). The answer then names the operator
    the node verified. Anything else (no confirmation id, an unknown, used or foreign one) is no
    consent: a timeout whose description says why."""

    def __init__(self, client: OversightClient, *, check_timeout_s: float = 10.0) -> None:
        self.client = client
        self.check_timeout_s = check_timeout_s
        self.name = client.name

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        from task_learning.oversight.operator import timeout_answer

        answer = self.client.ask(request)
        if answer.answer not in (AnswerKind.YES, AnswerKind.DESCRIPTION):
            return answer
        problem = "the oversight node issued no confirmation for it"
        if answer.confirmation_id:
            try:
                checked = self.client.check(answer.confirmation_id, consume=True, timeout_s=self.check_timeout_s)
            except OversightUnavailable as exc:
                raise OversightNotAnswering(f"question {request.request_id}: the oversight node did not "
                                            f"vouch for its answer: {exc}") from None
            asker = self.client.asker or self.client.name
            if checked.valid and checked.asked_by == asker and checked.answer == answer.answer.value:
                answer.operator, answer.client = checked.answered_by, checked.client
                return answer
            problem = checked.message if not checked.valid else "the confirmation is for another question"
        refused = timeout_answer(request)
        refused.description = f"not confirmed: {problem}"
        return refused
