"""A provider seen through what it can do.

Providers share `LLMProvider` (llm/base.py); some can do more: pick a model per request, redact
secrets from their messages, answer a list of prompts in one round trip, say which requests may
share one. Each capability is a Protocol, asked with isinstance, so the client's layers call a
provider only for what it has (a wrapper such as FixedLatencyProvider offers `complete_batch`
only when what it wraps does).
"""
from __future__ import annotations

from typing import Hashable, Protocol, runtime_checkable

from task_learning.llm.base import LLMProvider, LLMRequest, LLMResponse, batch_signature


@runtime_checkable
class ChoosesModel(Protocol):
    def model_for(self, request: LLMRequest) -> str: ...


@runtime_checkable
class Redacts(Protocol):
    def redact(self, text: str) -> str: ...


@runtime_checkable
class AnswersLists(Protocol):
    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]: ...


@runtime_checkable
class KeysBatches(Protocol):
    def batch_key(self, request: LLMRequest) -> Hashable | None: ...


@runtime_checkable
class Closable(Protocol):
    def close(self) -> None: ...


class Endpoint:
    """The provider behind a client, and what every layer needs to know of it."""

    def __init__(self, provider: LLMProvider) -> None:
        self.provider = provider

    @property
    def name(self) -> str:
        return str(getattr(self.provider, "name", "provider"))

    @property
    def model(self) -> str:
        return str(getattr(self.provider, "model", ""))

    def model_for(self, request: LLMRequest) -> str:
        """The model that serves a request (providers with several models choose per request)."""
        if isinstance(self.provider, ChoosesModel):
            return str(self.provider.model_for(request))
        return self.model

    def redact(self, text: str) -> str:
        """`text` without the provider's secrets (an API key in a URL or a message)."""
        return self.provider.redact(text) if isinstance(self.provider, Redacts) else text

    @property
    def answers_lists(self) -> bool:
        return isinstance(self.provider, AnswersLists)

    def batch_key(self, request: LLMRequest) -> Hashable | None:
        """Requests with equal keys may share one round trip; None: this one goes alone."""
        if isinstance(self.provider, KeysBatches):
            return self.provider.batch_key(request)
        return batch_signature(request)

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        return self.provider.complete(request, timeout_s)

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        if not isinstance(self.provider, AnswersLists):
            raise TypeError(f"{self.name} cannot answer a list of prompts")
        return self.provider.complete_batch(requests, timeout_s)


def close_quietly(part: object) -> None:
    """Close `part` when it can be closed (a cache file, a recorder, a provider's server)."""
    if isinstance(part, Closable):
        part.close()
