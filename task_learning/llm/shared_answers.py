"""Answers shared across the runs of one experiment: a real model asked the same prompt at
temperature 0 again gives the same answer, so the conditions of a table need not pay for it twice.

The STARS paper's Table 2 runs seven conditions on one scene from fresh knowledge bases. ST, STS, STAR,
STARS and STARS+O send the same search-tree prompts for the same objects (STARS adds repair and
selection prompts to ST's); on a 2-core machine each call to a local model costs about a second.
`SharingProvider` wraps one run's provider: a request whose server-visible part (model, prompt or
messages, max_tokens, temperature, logprobs, stop) was answered before, in any run that shares
the same `SharedAnswers`, is answered with that answer; the others go to the model.

What stays honest:
- Only temperature-0 requests are shared (TBP's samples at higher temperatures are drawn anew by
  every run, as the paper's would be).
- The key is what the server reads, not the stack's `context` (a real model never sees it): two
  conditions that build the same prompt get one answer, as they would from a deterministic model.
- A shared answer carries the token counts the server reported when it was first asked, and the
  client counts it as a call like any other: a condition's token columns are what that condition
  sent, whichever run paid for it. `served` and `asked` say how many of a run's calls came from the
  shared answers and how many reached the model; the experiment prints both.
- Only successful answers are kept: a failure is asked again.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field

from task_learning.llm.base import LLMProvider, LLMRequest, LLMResponse
from task_learning.llm.codec import copy_response


def server_key(request: LLMRequest, model: str) -> str | None:
    """The key of what a server reads from this request; None for a request that is not shared
    (temperature above 0)."""
    if request.temperature > 0:
        return None
    payload = {"model": model, "prompt": request.prompt, "messages": [list(m) for m in request.messages],
               "max_tokens": request.max_tokens, "logprobs": request.logprobs, "stop": list(request.stop)}
    if request.constraint is not None:  # a grounded request is another question than a free one
        payload["constraint"] = list(request.constraint.key())
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass
class SharedAnswers:
    """The answers of every run of one experiment, by `server_key`. Thread-safe."""

    _answers: dict[str, LLMResponse] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)

    def get(self, key: str | None) -> LLMResponse | None:
        if key is None:
            return None
        with self._lock:
            found = self._answers.get(key)
        return copy_response(found, cached=False) if found is not None else None

    def put(self, key: str | None, response: LLMResponse) -> None:
        if key is None or not response.ok:
            return
        with self._lock:
            self._answers.setdefault(key, copy_response(response, cached=False))


class SharingProvider:
    """One run's provider, answering from `answers` what an earlier request (of any run) asked.

    Offers `complete_batch` and `batch_key` when the wrapped provider does, so list prompts stay
    lists: the shared part of a list is answered here and only the rest goes to the model."""

    def __init__(self, inner: LLMProvider, answers: SharedAnswers) -> None:
        self.inner = inner
        self.answers = answers
        self.name = inner.name
        self.model = getattr(inner, "model", "")
        self.served = 0  # requests answered from the shared answers
        self.asked = 0  # requests sent to the model
        self._lock = threading.Lock()
        if callable(getattr(inner, "complete_batch", None)):
            self.complete_batch = self._complete_batch
        if callable(getattr(inner, "batch_key", None)):
            self.batch_key = inner.batch_key  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"SharingProvider({self.inner!r}, shared={len(self.answers)})"

    def model_for(self, request: LLMRequest) -> str:
        pick = getattr(self.inner, "model_for", None)
        return str(pick(request)) if callable(pick) else str(self.model)

    def uses_chat(self, request: LLMRequest) -> bool:
        pick = getattr(self.inner, "uses_chat", None)
        return bool(pick(request)) if callable(pick) else False

    def redact(self, text: str) -> str:
        redact = getattr(self.inner, "redact", None)
        return str(redact(text)) if callable(redact) else text

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        key = server_key(request, self.model_for(request))
        found = self.answers.get(key)
        if found is not None:
            self._count(served=1)
            return found
        response = self.inner.complete(request, timeout_s)
        self._count(asked=1)
        self.answers.put(key, response)
        return response

    def _complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        keys = [server_key(r, self.model_for(r)) for r in requests]
        answers: list[LLMResponse | None] = [self.answers.get(k) for k in keys]
        missing = [i for i, a in enumerate(answers) if a is None]
        if missing:
            asked = [requests[i] for i in missing]
            if len(asked) == 1:
                fresh = [self.inner.complete(asked[0], timeout_s)]
            else:
                fresh = list(self.inner.complete_batch(asked, timeout_s))  # type: ignore[attr-defined]
                if len(fresh) != len(asked):
                    return fresh  # the client sees the miscount and treats it as a refused list
            for i, response in zip(missing, fresh):
                answers[i] = response
                self.answers.put(keys[i], response)
        self._count(served=len(requests) - len(missing), asked=len(missing))
        return [a if a is not None else LLMResponse(text="", error="no answer") for a in answers]

    def _count(self, *, served: int = 0, asked: int = 0) -> None:
        with self._lock:
            self.served += served
            self.asked += asked

    def close(self) -> None:
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()
