"""The circuit breaker: a dead or refusing endpoint ends the run in seconds, not in minutes of
retries per object.

It opens after `failures` attempts in a row that could not reach the endpoint (connection
refused, no complete answer by the deadline), after `failures` answers in a row that were errors
(an endpoint that fails every call: 5xx after the retries, error bodies, no logprobs), or at once
when no later call can succeed (`open`, for FatalProviderError: refused credentials, a model or
path the endpoint does not have, a local server that died or hangs). Open, every request is
refused without a call (`refusal`). `failures=0`: it never opens by counting.
"""
from __future__ import annotations

import logging
import threading

from task_learning.llm.base import LLMResponse
from task_learning.llm.layers.endpoint import Endpoint

log = logging.getLogger("task_learning.llm.client")


class CircuitBreaker:
    def __init__(self, endpoint: Endpoint, failures: int) -> None:
        if failures < 0:
            raise ValueError(f"breaker_failures must be >= 0, got {failures}")
        self.endpoint = endpoint
        self.failures = int(failures)
        self._lock = threading.Lock()
        self._unreachable_in_row = 0  # attempts that could not reach the endpoint
        self._errors_in_row = 0  # answers that were errors (after retries)
        self._reason = ""

    @property
    def reason(self) -> str:
        """Why the endpoint stopped serving this run; "" while the breaker is closed."""
        with self._lock:
            return self._reason

    def refusal(self) -> str:
        """The error of a request refused because the breaker is open; "" while it is closed."""
        reason = self.reason
        return f"{self.endpoint.name}: not called, the endpoint is unavailable ({reason})" if reason else ""

    def reset(self) -> None:
        """Closed again: the next request calls the endpoint (a long-lived node, before each goal)."""
        with self._lock:
            if self._reason:
                log.info("LLM circuit breaker closed again (was: %s)", self._reason)
            self._reason = ""
            self._unreachable_in_row = 0
            self._errors_in_row = 0

    def note_reached(self) -> None:
        """The endpoint answered (even with a 429 or a 5xx): it can be reached."""
        with self._lock:
            self._unreachable_in_row = 0

    def note_unreachable(self, message: str) -> None:
        with self._lock:
            self._unreachable_in_row += 1
            count = self._unreachable_in_row
        if self.failures and count >= self.failures:
            self.open(f"{count} attempts in a row could not reach it (client.breaker_failures); last: {message}")

    def note_answer(self, response: LLMResponse) -> None:
        """An answer came back from a call: a success ends the count, an error adds to it."""
        if response.ok:
            with self._lock:
                self._errors_in_row = 0
            return
        if self.reason:
            return  # already open: this is one of its refusals
        with self._lock:
            self._errors_in_row += 1
            count = self._errors_in_row
        if self.failures and count >= self.failures:
            self.open(f"{count} calls in a row failed (client.breaker_failures); last: "
                      f"{self.endpoint.redact(response.error)}")

    def open(self, reason: str) -> None:
        with self._lock:
            if self._reason:
                return
            self._reason = f"{self.endpoint.name}: {reason}"
        log.info("LLM circuit breaker open: %s", self._reason)  # callers report it
