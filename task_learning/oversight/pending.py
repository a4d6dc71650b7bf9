"""Questions waiting for a person: the queue behind the ROS oversight node.

`QueueOperator.ask` (called by the node's Confirm service, one thread per caller) enqueues a
question and blocks until a panel, the terminal or a service call answers it through `submit`, or
until its timeout, when it resolves to the configured safe default, which is never "yes".
`submit` validates every answer and says clearly why one is refused (unknown or expired request id,
empty or oversized description, "yes" to a request for words); a refused answer leaves the queue
as it was. `withdraw` ends a question its asker no longer wants answered (a cancelled goal): it
leaves the pending list at once, resolves as a timeout (never consent, never remembered), and a
late answer is refused like one to any closed question. Every question and its resolution are
persisted when a knowledge base is given, with the answer's provenance (operator, client, time,
confirmation id).

Behind the oversight node, questions carry their asker (a stack node whose request was signed),
each asker may hold at most `max_pending_per_asker` of the waiting places (one asker's flood never
shuts out another's questions), and with a `ConfirmationLedger` a verified yes or description is
issued a confirmation id (task_learning.oversight.confirmations).
"""
from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from task_learning.errors import ConfigError
from task_learning.kb import KnowledgeBase
from task_learning.oversight.answers import expected, interpret_reply
from task_learning.oversight.confirmations import ConfirmationLedger
from task_learning.oversight.operator import TIMEOUT_OPERATOR, timeout_answer
from task_learning.oversight.phrasing import count_words
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest

log = logging.getLogger(__name__)

SAFE_DEFAULTS = ("no", "timeout")
DEFAULT_MAX_DESCRIPTION_CHARS = 2000
DEFAULT_MAX_TIMEOUT_S = 600.0
DEFAULT_MAX_PENDING = 8


@dataclass(frozen=True)
class SubmitResult:
    """The reply to an answer: accepted, or refused with a message a person can act on."""

    accepted: bool
    message: str


@dataclass
class _Slot:
    request: ConfirmationRequest
    asked_at: float
    deadline: float
    answer: ConfirmationAnswer | None = None
    asker: str = ""  # the stack node that asked ("" in-process)
    asker_request_id: str = ""  # the asker's own id for it (withdraw names it)
    verified: bool = True  # the answer's operator was verified (a paired operator, or in-process)


def refused_answer(request: ConfirmationRequest, reason: str) -> ConfirmationAnswer:
    """A request the queue will not hold: no consent and no operator's answer (a timeout), with
    the reason in the description."""
    answer = timeout_answer(request)
    answer.description = f"refused: {reason}"
    return answer


