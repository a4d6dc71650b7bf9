"""Plain-JSON forms of requests and responses, shared by the response cache, the recorder and
the replay provider, so a cassette written by one run reads back identically in another."""
from __future__ import annotations

import math
from typing import Any, Mapping

from task_learning.llm.base import LLMRequest, LLMResponse, TokenLogprob


def request_to_dict(request: LLMRequest) -> dict[str, Any]:
    """Everything a request carries, readable in a cassette (context included: it keys the cache)."""
    return {
        "prompt_type": request.prompt_type,
        "prompt": request.prompt,
        "messages": [list(m) for m in request.messages],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "logprobs": request.logprobs,
        "stop": list(request.stop),
        "context": jsonable(request.context),
        "scope": request.scope,
    }


def response_to_dict(response: LLMResponse) -> dict[str, Any]:
    """`cached` is not stored: it describes how a response was obtained, not the response."""
    return {
        "text": response.text,
        "tokens": [
            {"token": t.token, "logprob": _finite(t.logprob), "top": [[a, _finite(lp)] for a, lp in t.top]}
            for t in response.tokens
        ],
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
        "finish_reason": response.finish_reason,
        "error": response.error,
        **({"cached_prompt_tokens": response.cached_prompt_tokens} if response.cached_prompt_tokens else {}),
    }


def response_from_dict(data: Mapping[str, Any]) -> LLMResponse:
    """Inverse of `response_to_dict`; raises KeyError/TypeError/ValueError on a malformed record
    (callers turn that into an error naming the file and line)."""
    tokens = []
    for item in data.get("tokens", ()):
        top = tuple((str(alt), float(lp)) for alt, lp in item.get("top", ()))
        tokens.append(TokenLogprob(token=str(item["token"]), logprob=float(item["logprob"]), top=top))
    return LLMResponse(
        text=str(data.get("text", "")),
        tokens=tokens,
        prompt_tokens=int(data.get("prompt_tokens", 0)),
        completion_tokens=int(data.get("completion_tokens", 0)),
        finish_reason=str(data.get("finish_reason", "")),
        error=str(data.get("error", "")),
        cached_prompt_tokens=int(data.get("cached_prompt_tokens", 0)),
    )


def copy_response(response: LLMResponse, *, cached: bool | None = None) -> LLMResponse:
    """An independent copy (callers may mutate what they get; the cache must not change)."""
    return LLMResponse(
        text=response.text,
        tokens=list(response.tokens),  # TokenLogprob is frozen, sharing the items is safe
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
        finish_reason=response.finish_reason,
        cached=response.cached if cached is None else cached,
        error=response.error,
        cached_prompt_tokens=response.cached_prompt_tokens,
    )


def _finite(value: float) -> float:
    # JSON has no -inf; a probability of zero is stored as a very small log probability.
    return value if math.isfinite(value) else -9999.0


def jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
