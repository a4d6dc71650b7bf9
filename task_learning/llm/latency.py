"""A provider wrapper adding a fixed delay per call, for benches: with a known per-call latency,
wall time shows directly whether tree levels go out concurrently or one after another."""
from __future__ import annotations

import threading
import time

from task_learning.llm.base import LLMProvider, LLMRequest, LLMResponse


class FixedLatencyProvider:
    """Sleeps `latency_s` (outside any lock, so concurrent calls overlap), then asks `inner`.

    Counts calls and the peak number of calls in flight at once (`max_in_flight`), which is the
    concurrency a bench actually achieved.
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
        self.in_flight = 0
        self.max_in_flight = 0

    def __repr__(self) -> str:
        return f"FixedLatencyProvider({self.inner!r}, latency_s={self.latency_s})"

    def model_for(self, request: LLMRequest) -> str:
        pick = getattr(self.inner, "model_for", None)
        return pick(request) if callable(pick) else self.model

    def redact(self, text: str) -> str:
        redact = getattr(self.inner, "redact", None)
        return redact(text) if callable(redact) else text

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.latency_s)
            return self.inner.complete(request, timeout_s)
        finally:
            with self._lock:
                self.in_flight -= 1

    def close(self) -> None:
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()
