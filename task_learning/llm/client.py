"""`LLMClient`: the one door every LLM call in the project goes through.

A provider only talks to a model; the client adds what every caller needs and none should write
twice: accounting by prompt type, a response cache, retries with exponential backoff on transient
failures, a timeout per call, a cap on requests per scope (object), a token budget per run, an
optional cassette recorder, and thread safety (STARS sends one tree level concurrently).

`complete` never raises for a provider failure: it returns an `LLMResponse` whose `error` says
what went wrong (a dead endpoint, garbage, a spent budget), counted as a failure in `usage`.

Counting, per prompt type (`client.usage`, a `task_learning.types.LLMUsage`):
* calls: requests handed to the provider (a request retried three times is one call; the retries
  are counted apart in `client.retries`);
* prompt/completion tokens: as reported by successful responses;
* cache_hits: requests answered by the cache (no call, no tokens);
* failures: requests answered with an error, including those refused by the cap or the budget
  (which make no call).

Order: the cache answers first (a hit is free, so it is served even past a cap or budget); then
the scope cap (`request.scope`; the empty scope is a scope like any other) and the token budget
are checked; then the provider is called, retried on TransientProviderError only. The budget is
checked before each call against the tokens already used, so concurrent calls in flight may
overshoot it by at most one call each.

Circuit breaker: after `breaker_failures` attempts in a row that could not reach the endpoint
(connection refused, no complete answer by the deadline), after `breaker_failures` answers in a
row that were errors (an endpoint that fails every call: 5xx after the retries, error bodies, no
logprobs), or at once when no later call can succeed (FatalProviderError: refused credentials, a
model or path the endpoint does not have, a local server that died or hangs), the breaker opens:
every later request fails at once (no call, no retry) and `unavailable` says why. Callers that
run many requests (a STARS run, BCR trials) call `raise_if_unavailable()` between units of work,
so a dead endpoint ends the run in seconds with a clear message and a non-zero exit instead of
minutes of retries per object. A long-lived caller (a ROS node serving goal after goal) calls
`reset_breaker()` before each goal, so an endpoint that came back (a restarted server) is used.
"""
from __future__ import annotations

import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, TypeVar

from task_learning.errors import LLM_UNAVAILABLE, ConfigError, LLMUnavailableError
from task_learning.llm.base import (
    BatchNotSupported,
    ConnectionProviderError,
    FatalProviderError,
    LLMProvider,
    LLMRequest,
    LLMResponse,
    ProviderError,
    TransientProviderError,
    batch_signature,
)
from task_learning.llm.cache import ResponseCache
from task_learning.llm.latency import FixedLatencyProvider
from task_learning.llm.replay import CallRecorder, CassetteRecorder, ReplayProvider
from task_learning.llm.settings import LLMSettings, load_llm_settings
from task_learning.llm.usage import copy_usage, record, usage_diff
from task_learning.types import LLMUsage

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Failed:
    """A round trip that ended without an answer: the error every request in it gets."""

    error: str



