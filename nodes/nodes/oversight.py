"""oversight_node: the operator's side of STARS+O as ROS services.

- `oversight/confirm` (Confirm): a stack node asks; the call blocks until a paired operator
  answers, or until the question's timeout, which answers with the configured safe default (never
  "yes"). Only the stack's nodes may ask: a request not signed with the stack key (or a replayed
  one) is refused at once. The node issues each question its own unguessable id, and a paired
  operator's yes or description a confirmation id that the planner checks before it executes.
- `oversight/answer` (AnswerConfirmation): a paired operator answers a pending question; the
  answer must be signed with that operator's key (task_learning.oversight.pairing). Bad answers
  (not paired, unknown/expired/withdrawn id, empty or oversized description) are refused with a
  message and leave the queue as it was. `answered_by` is the operator the signature proves.
- `oversight/check_confirmation` (CheckConfirmation): the planner checks (and uses up) a
  confirmation id; `oversight/withdraw` (WithdrawConfirmation): an asker whose goal was cancelled
  withdraws its question.
- `oversight/list_pending` (ListPendingConfirmations), and the pending questions published
  (latched, PendingConfirmations) on `oversight/pending` whenever the queue changes.

Every question and its answer are persisted in the SQLite knowledge base (`db_path`) with their
provenance: who answered (the paired operator), through which client, when, and the confirmation
id. Operators are paired in that knowledge base; without one nothing can be confirmed. The logic
is in task_learning.oversight (pending, confirmations, pairing, memory); this file is only the ROS
wiring. A blocking Confirm needs its own executor thread, hence a MultiThreadedExecutor (sized
from max_pending) and a reentrant group; every service keeps `queue_depth` requests, so a burst
is answered (refused when over capacity), never dropped. On SIGINT/SIGTERM `stop_work` resolves
every waiting question before the executor stops.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.episode.bus import EpisodeBus
from task_learning.episode.observe import ObservedOperator
from task_learning.inputs.safe_text import printable
from task_learning.kb.store import DEFAULT_DB, resolve_db_path
from task_learning.lifecycle.signals import StopSignals
from task_learning.oversight import pairing
from task_learning.oversight.confirmations import ConfirmationLedger
from task_learning.oversight.operator import RelayOperator, timeout_answer
from task_learning.oversight.pending import QueueOperator, parse_safe_default, refused_answer
from task_learning.types import ConfirmationRequest
from task_learning_interfaces.srv import (
    AnswerConfirmation,
    CheckConfirmation,
    Confirm,
    ListPendingConfirmations,
    WithdrawConfirmation,
)
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.oversight_names import (
    ANSWER_SERVICE,
    CHECK_SERVICE,
    CONFIRM_SERVICE,
    LIST_SERVICE,
    PENDING_TOPIC,
    WITHDRAW_SERVICE,
    PendingMsg,
)
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param
from task_learning_nodes.plumbing.qos import SERVICE_DEPTH, latched, service_qos


class Parameters(NodeParameters):
    """The oversight node's parameters (config/nodes/oversight.yaml)."""

    timeout_s: float = param(120.0, "Seconds a question waits for the operator when the request sets no "
                             "timeout of its own (at most max_timeout_s)", min=0.1, max=86400.0)
    max_timeout_s: float = param(600.0, "Longest a question may wait, whatever a request asks for",
                                 min=0.1, max=86400.0)
    max_pending: int = param(8, "Questions that may wait at once; a Confirm request beyond them is "
                             "refused at once", min=1, max=1000)
    max_pending_per_asker: int = param(4, "Waiting places one asking node may hold (0: max_pending), so "
                                       "one asker's flood never shuts out another's questions", min=0, max=1000)
    # Dynamic: an unquoted YAML `yes`/`no` arrives as a bool; it is refused or read as "no".
    safe_default: Any = param("no", "What an unanswered question resolves to: no or timeout; never yes "
                              "(refused at start)", dynamic_typing=True)
    db_path: str = param(DEFAULT_DB, "SQLite knowledge base where every question and answer is "
                         "persisted and operators are paired; default $ROS_HOME/task_learning/task_learning.sqlite, "
                         "the planner's; empty: nothing persisted and no operator can be paired (nothing is "
                         "confirmed); relative paths are relative to the node's working directory")
    task: str = param("", "Task name stored with each question")
    max_description_chars: int = param(2000, "Longest goal description accepted, in characters",
                                       min=1, max=1000000)
    pending_topic: str = param(PENDING_TOPIC, "Topic where the pending questions are published, latched, "
                               "for panels")
    threads: int = param(8, "Executor threads (at least max_pending + 2: each waiting Confirm call "
                         "holds one)", min=2, max=1024)
    remember_answers: bool = param(True, "With a db: a question a paired operator answered before (also "
                                   "before a restart) for the same asking node is answered from the knowledge base instead "
                                   "of being asked again")
    stack_key_file: str = param("", "File of the key the stack's nodes sign questions with (created "
                                "0600 when absent); empty: $ROS_HOME/task_learning/stack.key")
    confirmation_ttl_s: float = param(300.0, "Seconds a confirmation id stays valid after its answer "
                                      "(it is also withdrawn with its question and lost when this node restarts)",
                                      min=1.0, max=86400.0)
    operators: str = param("", "Comma-separated names of the paired operators who may answer here (e.g. "
                           "'alice,panel'); empty: every operator paired in the knowledge base")
    queue_depth: int = param(SERVICE_DEPTH, "Requests each service keeps while the node is busy: a "
                             "burst up to this many is answered (refused when over capacity), never dropped",
                             min=10, max=100000)


