"""How much of the prompt traffic a server's prefix cache could serve.

Servers with automatic prefix caching (vLLM, llama.cpp's prompt cache, OpenAI's prompt caching)
skip the part of a prompt that starts like a prompt they have already processed. STARS prompts
are long few-shot templates with a short object-specific tail, and a tree's branches differ only
in their last few tokens, so most prompt tokens repeat. `PrefixCacheMeter` wraps a provider and
measures, for the prompts in the order they were sent, the share of characters that lie in the
longest prefix shared with any earlier prompt: what an unbounded prefix cache could serve (real
caches work in blocks of tokens and evict, so they serve somewhat less). Characters stand in for
tokens: the share is the same up to the tokenizer's granularity.
"""
from __future__ import annotations

import bisect
import os
import threading

from task_learning.llm.base import BatchProvider, LLMProvider, LLMRequest, LLMResponse


class PrefixShare:
    """Running share of prompt characters already seen as a prefix of an earlier prompt."""

    def __init__(self) -> None:
        self._sorted: list[str] = []
        self.prompts = 0
        self.chars = 0
        self.cached_chars = 0
        self._lock = threading.Lock()

    def add(self, prompt: str) -> int:
        """Record one prompt; returns how many of its leading characters an ideal cache holds."""
        with self._lock:
            at = bisect.bisect_left(self._sorted, prompt)
            # The longest common prefix with any string of a sorted set is found next to it.
            best = 0
            for neighbour in self._sorted[max(0, at - 1):at + 1]:
                best = max(best, len(os.path.commonprefix([prompt, neighbour])))
            if at >= len(self._sorted) or self._sorted[at] != prompt:
                self._sorted.insert(at, prompt)
            self.prompts += 1
            self.chars += len(prompt)
            self.cached_chars += best
            return best

    @property
    def share(self) -> float:
        return self.cached_chars / self.chars if self.chars else 0.0


def request_text(request: LLMRequest) -> str:
    """What the server tokenizes: the prompt, or the chat messages one after another."""
    return request.prompt if not request.is_chat else "\n".join(f"{r}: {c}" for r, c in request.messages)


class PrefixCacheMeter:
    """A provider wrapper feeding every prompt it forwards (batches in their order) to a
    `PrefixShare`; answers are the inner provider's, unchanged."""

    def __init__(self, inner: LLMProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = getattr(inner, "model", "")
        self.meter = PrefixShare()
        if callable(getattr(inner, "complete_batch", None)):
            self.complete_batch = self._complete_batch
        if callable(getattr(inner, "batch_key", None)):
            self.batch_key = inner.batch_key  # type: ignore[attr-defined]

    def model_for(self, request: LLMRequest) -> str:
        pick = getattr(self.inner, "model_for", None)
        return pick(request) if callable(pick) else self.model

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self.meter.add(request_text(request))
        return self.inner.complete(request, timeout_s)

    def _complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        for request in requests:
            self.meter.add(request_text(request))
        assert isinstance(self.inner, BatchProvider)  # only set up for an inner provider that batches
        return self.inner.complete_batch(requests, timeout_s)

    def close(self) -> None:
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()
