"""What a client counts, for the run and for each scope (object).

Per prompt type (`LLMUsage`): calls (requests handed to the provider), requests (round trips),
prompt/completion tokens, cache hits and failures; apart from those, retries by prompt type and
refusals by reason (the scope cap, the token budget). Every count is taken under one lock, and
every reading is a copy, safe to keep and compare.
"""
from __future__ import annotations

import threading

from task_learning.llm.base import LLMResponse
from task_learning.llm.usage import copy_usage, record
from task_learning.types import LLMUsage

REFUSALS = ("scope_cap", "token_budget")


class UsageCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._run = LLMUsage()
        self._scopes: dict[str, LLMUsage] = {}
        self._retries: dict[str, int] = {}
        self._refused = dict.fromkeys(REFUSALS, 0)

    def count(self, kind: str, scope: str, **counts: int) -> None:
        """Counts for the run and for `scope`."""
        with self._lock:
            record(self._run, kind, **counts)
            record(self._scope(scope), kind, **counts)

    def count_answer(self, kind: str, scope: str, response: LLMResponse) -> None:
        """An answered call: its tokens when it succeeded, a failure otherwise."""
        if response.ok:
            self.count(kind, scope, prompt_tokens=response.prompt_tokens,
                       completion_tokens=response.completion_tokens,
                       cached_prompt_tokens=response.cached_prompt_tokens)
        else:
            self.count(kind, scope, failures=1)

    def count_round_trip(self, kind: str, scopes: dict[str, str]) -> None:
        """One round trip, counted once for the run (as `kind`) and once for every scope it
        served (`scopes`: scope -> the prompt type of its first request in it)."""
        with self._lock:
            record(self._run, kind, requests=1)
            for scope, scope_kind in scopes.items():
                record(self._scope(scope), scope_kind, requests=1)

    def count_retry(self, kind: str) -> None:
        with self._lock:
            self._retries[kind] = self._retries.get(kind, 0) + 1

    def count_refusal(self, reason: str) -> None:
        with self._lock:
            self._refused[reason] += 1

    def tokens_used(self) -> int:
        """Prompt and completion tokens of the run so far."""
        with self._lock:
            return self._run.prompt_tokens + self._run.completion_tokens

    def run_usage(self) -> LLMUsage:
        with self._lock:
            return copy_usage(self._run)

    def scope_usage(self, scope: str) -> LLMUsage:
        with self._lock:
            return copy_usage(self._scopes.get(scope, LLMUsage()))

    def retries(self) -> int:
        with self._lock:
            return sum(self._retries.values())

    def stats(self) -> dict[str, object]:
        """The run's usage, its retries (in all and by prompt type) and its refusals."""
        with self._lock:
            out: dict[str, object] = dict(self._run.to_dict())
            out["retries"] = sum(self._retries.values())
            out["retries_by_type"] = dict(sorted(self._retries.items()))
            out["refused"] = dict(self._refused)
            out["tokens_used"] = self._run.prompt_tokens + self._run.completion_tokens
        return out

    def _scope(self, scope: str) -> LLMUsage:
        return self._scopes.setdefault(scope, LLMUsage())
