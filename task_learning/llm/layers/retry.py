"""One round trip, retried with exponential backoff on transient failures.

Single calls and list prompts go through the same loop, so both treat a 429, a dead endpoint or
a refused key alike: each attempt waits for a concurrency slot (`max_in_flight`), and its outcome
is fed to the circuit breaker. Only TransientProviderError is retried; a FatalProviderError opens
the breaker; any other exception (a provider bug) becomes a `Failed` instead of taking the
caller down. BatchNotSupported is the batcher's to handle and passes through.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from task_learning.llm.base import (
    BatchNotSupported,
    ConnectionProviderError,
    FatalProviderError,
    ProviderError,
    TransientProviderError,
)
from task_learning.llm.layers.breaker import CircuitBreaker
from task_learning.llm.layers.endpoint import Endpoint
from task_learning.llm.layers.usage_counter import UsageCounter

log = logging.getLogger("task_learning.llm.client")
T = TypeVar("T")


@dataclass(frozen=True)
class Failed:
    """A round trip that ended without an answer: the error every request in it gets."""

    error: str


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before retry n (from 0): backoff_s * 2**n, times 1 + jitter * U[0, 1)
    from a seeded generator, at most max_backoff_s; a server's Retry-After is honoured up to
    max_backoff_s."""

    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.backoff_s < 0 or self.max_backoff_s < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("max_retries, backoff_s, max_backoff_s must be >= 0 and jitter in [0, 1]")


class Retrier:
    def __init__(self, endpoint: Endpoint, breaker: CircuitBreaker, counter: UsageCounter, policy: RetryPolicy, *,
                 seed: int = 0, max_in_flight: int | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.endpoint = endpoint
        self.breaker = breaker
        self.counter = counter
        self.policy = policy
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_in_flight) if max_in_flight else None

    def run(self, send: Callable[[], T], kind: str, what: str) -> T | Failed:
        """`send()` until it answers, a retry is not worth it, or the retries are spent."""
        attempt = 0
        while True:
            refusal = self.breaker.refusal()
            if refusal:  # opened while this call was waiting to retry
                return Failed(refusal)
            try:
                result = self._through_slot(send)
            except BatchNotSupported:
                raise
            except TransientProviderError as exc:
                outcome = self._after_transient(exc, attempt, kind, what)
                if outcome is not None:
                    return outcome
                attempt += 1
                continue
            except FatalProviderError as exc:
                message = self.endpoint.redact(str(exc))
                self.breaker.open(message)
                log.info("LLM %s failed: %s", what, message)  # the caller reports why the run stops
                return Failed(f"{self.endpoint.name}: {message}")
            except ProviderError as exc:
                message = self.endpoint.redact(str(exc))
                self.breaker.note_reached()
                log.warning("LLM %s failed: %s", what, message)
                return Failed(f"{self.endpoint.name}: {message}")
            except Exception as exc:  # noqa: BLE001 - a provider bug must not take the caller down
                message = self.endpoint.redact(f"{type(exc).__name__}: {exc}")
                log.warning("LLM %s: unexpected provider error: %s", what, message)
                return Failed(f"{self.endpoint.name}: unexpected error: {message}")
            self.breaker.note_reached()
            return result

    def _through_slot(self, send: Callable[[], T]) -> T:
        if self._slots is None:
            return send()
        with self._slots:
            return send()

    def _after_transient(self, exc: TransientProviderError, attempt: int, kind: str, what: str) -> Failed | None:
        """Feed a transient failure to the breaker; the final outcome, or None after sleeping
        until the next attempt."""
        message = self.endpoint.redact(str(exc))
        if isinstance(exc, ConnectionProviderError):
            self.breaker.note_unreachable(message)
        else:
            self.breaker.note_reached()  # 429 / 5xx: the endpoint answers
        if self.breaker.reason:  # this failure opened the breaker: no backoff, no retry
            return Failed(f"{self.endpoint.name}: {message}; {self.breaker.refusal()}")
        if attempt >= self.policy.max_retries:
            log.warning("LLM %s failed after %d attempt(s): %s", what, attempt + 1, message)
            return Failed(f"{self.endpoint.name}: failed after {attempt + 1} attempt(s): {message}")
        delay = self.backoff(attempt, getattr(exc, "retry_after_s", None))
        self.counter.count_retry(kind)
        log.info("LLM %s: %s; retry %d/%d in %.2f s", what, message, attempt + 1, self.policy.max_retries, delay)
        self._sleep(delay)
        return None

    def backoff(self, attempt: int, retry_after_s: object = None) -> float:
        policy = self.policy
        base = min(policy.max_backoff_s, policy.backoff_s * (2.0 ** attempt))
        with self._rng_lock:
            factor = 1.0 + policy.jitter * self._rng.random()
        delay = min(policy.max_backoff_s, base * factor)
        if isinstance(retry_after_s, (int, float)) and retry_after_s > 0:
            delay = min(policy.max_backoff_s, max(delay, float(retry_after_s)))
        return delay