def parse_safe_default(value: Any, *, file: str = "<parameters>", key: str = "safe_default") -> AnswerKind:
    """'no' or 'timeout'; anything else (above all 'yes') is a configuration error. YAML reads an
    unquoted yes/no as a bool: False is "no", True is refused like "yes"."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    text = str(value).strip().lower()
    if text not in SAFE_DEFAULTS:
        raise ConfigError(file, key, f"must be one of {', '.join(SAFE_DEFAULTS)} (never 'yes'), "
                                     f"got {value!r}")
    return AnswerKind(text)


class QueueOperator:
    """Thread-safe pending questions, answered from outside; an `Operator` for the flow."""

    name = "queue"

    def __init__(self, *, timeout_s: float = 120.0, safe_default: str | AnswerKind = "no",
                 kb: KnowledgeBase | None = None, task: str = "",
                 max_description_chars: int = DEFAULT_MAX_DESCRIPTION_CHARS,
                 on_change: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 max_timeout_s: float = DEFAULT_MAX_TIMEOUT_S,
                 max_pending: int = DEFAULT_MAX_PENDING, max_pending_per_asker: int = 0,
                 ledger: ConfirmationLedger | None = None) -> None:
        if not math.isfinite(max_timeout_s) or max_timeout_s <= 0:
            raise ConfigError("<parameters>", "max_timeout_s", f"must be a finite number > 0, got {max_timeout_s}")
        if not math.isfinite(timeout_s) or not 0 < timeout_s <= max_timeout_s:
            raise ConfigError("<parameters>", "timeout_s",
                              f"must be > 0 and at most max_timeout_s ({max_timeout_s:g}), got {timeout_s}")
        if max_pending < 1:
            raise ConfigError("<parameters>", "max_pending", f"must be at least 1, got {max_pending}")
        self.timeout_s = float(timeout_s)
        self.max_timeout_s = float(max_timeout_s)
        self.max_pending = int(max_pending)
        # 0: no limit of its own (the total); else each asker's share of the waiting places
        self.max_pending_per_asker = int(max_pending_per_asker) or self.max_pending
        self.ledger = ledger
        self.safe_default = parse_safe_default(
            safe_default.value if isinstance(safe_default, AnswerKind) else safe_default)
        self.kb = kb
        self.task = task
        self.max_description_chars = max_description_chars
        self.on_change = on_change
        self._clock = clock
        self._cond = threading.Condition()
        self._slots: dict[str, _Slot] = {}  # insertion order = asking order
        self._closed = False

    # --- the asking side --------------------------------------------------------------------

    def timeout_for(self, requested: float) -> float:
        """The request's own timeout bounded by `max_timeout_s`; the default when it sets none
        (0, negative or NaN). An infinite timeout is the maximum: no question waits forever."""
        if math.isnan(requested) or requested <= 0:
            return self.timeout_s
        return min(float(requested), self.max_timeout_s)

    def ask(self, request: ConfirmationRequest, *, asker: str = "",
            asker_request_id: str = "") -> ConfirmationAnswer:
        """Enqueue and wait; the operator's answer, or the safe default on timeout/shutdown/
        withdrawal. Beyond `max_pending` waiting questions (or the asker's share of them) a
        request is refused at once (a timeout whose description says why): it never waits, and
        it is not recorded as a question or answer."""
        timeout = self.timeout_for(request.timeout_s)
        with self._cond:
            if self._closed:
                return self._persisted(request, timeout_answer(request, self.safe_default), record=True,
                                       asker=asker)
            if request.request_id in self._slots:
                # Two callers with one id would steal each other's answer: refuse the second.
                log.error("duplicate request id %s refused", request.request_id)
                return refused_answer(request, f"request id {request.request_id!r} is already waiting")
            if len(self._slots) >= self.max_pending:
                log.warning("question %s refused: %d questions already waiting", request.request_id,
                            len(self._slots))
                return refused_answer(request, f"{len(self._slots)} questions are already waiting "
                                               f"for the operator (max_pending {self.max_pending}); "
                                               f"ask again later")
            mine = sum(1 for s in self._slots.values() if s.asker == asker)
            if asker and mine >= self.max_pending_per_asker:
                return refused_answer(request, f"{asker} already has {mine} questions waiting (at most "
                                               f"{self.max_pending_per_asker} per asker); ask again later")
            now = self._clock()
            slot = _Slot(request, now, now + timeout, asker=asker, asker_request_id=asker_request_id)
            self._slots[request.request_id] = slot
        self._record_question(request, asker)
        self._changed()
        with self._cond:
            while slot.answer is None and not self._closed:
                remaining = slot.deadline - self._clock()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, 0.5))
            answer = slot.answer
            closed = bool(self._closed)  # bool: another thread may have closed it meanwhile
            self._slots.pop(request.request_id, None)
        if answer is None and closed:
            log.warning("question %s: not answered, the questions were closed (stopping); safe default %s",
                        request.request_id, self.safe_default.value)
            answer = timeout_answer(request, self.safe_default)
        elif answer is None:
            log.warning("question %s: no answer in %.1f s, safe default %s", request.request_id,
                        timeout, self.safe_default.value)
            answer = timeout_answer(request, self.safe_default)
        elif self.ledger is not None and slot.verified and asker and answer.operator != TIMEOUT_OPERATOR:
            answer.confirmation_id = self.ledger.issue(request, answer, asker=asker, client=answer.client)
        self._persisted(request, answer, record=False, verified=slot.verified)
        self._changed()
        return answer

    def withdraw(self, request_id: str = "", *, asker: str = "", asker_request_id: str = "",
                 reason: str = "withdrawn by its asker") -> bool:
        """End a waiting question unanswered (by its id, or by its asker's own id for it): it
        leaves the pending list, its caller gets a timeout, and a late answer is refused. Any
        confirmation already issued for it is withdrawn too. False when no such question waits."""
        with self._cond:
            slot = self._slots.get(request_id) if request_id else next(
                (s for s in self._slots.values()
                 if asker and s.asker == asker and s.asker_request_id == asker_request_id), None)
            if slot is None:
                return False
            if slot.answer is None:
                slot.answer = timeout_answer(slot.request)
                slot.answer.description = f"withdrawn: {reason}"
                slot.verified = False
            self._slots.pop(slot.request.request_id, None)  # off the list at once
            self._cond.notify_all()
        if self.ledger is not None:
            self.ledger.withdraw_question(slot.request.request_id)
        self._changed()
        return True

    # --- the answering side -----------------------------------------------------------------

    def pending(self) -> list[ConfirmationRequest]:
        """The waiting questions, each with its `deadline` (wall clock) for front ends to count
        down."""
        with self._cond:
            now, wall = self._clock(), time.time()
            return [replace(s.request, deadline=wall + max(0.0, s.deadline - now))
                    for s in self._slots.values() if s.answer is None]

    def submit(self, request_id: str, answer: str | AnswerKind, description: str = "",
               operator: str = "operator", *, client: str = "", verified: bool = True) -> SubmitResult:
        """Answer a pending question: "yes", "no" or "description" (with `description`).
        `verified`: the caller checked who `operator` is (the oversight node: a paired operator's
        signature; in-process: the panel or terminal of this process). `client`: the node the
        answer came through, kept with it.

        A refused answer changes nothing: the question stays pending for a valid answer."""
        kind = self._parse_kind(answer, description)
        if isinstance(kind, SubmitResult):
            return kind
        text = description.strip() if kind is AnswerKind.DESCRIPTION else ""
        if kind is AnswerKind.DESCRIPTION:
            problem = self._description_problem(description)
            if problem:
                return SubmitResult(False, problem)
        if operator == TIMEOUT_OPERATOR:
            return SubmitResult(False, f"operator name {TIMEOUT_OPERATOR!r} is reserved")
        with self._cond:
            slot = self._slots.get(request_id)
            if slot is None or slot.answer is not None:
                return SubmitResult(False, f"no pending question with id {request_id!r} (already "
                                           f"answered, timed out, or never asked); nothing changed")
            if self._clock() >= slot.deadline:
                return SubmitResult(False, f"question {request_id!r} has timed out; nothing changed")
            if slot.request.wants_description and kind is AnswerKind.YES:
                return SubmitResult(False, "this question asks for a goal description: please "
                                           f"{expected(slot.request)}; nothing changed")
            if kind is AnswerKind.DESCRIPTION:
                # Words are read as every front end reads them: "17" is a listed candidate, "no"
                # a no, "maybe" or a yes to a request for words no answer (refused with a hint).
                reply = interpret_reply(slot.request, text)
                if reply.answer is None:
                    return SubmitResult(False, f"{reply.hint} Nothing changed.")
                kind, text = reply.answer, reply.description
            slot.answer = ConfirmationAnswer(request_id, kind, text, operator or "operator",
                                             time.time(), client=client)
            slot.verified = verified
            self._cond.notify_all()
        said = f": {text!r}" if kind is AnswerKind.DESCRIPTION else ""
        return SubmitResult(True, f"answered {request_id} with {kind.value}{said}")

    def close(self) -> None:
        """Shutdown: every waiting question resolves to the safe default."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # --- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _parse_kind(answer: str | AnswerKind, description: str) -> AnswerKind | SubmitResult:
        if isinstance(answer, AnswerKind):
            kind = answer
        else:
            text = str(answer).strip().lower().rstrip(".!")
            if not text and description.strip():
                text = "description"
            try:
                kind = AnswerKind(text)
            except ValueError:
                return SubmitResult(False, f"unknown answer {answer!r}: use yes, no or description")
        if kind is AnswerKind.TIMEOUT:
            return SubmitResult(False, "'timeout' is not an answer an operator can give")
        return kind

    def _description_problem(self, description: str) -> str:
        if not description.strip() or not count_words(description):
            return "empty description: say the goal in words, e.g. 'the goal is that the mug is " \
                   "in the cupboard'"
        if len(description) > self.max_description_chars:
            return (f"description too long ({len(description)} characters, at most "
                    f"{self.max_description_chars}); nothing changed")
        return ""

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception as exc:  # noqa: BLE001 - a failing publisher must not lose an answer
                log.error("pending-question listener failed: %s", exc)

    def _record_question(self, request: ConfirmationRequest, asker: str = "") -> None:
        if self.kb is None:
            return
        try:
            self.kb.record_question(request, task=self.task, context=request.object_description,
                                    asked_by=asker)
        except Exception as exc:  # noqa: BLE001 - the question is still asked; its record is logged lost
            log.error("could not persist question %s: %s", request.request_id, exc)

    def _persisted(self, request: ConfirmationRequest, answer: ConfirmationAnswer, *,
                   record: bool, asker: str = "", verified: bool = False) -> ConfirmationAnswer:
        if self.kb is not None:
            if record:
                self._record_question(request, asker)
            try:
                self.kb.record_answer(answer, client=answer.client, verified=verified,
                                      confirmation_id=answer.confirmation_id)
            except Exception as exc:  # noqa: BLE001 - the answer still reaches the run; its record is logged lost
                log.error("could not persist answer to %s: %s", request.request_id, exc)
        return answer
