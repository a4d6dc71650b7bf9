"""The limits a request must pass before it costs anything: a cap on requests per scope (object;
the empty scope is a scope like any other) and a token budget per run.

The budget is checked before each call against the tokens already used, so calls in flight
together may overshoot it by at most one call each. A cache hit never reaches admission: it is
free, so it is served even past a cap or a budget.
"""
from __future__ import annotations

import threading

from task_learning.llm.base import LLMRequest
from task_learning.llm.layers.usage_counter import UsageCounter


class Admission:
    def __init__(self, counter: UsageCounter, *, max_requests_per_scope: int | None,
                 token_budget: int | None) -> None:
        self.counter = counter
        self.max_requests_per_scope = int(max_requests_per_scope or 0)  # 0: no cap
        self.token_budget = int(token_budget or 0)  # 0: no budget
        self._lock = threading.Lock()
        self._scope_requests: dict[str, int] = {}

    def admit(self, request: LLMRequest, kind: str) -> str:
        """Reserve a call against the cap and the budget (counted as a call); the refusal
        message (counted as a failure), or "" when admitted."""
        scope = request.scope
        with self._lock:
            used = self._scope_requests.get(scope, 0)
            if self.max_requests_per_scope and used >= self.max_requests_per_scope:
                reason = "scope_cap"
                refusal = (f"request cap reached: {used} requests for scope {scope!r} "
                           f"(max {self.max_requests_per_scope})")
            elif self.token_budget and self.counter.tokens_used() >= self.token_budget:
                reason = "token_budget"
                refusal = (f"token budget spent: {self.counter.tokens_used()} of {self.token_budget} "
                           "tokens used in this run")
            else:
                self._scope_requests[scope] = used + 1
                self.counter.count(kind, scope, calls=1)
                return ""
        self.counter.count_refusal(reason)
        self.counter.count(kind, scope, failures=1)
        return refusal

    def scope_requests(self, scope: str) -> int:
        with self._lock:
            return self._scope_requests.get(scope, 0)
