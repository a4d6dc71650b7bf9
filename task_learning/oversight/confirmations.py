"""Confirmations that carry their question: the oversight node's ledger.

When a paired operator says yes to (or describes the goal for) a question from one of the stack's
askers, the oversight node issues a confirmation id: 128 random bits, bound to that question, its
candidate goal (text and literals), the operator, the answering client and the time. A node that
executes (the planner) accepts a goal only with a confirmation it checked with the oversight node
for exactly that goal; checking with `consume` uses it up (one yes, one execution). A confirmation
expires `ttl_s` after its answer and is withdrawn with its question, and it lives only in the
oversight node's memory: a restart of that node, a kill of the node that asked, or a kill of the
planner leaves nothing behind that could be executed later.
"""
from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Callable

from task_learning.oversight.answers import goal_sentence_from_words, object_noun
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest, GoalCandidate

DEFAULT_TTL_S = 300.0
MAX_ENTRIES = 10000


@dataclass
class IssuedConfirmation:
    confirmation_id: str
    question_id: str
    question: str
    asker: str
    object_id: str
    answer: AnswerKind  # YES or DESCRIPTION
    description: str  # a description's goal sentence (what the words stand for), "" for a yes
    operator: str
    client: str
    answered_at: float  # seconds since the epoch
    candidate: GoalCandidate | None
    expires_at: float  # on the ledger's clock
    remembered_from: str = ""  # the question id whose answer the node's memory replayed
    used: bool = False


class ConfirmationLedger:
    """Issued confirmations, checked and used up once; thread-safe."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = float(ttl_s)
        self._clock = clock
        self._issued: dict[str, IssuedConfirmation] = {}
        self._lock = threading.Lock()

    def issue(self, request: ConfirmationRequest, answer: ConfirmationAnswer, *, asker: str,
              client: str = "", remembered_from: str = "") -> str:
        """A confirmation id for a yes or a description; "" for any other answer (never issued
        for a no, a timeout or a refusal)."""
        if answer.answer not in (AnswerKind.YES, AnswerKind.DESCRIPTION):
            return ""
        description = answer.description
        if answer.answer is AnswerKind.DESCRIPTION:
            # The goal sentence the operator's words stand for, read as the asking flow reads them
            # (answers.goal_sentence_from_words, about the object asked about): what it covers.
            description = goal_sentence_from_words(description, object_noun(request.object_description)) \
                or description
        confirmation_id = secrets.token_hex(16)
        now = self._clock()
        with self._lock:
            self._forget_expired(now)
            if len(self._issued) >= MAX_ENTRIES:  # bounded: the oldest go first
                for old in list(self._issued)[: len(self._issued) - MAX_ENTRIES + 1]:
                    del self._issued[old]
            self._issued[confirmation_id] = IssuedConfirmation(
                confirmation_id, request.request_id, request.question, asker, request.object_id,
                answer.answer, description, answer.operator, client,
                answer.stamp or time.time(), request.candidate, now + self.ttl_s, remembered_from)
        return confirmation_id

    def check(self, confirmation_id: str, *, consume: bool) -> tuple[IssuedConfirmation | None, str]:
        """The confirmation when it is valid (used up when `consume`), else None and why not."""
        now = self._clock()
        with self._lock:
            self._forget_expired(now)
            issued = self._issued.get(confirmation_id)
            if issued is None:
                return None, ("no such confirmation (never issued by this oversight node, expired "
                              "after its time, or withdrawn with its question)")
            if issued.used:
                return None, "this confirmation was already used (one yes, one execution)"
            if consume:
                issued.used = True
            return issued, ""

    def withdraw_question(self, question_id: str) -> int:
        """Withdraw every confirmation given for the question; how many."""
        with self._lock:
            gone = [k for k, v in self._issued.items() if v.question_id == question_id]
            for key in gone:
                del self._issued[key]
        return len(gone)

    def _forget_expired(self, now: float) -> None:
        for key in [k for k, v in self._issued.items() if v.expires_at <= now]:
            del self._issued[key]