MAX_ID_CHARS = 64
MAX_QUESTION_CHARS = 2000
MAX_CANDIDATES = 64
MAX_SIGNED_TEXT = 200  # asker, nonce, reason, client


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
        params = declare_parameters(self, Parameters)
        self._publish_lock = threading.Lock()
        safe_default = parse_safe_default(params.safe_default, file="oversight parameters")
        self.stack_key = pairing.StackKey.load_or_create(params.stack_key_file or None)
        self.nonces = pairing.NonceGuard()
        self.kb = None
        self.registry: pairing.OperatorRegistry | None = None
        db_path = resolve_db_path(str(params.db_path or ""))
        if db_path:
            from task_learning.kb.store import KnowledgeBase

            self.kb = KnowledgeBase(db_path)
            self.registry = pairing.OperatorRegistry(self.kb)
        self.ledger = ConfirmationLedger(params.confirmation_ttl_s)
        self.allowed_operators = frozenset(n.strip() for n in params.operators.split(",") if n.strip())
        self.queue = QueueOperator(
            timeout_s=params.timeout_s, safe_default=safe_default, kb=self.kb,
            task=params.task, max_description_chars=params.max_description_chars,
            on_change=self._publish_pending, max_timeout_s=params.max_timeout_s,
            max_pending=params.max_pending, max_pending_per_asker=params.max_pending_per_asker,
            ledger=self.ledger)
        # Every waiting Confirm holds an executor thread; two more than the questions that may
        # wait keep answer/list (and the refusals beyond capacity) served whatever waits.
        self.executor_threads = max(params.threads, self.queue.max_pending + 2)
        # Each question and its answer (and the knowledge base's writes) on the graph: recorders,
        # the live view (task_learning.episode).
        from task_learning.episode import messages as episode_msgs
        from task_learning.episode.observe import kb_observer
        from task_learning_nodes.plumbing.episode_topics import RosSink

        self._episode = EpisodeBus([RosSink(self, {episode_msgs.QUESTION, episode_msgs.ANSWER,
                                                   episode_msgs.KB_CHANGES})])
        if self.kb is not None:
            self.kb.on_change = kb_observer(self._episode)
        # With a knowledge base, a question answered before (e.g. before a restart) is answered
        # from it and not put to the operator again (only its own asker's, answered by a paired
        # operator: task_learning.oversight.memory).
        self.operator: RelayOperator = self.queue
        if self.kb is not None and params.remember_answers:
            from task_learning.oversight.memory import RememberingOperator

            self.operator = RememberingOperator(self.queue, self.kb, params.task, ledger=self.ledger)
        self.operator = ObservedOperator(self.operator, self._episode)  # questions and answers on the graph
        group = ReentrantCallbackGroup()
        qos = service_qos(params.queue_depth)
        self.pending_pub = self.create_publisher(PendingMsg, params.pending_topic, latched())
        for srv, name, callback in ((Confirm, CONFIRM_SERVICE, self._on_confirm),
                                    (AnswerConfirmation, ANSWER_SERVICE, self._on_answer),
                                    (ListPendingConfirmations, LIST_SERVICE, self._on_list),
                                    (CheckConfirmation, CHECK_SERVICE, self._on_check),
                                    (WithdrawConfirmation, WITHDRAW_SERVICE, self._on_withdraw)):
            self.create_service(srv, name, callback, qos_profile=qos, callback_group=group)
        self._publish_pending()
        operators = len(self.registry.operators()) if self.registry is not None else 0
        self.get_logger().info(
            f"oversight ready: timeout {self.queue.timeout_s:g} s (at most "
            f"{self.queue.max_timeout_s:g}), at most {self.queue.max_pending} waiting "
            f"({self.queue.max_pending_per_asker} per asker), safe default "
            f"{self.queue.safe_default.value}, db {db_path or '(none)'}, {operators} paired "
            f"operator(s){'' if operators else ': pair one with `task-learning operator --pair`'}"
            f"{', answering: ' + ', '.join(sorted(self.allowed_operators)) if self.allowed_operators else ''}")

    def diagnostics(self) -> list[Any]:
        """/diagnostics: the operator's queue and the knowledge base answers are kept in."""
        from task_learning_nodes.plumbing.diagnostics import kb_check, queue_check

        checks = [queue_check(len(self.queue.pending()))]
        if self.kb is not None:
            checks.append(kb_check(self.kb.path))
        return checks

    def _publish_pending(self) -> None:
        # Serialised, and the list read under the lock: with several Confirm threads, the last
        # message published is always the current queue (never an older snapshot published late).
        with self._publish_lock:
            queue = getattr(self, "queue", None)
            msg = PendingMsg()
            msg.stamp = convert.time_to_msg(time.time())
            msg.pending = [convert.confirmation_request_to_msg(r)
                           for r in (queue.pending() if queue else [])]
            self.pending_pub.publish(msg)

    def _refuse_confirm(self, response: Confirm.Response, request_id: str, why: str) -> Confirm.Response:
        """A question not put to anyone: a timeout whose description says why (never consent)."""
        self.get_logger().warning(f"confirmation request refused: {why}", throttle_duration_sec=1.0)
        response.answer = convert.confirmation_answer_to_msg(
            refused_answer(ConfirmationRequest(printable(request_id, MAX_ID_CHARS), ""), why))
        return response

    def _signed_by_stack(self, kind: str, asker: str, nonce: str, sent_at: float, signature: str,
                         fields: tuple[str, ...]) -> str:
        """"" when a stack node signed this request now (not a replay); else why not."""
        if not asker or len(asker) > MAX_SIGNED_TEXT or printable(asker) != asker:
            return f"{kind}: only the stack's nodes may ask (no asker named)"
        if not self.stack_key.verify(signature, *fields):
            return f"{kind}: not signed with the stack key (only the stack's nodes may ask)"
        stale = self.nonces.check(nonce, sent_at)
        return f"{kind}: {stale}" if stale else ""

    def _on_confirm(self, request: Confirm.Request, response: Confirm.Response) -> Confirm.Response:
        try:
            question = convert.confirmation_request_from_msg(request.request)
        except (ValueError, KeyError, TypeError) as exc:
            # A malformed question is not put to anyone, and is never consent.
            self.get_logger().error(f"malformed confirmation request refused: {exc}")
            bad = ConfirmationRequest(printable(request.request.request_id, MAX_ID_CHARS) or "malformed", "")
            response.answer = convert.confirmation_answer_to_msg(timeout_answer(bad))
            return response
        problem = _request_problem(question)
        if problem:
            return self._refuse_confirm(response, question.request_id, problem)
        fields = pairing.confirm_fields(request.asker, request.nonce, request.sent_at, question)
        unsigned = self._signed_by_stack("Confirm", request.asker, request.nonce, request.sent_at,
                                         request.signature, fields)
        if unsigned:
            return self._refuse_confirm(response, question.request_id, unsigned)
        asker_request_id = question.request_id
        question.request_id = pairing.new_nonce()  # the node's own id: unguessable, never reused
        question.asked_by = request.asker
        self.get_logger().info(f"asking [{question.request_id}] for {request.asker}: {question.question}")
        answer = self.operator.ask(question, asker=request.asker, asker_request_id=asker_request_id)
        self.get_logger().info(f"[{answer.request_id}] answered {answer.answer.value} by "
                               f"{answer.operator or '-'} via {answer.client or '-'}")
        response.answer = convert.confirmation_answer_to_msg(answer)
        response.question_id = question.request_id
        response.signature = self.stack_key.sign(*pairing.confirm_reply_fields(
            request.nonce, question.request_id, answer.answer.value, answer.description, answer.operator,
            answer.confirmation_id))
        return response

    def _on_answer(self, request: AnswerConfirmation.Request,
                   response: AnswerConfirmation.Response) -> AnswerConfirmation.Response:
        msg = request.answer
        response.accepted = False
        if (len(msg.request_id) > MAX_ID_CHARS or len(msg.answered_by) > MAX_ID_CHARS
                or len(msg.client) > MAX_SIGNED_TEXT):
            response.message = (f"request_id and answered_by: at most {MAX_ID_CHARS} characters, client "
                                f"at most {MAX_SIGNED_TEXT}")
            return response
        if self.registry is None:
            response.message = ("refused: no operator can be paired (the oversight node has no "
                                "knowledge base, db_path); nothing is confirmed")
        elif self.allowed_operators and msg.answered_by not in self.allowed_operators:
            response.message = (f"refused: operator {printable(msg.answered_by, MAX_ID_CHARS)!r} may not answer here "
                                f"(the oversight node's operators: {', '.join(sorted(self.allowed_operators))})")
        elif not self.registry.verify_answer(request.signature, msg.request_id, msg.answer, msg.description,
                                             msg.answered_by, msg.client):
            response.message = (f"refused: not signed by a paired operator (answered_by "
                                f"{printable(msg.answered_by, MAX_ID_CHARS)!r}); pair with "
                                f"`task-learning operator --pair`")
        else:
            result = self.queue.submit(msg.request_id, msg.answer, msg.description, msg.answered_by,
                                       client=printable(msg.client, MAX_SIGNED_TEXT), verified=True)
            response.accepted = result.accepted
            response.message = result.message
        if not response.accepted:
            self.get_logger().warning(f"answer refused: {response.message}", throttle_duration_sec=1.0)
        return response

    def _on_list(self, _request: ListPendingConfirmations.Request,
                 response: ListPendingConfirmations.Response) -> ListPendingConfirmations.Response:
        response.pending = [convert.confirmation_request_to_msg(r) for r in self.queue.pending()]
        return response

    def _on_check(self, request: CheckConfirmation.Request,
                  response: CheckConfirmation.Response) -> CheckConfirmation.Response:
        fields = pairing.check_fields(request.asker, request.nonce, request.sent_at,
                                      request.confirmation_id, request.consume)
        unsigned = self._signed_by_stack("CheckConfirmation", request.asker, request.nonce,
                                         request.sent_at, request.signature, fields)
        issued, why = (None, unsigned) if unsigned else self.ledger.check(
            request.confirmation_id, consume=bool(request.consume))
        response.valid = issued is not None
        response.message = why or "valid"
        candidate = None
        if issued is not None:
            candidate = issued.candidate
            response.question_id = issued.question_id
            response.question = issued.question
            response.asked_by = issued.asker
            response.answer = issued.answer.value
            response.description = issued.description
            response.answered_by = issued.operator
            response.client = issued.client
            response.answered_at = convert.time_to_msg(issued.answered_at)
            response.candidate = [convert.goal_candidate_to_msg(candidate)] if candidate is not None else []
            self.get_logger().info(f"confirmation of [{issued.question_id}] by {issued.operator} "
                                   f"{'used' if request.consume else 'checked'} by {request.asker}")
        else:
            self.get_logger().warning(f"confirmation check refused: {why}", throttle_duration_sec=1.0)
        response.signature = self.stack_key.sign(*pairing.check_reply_fields(
            request.nonce, response.valid, request.confirmation_id, response.question_id, response.answer,
            response.description, response.answered_by, candidate))
        return response

    def _on_withdraw(self, request: WithdrawConfirmation.Request,
                     response: WithdrawConfirmation.Response) -> WithdrawConfirmation.Response:
        reason = printable(request.reason, MAX_SIGNED_TEXT)
        fields = pairing.withdraw_fields(request.asker, request.nonce, request.sent_at,
                                         request.asker_request_id, request.reason)
        unsigned = self._signed_by_stack("Withdraw", request.asker, request.nonce, request.sent_at,
                                         request.signature, fields)
        if unsigned:
            response.withdrawn, response.message = False, unsigned
            return response
        response.withdrawn = self.queue.withdraw(asker=request.asker, asker_request_id=request.asker_request_id,
                                                 reason=reason or "withdrawn by its asker")
        response.message = "withdrawn" if response.withdrawn else "no such question waiting"
        if response.withdrawn:
            self.get_logger().info(f"{request.asker} withdrew its question {request.asker_request_id}: {reason}")
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
