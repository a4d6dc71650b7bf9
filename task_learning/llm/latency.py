"""A provider wrapper adding a fixed delay per round trip, for benches: with a known latency, wall
time shows directly whether tree levels go out concurrently, batched, or one after another.

A list of prompts sent in one request (`complete_batch`) costs one delay, like one HTTP round
trip to a server that answers the whole list in one forward pass; it is offered only when the
wrapped provider can answer lists itself."""
from __future__ import annotations

import threading
import time

from task_learning.llm.base import BatchProvider, LLMProvider, LLMRequest, LLMResponse


class FixedLatencyProvider:
    """Sleeps `latency_s` (outside any lock, so concurrent calls overlap), then asks `inner`.

    Counts calls (prompts), round trips and the peak number of round trips in flight at once
    (`max_in_flight`), which is the concurrency a bench actually achieved.
    """

    def __init__(self, inner: LLMProvider, latency_s: float) -> None:
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        self.inner = inner
        self.latency_s = float(latency_s)
        self.name = inner.name
        self.model = getattr(inner, "model", "")
        self._lock = threading.Lock()
        self.calls = 0
        self.round_trips = 0
        self.in_flight = 0
        self.max_in_flight = 0
        if callable(getattr(inner, "complete_batch", None)):
            self.complete_batch = self._complete_batch
        if callable(getattr(inner, "batch_key", None)):
            self.batch_key = inner.batch_key  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"FixedLatencyProvider({self.inner!r}, latency_s={self.latency_s})"

    def model_for(self, request: LLMRequest) -> str:
        pick = getattr(self.inner, "model_for", None)
        return pick(request) if callable(pick) else self.model

    def redact(self, text: str) -> str:
        redact = getattr(self.inner, "redact", None)
        return redact(text) if callable(redact) else text

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self._enter(1)
        try:
            time.sleep(self.latency_s)
            return self.inner.complete(request, timeout_s)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        self._enter(len(requests))
        try:
            time.sleep(self.latency_s)
            assert isinstance(self.inner, BatchProvider)  # only set up for an inner provider that batches
            return self.inner.complete_batch(requests, timeout_s)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _enter(self, prompts: int) -> None:
        with self._lock:
            self.calls += prompts
            self.round_trips += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def close(self) -> None:
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()
