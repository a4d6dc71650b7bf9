"""Round trips to the provider, each retried (retry.py) and counted once (`requests`): one
request, or one list of prompts (a search-tree level) in a single completions request."""
from __future__ import annotations

import logging
import threading

from task_learning.llm.base import BatchNotSupported, LLMRequest, LLMResponse, ProviderError
from task_learning.llm.layers.endpoint import Endpoint
from task_learning.llm.layers.retry import Failed, Retrier
from task_learning.llm.layers.usage_counter import UsageCounter

log = logging.getLogger("task_learning.llm.client")


class ProviderCalls:
    def __init__(self, endpoint: Endpoint, retrier: Retrier, counter: UsageCounter, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.endpoint = endpoint
        self.retrier = retrier
        self.counter = counter
        self.timeout_s = float(timeout_s)  # per call; read at each attempt, so a caller may change it
        self.batches_refused = False  # the provider refused a list once: singles from then on
        self._lock = threading.Lock()

    def call(self, request: LLMRequest) -> LLMResponse:
        """One request's round trip (retried); its answer, or a response whose error says why not."""
        kind = request.prompt_type or "unknown"

        def send() -> LLMResponse:
            response = self.endpoint.complete(request, self.timeout_s)
            if not isinstance(response, LLMResponse):
                raise ProviderError(f"provider returned {type(response).__name__}, not an LLMResponse")
            return response

        outcome = self.retrier.run(send, kind, f"{kind} call")
        self.counter.count(kind, request.scope, requests=1)
        if isinstance(outcome, Failed):
            return LLMResponse(text="", error=outcome.error)
        if outcome.error:
            log.warning("LLM %s call failed: %s", kind, self.endpoint.redact(outcome.error))
        return outcome

    def call_list(self, chunk: list[LLMRequest]) -> list[LLMResponse] | None:
        """One list-prompt round trip (retried as a whole on transient failures); None when the
        provider refuses this list (its prompts then go one by one) or lists at all (then
        `batches_refused` is set and every later chunk goes one by one)."""
        first = chunk[0].prompt_type or "unknown"

        def send() -> list[LLMResponse]:
            responses = self.endpoint.complete_batch(chunk, self.timeout_s)
            if len(responses) != len(chunk) or not all(isinstance(r, LLMResponse) for r in responses):
                raise BatchNotSupported(f"{len(chunk)} prompts answered with {len(responses)} responses")
            return list(responses)

        try:
            outcome = self.retrier.run(send, first, f"batch of {len(chunk)}")
        except BatchNotSupported as exc:
            self._refused_list(exc, len(chunk))
            return None
        scopes: dict[str, str] = {}
        for request in chunk:  # a round trip counts once for every scope (object) it served
            scopes.setdefault(request.scope, request.prompt_type or "unknown")
        self.counter.count_round_trip(first, scopes)
        if isinstance(outcome, Failed):
            return [LLMResponse(text="", error=outcome.error) for _ in chunk]
        return outcome

    def _refused_list(self, exc: BatchNotSupported, size: int) -> None:
        name, why = self.endpoint.name, self.endpoint.redact(str(exc))
        if not exc.permanent:  # this list only (a prompt too long...): its prompts one by one
            log.info("%s refused a list of %d prompts (%s): sending them one by one", name, size, why)
            return
        with self._lock:
            already, self.batches_refused = self.batches_refused, True
        if not already:
            log.warning("%s refuses a list of prompts (%s): sending requests one by one from now on", name, why)
