"""The request/response contract every provider implements and every caller uses.

Callers (STARS, BCR) build an `LLMRequest` and hand it to `LLMClient.complete` (llm/client.py),
which does accounting, caching, retries, timeouts and budgets; providers only talk to a model.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Mapping, Protocol, runtime_checkable

from task_learning.llm.constraints import Constraint

ANSWER_CUE = "Answer:"
# A conversation flattened for a base model (flatten_conversation) puts "Answer:" before each
# answer: a model that writes this has finished its answer and goes on to invent the next turn
# (measured: Base8 answers repeating "\n\nAnswer: move(...)" to max_tokens). Protocols whose
# answers end there list it among their stop sequences (docs/llm.md "Stop sequences").
NEXT_TURN = f"\n\n{ANSWER_CUE}"


def flatten_conversation(messages: Iterable[tuple[str, str]]) -> str:
    """A conversation as one completions prompt, for a model served without a chat template (a base
    model such as the local Gemma 3 270M): the messages in order, earlier assistant turns marked
    "Answer: ...", and a final "Answer:" where the model's own answer goes. Without that cue a
    base model continues the last instruction as prose instead of answering it (measured)."""
    messages = list(messages)
    text = "\n\n".join(f"{ANSWER_CUE} {content}" if role == "assistant" else content for role, content in messages)
    if messages and messages[-1][0] != "assistant":
        text += NEXT_TURN
    return text


@dataclass(frozen=True)
class LLMRequest:
    """One model call. Completion style sets `prompt`; chat style sets `messages`.

    `context` carries the structured facts the prompt was built from (task, object, location, the
    branch prefix, the options of a selection...). Real endpoints never see it; the offline model
    reads it instead of parsing prompt text, and it keys the cache with the rest.
    """

    prompt_type: str  # initial | recurse | repair | repair_recurse | selection | bcr_selection
    prompt: str = ""
    messages: tuple[tuple[str, str], ...] = ()  # (role, content) for chat
    max_tokens: int = 50
    temperature: float = 0.0
    logprobs: int = 0  # top alternatives per token (0: none)
    stop: tuple[str, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    scope: str = ""  # what the per-object request cap counts against (e.g. the object id)
    # --decoding grounded: what the answer may be (llm/constraints.py); None: free decoding
    constraint: Constraint | None = None

    @property
    def is_chat(self) -> bool:
        return bool(self.messages)

    def cache_key(self, provider: str, model: str = "") -> str:
        payload = {
            "provider": provider,
            "model": model,
            "type": self.prompt_type,
            "prompt": self.prompt,
            "messages": [list(m) for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "logprobs": self.logprobs,
            "stop": list(self.stop),
            "context": self.context,
        }
        if self.constraint is not None:
            payload["constraint"] = list(self.constraint.key())
        blob = json.dumps(payload, sort_keys=True, default=str).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token, its log probability, and the top alternatives at that position
    (token, logprob), best first, the chosen token included when the provider lists it."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()

    @property
    def prob(self) -> float:
        return math.exp(self.logprob)


@dataclass
class LLMResponse:
    """A completion. On failure `error` says why and `text` is empty: callers never see a raise
    for a dead endpoint, garbage or a spent budget, only a clear outcome."""

    text: str
    tokens: list[TokenLogprob] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    cached: bool = False
    error: str = ""
    cached_prompt_tokens: int = 0  # of prompt_tokens, served by the server's prefix cache (if it says)

    @property
    def ok(self) -> bool:
        return not self.error


class ProviderError(Exception):
    """A provider failed for good (bad request, auth, malformed answer): not retried."""


class TransientProviderError(ProviderError):
    """Rate limit, 5xx or timeout: worth retrying with backoff."""


class BatchNotSupported(ProviderError):
    """The endpoint refused a list of prompts in one request (or answered it wrongly): the client
    remembers this and sends that provider's requests one by one, concurrently, from then on.
    `permanent=False`: this list was refused for what it holds (a prompt too long for the
    context), not for being a list: its prompts go one by one, later lists are still sent."""

    def __init__(self, message: str = "", *, permanent: bool = True) -> None:
        super().__init__(message)
        self.permanent = permanent


class ConnectionProviderError(TransientProviderError):
    """The endpoint could not be reached or did not answer within the call's deadline. Retried,
    and counted by the client's circuit breaker: many in a row end the run."""


class FatalProviderError(ProviderError):
    """No later call can succeed (refused credentials, a model or path the endpoint does not have,
    a local server that died or hangs): the client's circuit breaker opens at once."""


class AuthProviderError(FatalProviderError):
    """The endpoint refused the credentials (401/403)."""


class EndpointConfigError(FatalProviderError):
    """The endpoint has no such model or path (404 to a single request): a configuration error."""


@runtime_checkable
class LLMProvider(Protocol):
    """A model behind an endpoint (or a recording, or the offline twin). May raise ProviderError."""

    name: str
    model: str

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        ...


@runtime_checkable
class BatchProvider(LLMProvider, Protocol):
    """A provider that can answer several requests in one round trip (the completions API takes a
    list of prompts). `requests` share their sampling parameters (`batch_signature`); the answers
    come back in request order. Raises BatchNotSupported when the endpoint refuses lists."""

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        ...


def batch_signature(request: LLMRequest) -> tuple[Hashable, ...] | None:
    """Requests with equal signatures may share one round trip: a list-prompt completions request
    carries its sampling parameters once for all its prompts. Chat requests (one conversation per
    request) are never batched: None."""
    if request.is_chat:
        return None
    return (request.max_tokens, request.temperature, request.logprobs, request.stop,
            request.constraint.key() if request.constraint is not None else None)