class LLMClient:
    """Wraps a provider with accounting, cache, retries, caps and budget. Thread-safe."""

    def __init__(
        self,
        provider: LLMProvider,
        *,
        cache: ResponseCache | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_requests_per_scope: int | None = 1500,
        token_budget: int | None = None,
        recorder: CallRecorder | None = None,
        max_backoff_s: float = 30.0,
        jitter: float = 0.5,
        seed: int = 0,
        max_in_flight: int | None = None,
        max_batch_size: int = 1,
        sleep: Callable[[float], None] = time.sleep,
        breaker_failures: int = 5,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_retries < 0 or backoff_s < 0 or max_backoff_s < 0 or not 0 <= jitter <= 1:
            raise ValueError("max_retries, backoff_s, max_backoff_s must be >= 0 and jitter in [0, 1]")
        self.provider = provider
        self.cache = cache
        self.recorder = recorder
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.jitter = float(jitter)
        self.max_requests_per_scope = int(max_requests_per_scope or 0)  # 0: no cap
        self.token_budget = int(token_budget or 0)  # 0: no budget
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_in_flight) if max_in_flight else None
        self._pending: dict[str, threading.Event] = {}
        self._usage = LLMUsage()
        self._scope_usage: dict[str, LLMUsage] = {}
        self._scope_requests: dict[str, int] = {}
        self._retries: dict[str, int] = {}
        self._refused = {"scope_cap": 0, "token_budget": 0}
        if max_batch_size < 0:
            raise ValueError(f"max_batch_size must be >= 0, got {max_batch_size}")
        self.max_batch_size = int(max_batch_size) or 1  # prompts per round trip (1: no lists)
        self.batches_refused = False  # the provider refused a list once: singles from then on
        self._pool_workers = int(max_in_flight or 32)
        self._pools: dict[str, ThreadPoolExecutor] = {}
        if breaker_failures < 0:
            raise ValueError(f"breaker_failures must be >= 0, got {breaker_failures}")
        self.breaker_failures = int(breaker_failures)  # 0: the breaker never opens
        self._failures_in_row = 0  # attempts that could not reach the endpoint
        self._errors_in_row = 0  # answers that were errors (after retries)
        self._open_reason = ""

    def __repr__(self) -> str:
        model = getattr(self.provider, "model", "")
        return (
            f"LLMClient(provider={getattr(self.provider, 'name', '?')!r}, model={model!r}, "
            f"cache={'on' if self.cache is not None else 'off'}, timeout_s={self.timeout_s}, "
            f"max_retries={self.max_retries}, max_requests_per_scope={self.max_requests_per_scope}, "
            f"token_budget={self.token_budget})"
        )

    # ----------------------------------------------------------------------------------- calls
    def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request (from the cache or the provider). Never raises for provider trouble."""
        if not isinstance(request, LLMRequest):
            raise TypeError(f"LLMClient.complete expects an LLMRequest, got {type(request).__name__}")
        kind = request.prompt_type or "unknown"
        key = request.cache_key(self.provider_name, self.model_for(request))

        owner = False
        if self.cache is not None:
            hit = self._cache_hit(key, kind, request.scope)
            if hit is not None:
                return hit
            # Single flight: identical requests sent concurrently make one call; the others wait
            # for its answer and count as cache hits.
            with self._lock:
                waiting = self._pending.get(key)
                if waiting is None:
                    self._pending[key] = threading.Event()
                    owner = True
            if not owner and waiting is not None:
                waiting.wait()
                hit = self._cache_hit(key, kind, request.scope)
                if hit is not None:
                    return hit
        try:
            return self._complete_uncached(request, kind, key)
        finally:
            if owner:
                with self._lock:
                    self._pending.pop(key).set()

    def _complete_uncached(self, request: LLMRequest, kind: str, key: str) -> LLMResponse:
        refusal = self._breaker_refusal()
        if refusal:
            with self._lock:
                for usage in (self._usage, self._scope(request.scope)):
                    record(usage, kind, failures=1)
            return LLMResponse(text="", error=refusal)
        refusal = self._admit(request, kind)
        if refusal:
            log.warning("LLM request refused (%s): %s", kind, refusal)
            return LLMResponse(text="", error=refusal)

        response = self._call_with_retries(request, kind)
        with self._lock:
            for usage in (self._usage, self._scope(request.scope)):
                record(usage, kind, requests=1)
        self._settle(request, kind, key, response)
        return response

    def _settle(self, request: LLMRequest, kind: str, key: str, response: LLMResponse) -> None:
        """Count one answered call, cache and record it."""
        self._note_answer(response)
        with self._lock:
            for usage in (self._usage, self._scope(request.scope)):
                if response.ok:
                    record(usage, kind, prompt_tokens=response.prompt_tokens,
                           completion_tokens=response.completion_tokens,
                           cached_prompt_tokens=response.cached_prompt_tokens)
                else:
                    record(usage, kind, failures=1)
        if response.ok and self.cache is not None:
            self.cache.put(key, response)
        if self.recorder is not None:  # a cassette that cannot be written ends the run (OutputError)
            self.recorder.record(request, response, provider=self.provider_name, model=self.model_for(request))

    def _admit(self, request: LLMRequest, kind: str) -> str:
        """Reserve a call against the scope cap and the budget; the refusal message, or ""."""
        with self._lock:
            scope = request.scope
            used = self._scope_requests.get(scope, 0)
            refusal = ""
            if self.max_requests_per_scope and used >= self.max_requests_per_scope:
                self._refused["scope_cap"] += 1
                refusal = f"request cap reached: {used} requests for scope {scope!r} (max {self.max_requests_per_scope})"
            elif self.token_budget and self._tokens_used() >= self.token_budget:
                self._refused["token_budget"] += 1
                refusal = f"token budget spent: {self._tokens_used()} of {self.token_budget} tokens used in this run"
            if refusal:
                for usage in (self._usage, self._scope(scope)):
                    record(usage, kind, failures=1)
                return refusal
            self._scope_requests[scope] = used + 1
            for usage in (self._usage, self._scope(scope)):
                record(usage, kind, calls=1)
            return ""

    def _call_with_retries(self, request: LLMRequest, kind: str) -> LLMResponse:
        def send() -> LLMResponse:
            response = self.provider.complete(request, self.timeout_s)
            if not isinstance(response, LLMResponse):
                raise ProviderError(f"provider returned {type(response).__name__}, not an LLMResponse")
            return response

        outcome = self._with_retries(send, kind, f"{kind} call")
        if isinstance(outcome, _Failed):
            return LLMResponse(text="", error=outcome.error)
        if outcome.error:
            log.warning("LLM %s call failed: %s", kind, self._redact(outcome.error))
        return outcome

    def _with_retries(self, send: Callable[[], _T], kind: str, what: str) -> _T | _Failed:
        """`send()` (one round trip, through the concurrency slots), retried with backoff on
        transient failures and fed to the circuit breaker. One loop for single calls and list
        prompts, so both treat a 429, a dead endpoint or a refused key alike. Exceptions other
        than the provider errors below (BatchNotSupported is the caller's) become a _Failed."""
        attempt = 0
        while True:
            refusal = self._breaker_refusal()
            if refusal:  # opened while this call was waiting to retry
                return _Failed(refusal)
            try:
                if self._slots is not None:
                    with self._slots:
                        result = send()
                else:
                    result = send()
                self._note_reached()
                return result
            except BatchNotSupported:
                raise
            except TransientProviderError as exc:
                message = self._redact(str(exc))
                if isinstance(exc, ConnectionProviderError):
                    self._note_unreachable(message)
                else:
                    self._note_reached()  # 429 / 5xx: the endpoint answers
                if self.unavailable:  # this failure opened the breaker: no backoff, no retry
                    return _Failed(f"{self.provider_name}: {message}; {self._breaker_refusal()}")
                if attempt >= self.max_retries:
                    log.warning("LLM %s failed after %d attempt(s): %s", what, attempt + 1, message)
                    return _Failed(f"{self.provider_name}: failed after {attempt + 1} attempt(s): {message}")
                delay = self._backoff(attempt, getattr(exc, "retry_after_s", None))
                with self._lock:
                    self._retries[kind] = self._retries.get(kind, 0) + 1
                log.info("LLM %s: %s; retry %d/%d in %.2f s", what, message, attempt + 1, self.max_retries, delay)
                self._sleep(delay)
                attempt += 1
            except FatalProviderError as exc:
                message = self._redact(str(exc))
                self._open_breaker(message)
                log.info("LLM %s failed: %s", what, message)  # the caller reports why the run stops
                return _Failed(f"{self.provider_name}: {message}")
            except ProviderError as exc:
                message = self._redact(str(exc))
                self._note_reached()
                log.warning("LLM %s failed: %s", what, message)
                return _Failed(f"{self.provider_name}: {message}")
            except Exception as exc:  # a provider bug must not take the caller down
                message = self._redact(f"{type(exc).__name__}: {exc}")
                log.warning("LLM %s: unexpected provider error: %s", what, message)
                return _Failed(f"{self.provider_name}: unexpected error: {message}")

    def _backoff(self, attempt: int, retry_after_s: Any) -> float:
        base = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        with self._lock:
            factor = 1.0 + self.jitter * self._rng.random()
        delay = min(self.max_backoff_s, base * factor)
        if isinstance(retry_after_s, (int, float)) and retry_after_s > 0:
            delay = min(self.max_backoff_s, max(delay, float(retry_after_s)))
        return delay

    # ------------------------------------------------------------------------- circuit breaker
    @property
    def unavailable(self) -> str:
        """Why the endpoint stopped serving this run; "" while the breaker is closed."""
        with self._lock:
            return self._open_reason

    def raise_if_unavailable(self) -> None:
        """LLMUnavailableError when the breaker is open: for loops over many objects or trials."""
        reason = self.unavailable
        if reason:
            raise LLMUnavailableError(f"{LLM_UNAVAILABLE}, run stopped: {reason}")

    def _breaker_refusal(self) -> str:
        reason = self.unavailable
        return f"{self.provider_name}: not called, the endpoint is unavailable ({reason})" if reason else ""

    def reset_breaker(self) -> None:
        """Close the breaker: the next request calls the endpoint again (a long-lived node does
        this before each goal, so a restarted server is used; a run never needs it)."""
        with self._lock:
            if self._open_reason:
                log.info("LLM circuit breaker closed again (was: %s)", self._open_reason)
            self._open_reason = ""
            self._failures_in_row = 0
            self._errors_in_row = 0

    def _note_reached(self) -> None:
        with self._lock:
            self._failures_in_row = 0

    def _note_answer(self, response: LLMResponse) -> None:
        """An answer came back from a call: a success closes the count, an error adds to it, and
        `breaker_failures` errors in a row mean the endpoint fails every call."""
        if response.ok:
            with self._lock:
                self._errors_in_row = 0
            return
        if self._breaker_refusal():
            return  # already open: this is one of its refusals
        with self._lock:
            self._errors_in_row += 1
            count = self._errors_in_row
        if self.breaker_failures and count >= self.breaker_failures:
            self._open_breaker(f"{count} calls in a row failed (client.breaker_failures); last: "
                               f"{self._redact(response.error)}")

    def _note_unreachable(self, message: str) -> None:
        with self._lock:
            self._failures_in_row += 1
            count = self._failures_in_row
        if self.breaker_failures and count >= self.breaker_failures:
            self._open_breaker(f"{count} attempts in a row could not reach it (client.breaker_failures); "
                               f"last: {message}")

    def _open_breaker(self, reason: str) -> None:
        with self._lock:
            if self._open_reason:
                return
            self._open_reason = f"{self.provider_name}: {reason}"
        log.info("LLM circuit breaker open: %s", self._open_reason)  # callers report it

    def _cache_hit(self, key: str, kind: str, scope: str) -> LLMResponse | None:
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            with self._lock:
                for usage in (self._usage, self._scope(scope)):
                    record(usage, kind, cache_hits=1)
        return hit

    # --------------------------------------------------------------------------------- batches
    def complete_many(self, requests: list[LLMRequest]) -> list[LLMResponse]:
        """Answer independent requests (one search-tree level, of one object or of many) with as
        few round trips as the provider allows; answers come back in request order.

        Cache hits and the single flight work as in `complete`; identical requests in the list
        make one call (the others count as cache hits). The rest is admitted one by one (scope
        cap, budget: a whole batch may overshoot the budget), grouped by batch signature (the
        provider's `batch_key`, else `base.batch_signature`) and sent as list-prompt requests of
        at most `max_batch_size` prompts; the chunks of one call go out concurrently. A provider
        without `complete_batch`, or one that refused a list once (`batches_refused`), gets the
        requests one by one, concurrently (bounded by max_in_flight). Never raises for provider
        trouble.
        """
        for request in requests:
            if not isinstance(request, LLMRequest):
                raise TypeError(f"LLMClient.complete_many expects LLMRequests, got {type(request).__name__}")
        answers: list[LLMResponse | None] = [None] * len(requests)
        keys = [r.cache_key(self.provider_name, self.model_for(r)) for r in requests]
        owned: dict[str, int] = {}  # key -> index of the request that makes the call
        later: list[int] = []  # duplicates and requests another thread is already making
        to_send: list[int] = []
        for i, request in enumerate(requests):
            kind = request.prompt_type or "unknown"
            if self.cache is None:
                to_send.append(i)
                continue
            hit = self._cache_hit(keys[i], kind, request.scope)
            if hit is not None:
                answers[i] = hit
                continue
            with self._lock:
                if keys[i] in owned or keys[i] in self._pending:
                    later.append(i)
                    continue
                self._pending[keys[i]] = threading.Event()
            owned[keys[i]] = i
            to_send.append(i)
        try:
            admitted: list[int] = []
            for i in to_send:
                kind = requests[i].prompt_type or "unknown"
                refusal = self._breaker_refusal()
                if refusal:
                    with self._lock:
                        for usage in (self._usage, self._scope(requests[i].scope)):
                            record(usage, kind, failures=1)
                    answers[i] = LLMResponse(text="", error=refusal)
                    continue
                refusal = self._admit(requests[i], kind)
                if refusal:
                    log.warning("LLM request refused (%s): %s", kind, refusal)
                    answers[i] = LLMResponse(text="", error=refusal)
                else:
                    admitted.append(i)
            chunks = self._chunks([(i, requests[i]) for i in admitted])
            sent = self._map(self._send_chunk, [c for _, c in chunks], pool="chunks")
            for (indices, _chunk), responses in zip(chunks, sent):
                for i, response in zip(indices, responses):
                    answers[i] = response
                    self._settle(requests[i], requests[i].prompt_type or "unknown", keys[i], response)
        finally:
            for key in owned:
                with self._lock:
                    self._pending.pop(key).set()
        for i in later:  # now answered by the cache, or asked again if that call failed
            answers[i] = self.complete(requests[i])
        return [a if a is not None else LLMResponse(text="", error="no answer") for a in answers]

    def _chunks(self, items: list[tuple[int, LLMRequest]]) -> list[tuple[list[int], list[LLMRequest]]]:
        """Group by batch signature (first appearance order), then cut into max_batch_size."""
        key_of = getattr(self.provider, "batch_key", None)
        groups: dict[Any, list[tuple[int, LLMRequest]]] = {}
        for n, (i, request) in enumerate(items):
            signature = key_of(request) if callable(key_of) else batch_signature(request)
            groups.setdefault(("single", n) if signature is None else signature, []).append((i, request))
        size = self.max_batch_size
        chunks = []
        for members in groups.values():
            for start in range(0, len(members), size):
                part = members[start:start + size]
                chunks.append(([i for i, _ in part], [r for _, r in part]))
        return chunks

    def _send_chunk(self, chunk: list[LLMRequest]) -> list[LLMResponse]:
        """One round trip for a chunk, or one per request when lists are not possible."""
        batch = getattr(self.provider, "complete_batch", None)
        if len(chunk) == 1 or not callable(batch) or self.batches_refused:
            return self._map(lambda r: self._call_counted(r), chunk)
        responses = self._call_batch_with_retries(chunk)
        if responses is None:  # refused: remembered, and this chunk goes out one by one
            return self._map(lambda r: self._call_counted(r), chunk)
        return responses

    def _call_counted(self, request: LLMRequest) -> LLMResponse:
        kind = request.prompt_type or "unknown"
        response = self._call_with_retries(request, kind)
        with self._lock:
            for usage in (self._usage, self._scope(request.scope)):
                record(usage, kind, requests=1)
        return response

    def _call_batch_with_retries(self, chunk: list[LLMRequest]) -> list[LLMResponse] | None:
        """One list-prompt round trip (retried as a whole on transient failures); None when the
        provider refuses lists (then `batches_refused` is set)."""
        first = chunk[0].prompt_type or "unknown"

        def send() -> list[LLMResponse]:
            responses = self.provider.complete_batch(chunk, self.timeout_s)  # type: ignore[attr-defined]
            if len(responses) != len(chunk) or not all(isinstance(r, LLMResponse) for r in responses):
                raise BatchNotSupported(f"{len(chunk)} prompts answered with {len(responses)} responses")
            return list(responses)

        try:
            outcome = self._with_retries(send, first, f"batch of {len(chunk)}")
        except BatchNotSupported as exc:
            if not exc.permanent:  # this list only (a prompt too long...): its prompts one by one
                log.info("%s refused a list of %d prompts (%s): sending them one by one", self.provider_name,
                         len(chunk), self._redact(str(exc)))
                return None
            with self._lock:
                already, self.batches_refused = self.batches_refused, True
            if not already:
                log.warning("%s refuses a list of prompts (%s): sending requests one by one from now on",
                            self.provider_name, self._redact(str(exc)))
            return None
        responses = ([LLMResponse(text="", error=outcome.error) for _ in chunk] if isinstance(outcome, _Failed)
                     else outcome)
        with self._lock:
            record(self._usage, first, requests=1)
            seen: set[str] = set()
            for request in chunk:  # a round trip counts once for every scope (object) it served
                if request.scope not in seen:
                    seen.add(request.scope)
                    record(self._scope(request.scope), request.prompt_type or "unknown", requests=1)
        return responses

    def _map(self, fn: Callable[[Any], Any], items: list[Any], pool: str = "calls") -> list[Any]:
        """fn over items, concurrently when there is more than one. Chunks and single calls have
        pools of their own: a chunk falling back to single calls waits on the other pool, never on
        its own (no deadlock when every worker is busy)."""
        if len(items) <= 1:
            return [fn(item) for item in items]
        with self._lock:
            if pool not in self._pools:
                self._pools[pool] = ThreadPoolExecutor(max_workers=self._pool_workers,
                                                       thread_name_prefix=f"llm-{pool}")
            executor = self._pools[pool]
        return list(executor.map(fn, items))

    # ------------------------------------------------------------------------------ accounting
    @property
    def provider_name(self) -> str:
        return str(getattr(self.provider, "name", "provider"))

    def model_for(self, request: LLMRequest) -> str:
        """The model that serves a request (providers with several models expose `model_for`)."""
        pick = getattr(self.provider, "model_for", None)
        if callable(pick):
            return str(pick(request))
        return str(getattr(self.provider, "model", ""))

    @property
    def usage(self) -> LLMUsage:
        """A snapshot of the run's usage (a copy: safe to keep and compare)."""
        with self._lock:
            return copy_usage(self._usage)

    def usage_snapshot(self) -> LLMUsage:
        return self.usage

    def usage_since(self, snapshot: LLMUsage) -> LLMUsage:
        """Usage since `snapshot` (from `usage_snapshot()`): for one object handled alone."""
        return usage_diff(self.usage, snapshot)

    def scope_usage(self, scope: str) -> LLMUsage:
        """Usage of one scope (object) only, exact even when objects are handled concurrently."""
        with self._lock:
            return copy_usage(self._scope_usage.get(scope, LLMUsage()))

    def scope_requests(self, scope: str) -> int:
        with self._lock:
            return self._scope_requests.get(scope, 0)

    @property
    def retries(self) -> int:
        with self._lock:
            return sum(self._retries.values())

    def stats(self) -> dict[str, Any]:
        """Usage plus what `LLMUsage` does not hold: retries by type and refusals."""
        with self._lock:
            out = self._usage.to_dict()
            out["retries"] = sum(self._retries.values())
            out["retries_by_type"] = dict(sorted(self._retries.items()))
            out["refused"] = dict(self._refused)
            out["tokens_used"] = self._tokens_used()
            out["token_budget"] = self.token_budget
            out["unavailable"] = self._open_reason
        return out

    def _tokens_used(self) -> int:
        return self._usage.prompt_tokens + self._usage.completion_tokens

    def _scope(self, scope: str) -> LLMUsage:
        return self._scope_usage.setdefault(scope, LLMUsage())

    def _redact(self, text: str) -> str:
        redact = getattr(self.provider, "redact", None)
        return redact(text) if callable(redact) else text

    # -------------------------------------------------------------------------------- lifetime
    def close(self) -> None:
        for executor in self._pools.values():
            executor.shutdown(wait=True)
        for part in (self.cache, self.recorder, self.provider):
            closer = getattr(part, "close", None)
            if callable(closer):
                closer()

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------ factory
MAKE_CLIENT_OPTIONS = (
    "config", "settings", "env",
    "timeout_s", "max_retries", "backoff_s", "max_backoff_s", "jitter", "seed",
    "max_requests_per_scope", "token_budget", "max_in_flight", "max_batch_size", "cache", "record", "latency_s", "sleep",
    "max_response_bytes", "breaker_failures",
    "base_url", "api_key", "completion_model", "selection_model", "selection_api", "offline", "local_server",
)
SPECS = "offline, openai, local, replay:FILE, record:FILE"
# The models by environment (pointing at your own model edits no tracked file); below an explicit
# option, above config/llm.yaml. With `local`, the completion model is a GGUF file to serve.
ENV_COMPLETION_MODEL = "TASK_LEARNING_LLM_MODEL"
ENV_SELECTION_MODEL = "TASK_LEARNING_LLM_SELECTION_MODEL"


def make_client(spec: str | None = None, **options: Any) -> LLMClient:
    """Build a client from a spec and config/llm.yaml.

    spec: "offline" | "openai" | "local" | "replay:FILE" | "record:FILE" (openai, recording every
    real call to FILE); None or "" takes `default` from llm.yaml. "local" starts llama-server with
    the installed model (llm/local_provider.py) and stops it when the client closes, unless a
    base_url (a running server) or a local_server (a LocalServer the caller owns) is given.
    options: config (path of an llm.yaml) or settings (an LLMSettings); env (a mapping instead of
    os.environ); any `client:` value (timeout_s, max_retries, backoff_s, max_backoff_s, jitter,
    seed, max_requests_per_scope, token_budget, max_in_flight, max_batch_size, cache: None/False/"off" | True/
    "memory" | a path | a ResponseCache); record (a cassette path, with any spec); latency_s (wrap
    the provider in FixedLatencyProvider, for benches); openai values base_url, api_key,
    completion_model, selection_model, selection_api (environment: OPENAI_BASE_URL,
    TASK_LEARNING_LLM_MODEL, TASK_LEARNING_LLM_SELECTION_MODEL); offline (options for
    OfflineProvider); local_server.
    Bad specs and options raise ConfigError with a clear message.
    """
    unknown = sorted(set(options) - set(MAKE_CLIENT_OPTIONS))
    if unknown:
        raise ConfigError(None, "make_client", f"unknown option(s) {', '.join(unknown)} (allowed: {', '.join(MAKE_CLIENT_OPTIONS)})")
    settings: LLMSettings = options.get("settings") or load_llm_settings(options.get("config"))
    env: Mapping[str, str] = options["env"] if options.get("env") is not None else os.environ
    spec = (spec or settings.default or "").strip()
    kind, _, argument = spec.partition(":")
    kind = kind.strip().lower()
    record_to = options.get("record")

    if kind == "offline" and not argument:
        provider: Any = _offline_provider(dict(settings.offline) | dict(options.get("offline") or {}))
    elif kind == "openai" and not argument:
        provider = _openai_provider(settings, env, options)
    elif kind == "local" and not argument:
        from task_learning.llm.local_provider import local_provider

        local_options = dict(options)
        local_options.setdefault("completion_model", env.get(ENV_COMPLETION_MODEL))
        provider = local_provider(settings.local, env, local_options)
    elif kind == "record":
        if not argument.strip():
            raise ConfigError(None, "llm", f"'record:' needs a cassette file (record:FILE); expected one of {SPECS}")
        provider = _openai_provider(settings, env, options)
        record_to = argument.strip()
    elif kind == "replay":
        if not argument.strip():
            raise ConfigError(None, "llm", f"'replay:' needs a cassette file (replay:FILE); expected one of {SPECS}")
        provider = ReplayProvider(argument.strip())
    else:
        raise ConfigError(None, "llm", f"unknown LLM provider {spec!r}; expected one of {SPECS}")

    if options.get("latency_s"):
        provider = FixedLatencyProvider(provider, float(options["latency_s"]))

    c = settings.client
    if kind == "local":  # a list of prompts on a few cores takes longer than a hosted call
        c = replace(c, timeout_s=settings.local.timeout_s, max_batch_size=settings.local.max_batch_size)
    pick = lambda name: options[name] if options.get(name) is not None else getattr(c, name)  # noqa: E731
    try:
        return LLMClient(
            provider,
            cache=_make_cache(options["cache"] if "cache" in options else c.cache),
            timeout_s=float(pick("timeout_s")),
            max_retries=int(pick("max_retries")),
            backoff_s=float(pick("backoff_s")),
            max_backoff_s=float(pick("max_backoff_s")),
            jitter=float(pick("jitter")),
            seed=int(pick("seed")),
            max_requests_per_scope=int(pick("max_requests_per_scope")),
            token_budget=int(pick("token_budget")),
            max_in_flight=int(pick("max_in_flight")),
            max_batch_size=int(pick("max_batch_size")),
            recorder=CassetteRecorder(record_to) if record_to else None,
            sleep=options.get("sleep") or time.sleep,
            breaker_failures=int(pick("breaker_failures")),
        )
    except BaseException as exc:
        closer = getattr(provider, "close", None)
        if callable(closer):
            closer()  # a local server started for this client
        if isinstance(exc, (TypeError, ValueError)):
            raise ConfigError(None, "make_client", f"bad client option: {exc}") from None
        raise


def _make_cache(value: Any) -> ResponseCache | None:
    if isinstance(value, ResponseCache):
        return value
    if value is None or value is False or (isinstance(value, str) and value.strip().lower() in ("off", "none", "")):
        return None
    if value is True or (isinstance(value, str) and value.strip().lower() == "memory"):
        return ResponseCache()
    if isinstance(value, (str, Path)):
        return ResponseCache(Path(value))
    raise ConfigError(None, "cache", f"expected off, memory, a file path or a ResponseCache, got {value!r}")


def _offline_provider(options: dict[str, Any]) -> Any:
    # By name through the registry: the offline stand-in sits above llm/ (llm/registry.py), and
    # the openai/replay paths must work without it.
    from task_learning.llm.registry import provider_class

    OfflineProvider = provider_class("offline")
    try:
        return OfflineProvider(**options)
    except TypeError as exc:
        raise ConfigError(None, "offline", f"bad option for the offline provider: {exc}") from None


def _openai_provider(settings: LLMSettings, env: Mapping[str, str], options: Mapping[str, Any]) -> Any:
    from task_learning.llm.openai_provider import OpenAIProvider  # keeps `openai` off other paths

    o = settings.openai
    base_url = options.get("base_url") or env.get("OPENAI_BASE_URL") or o.base_url
    api_key = options.get("api_key") or env.get(o.api_key_env or "OPENAI_API_KEY") or ""
    if not isinstance(base_url, str) or not base_url.strip().lower().startswith(("http://", "https://")):
        from task_learning.llm.http_guard import redact_url

        raise ConfigError(settings.source or None, "openai.base_url",
                          f"expected an http:// or https:// URL, got {redact_url(str(base_url))!r}")
    if not api_key and "api.openai.com" in base_url:
        raise ConfigError(
            settings.source or None, "openai",
            f"no API key: set {o.api_key_env or 'OPENAI_API_KEY'} (or OPENAI_BASE_URL to a local server)",
        )
    selection_api = options.get("selection_api") or o.selection_api
    if selection_api not in ("chat", "completions"):
        raise ConfigError(None, "selection_api", f"expected chat or completions, got {selection_api!r}")
    return OpenAIProvider(
        base_url=base_url,
        api_key=api_key,
        completion_model=options.get("completion_model") or env.get(ENV_COMPLETION_MODEL) or o.completion_model,
        selection_model=options.get("selection_model") or env.get(ENV_SELECTION_MODEL) or o.selection_model,
        selection_api=selection_api,
        selection_prompt_types=o.selection_prompt_types,
        organization=o.organization or None,
        require_logprobs=o.require_logprobs,
        max_response_bytes=int(options.get("max_response_bytes") or settings.client.max_response_bytes),
    )
