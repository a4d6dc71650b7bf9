"""Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama) through the `openai` client.

Routing: goal requests go to the completions API with `logprobs` (continuing a forced prefix
needs it; chat endpoints cannot continue an assistant prefix). Prompt types listed in
`selection_prompt_types` go to the selection model, by chat or completions (`selection_api`).
A chat request sent to a completions route is flattened to text; a completion request sent to
a chat route becomes one user message.

Logprobs are read in both formats: legacy completions (`logprobs.tokens`, `token_logprobs`,
`top_logprobs` as dicts) and chat (`logprobs.content[i].top_logprobs`). `TokenLogprob.top` is
best first. A response lacking logprobs that were asked for is an error (`require_logprobs`,
the default): STARS cannot branch without them, and an empty token list would silently turn
the Search Tree into plain prompting. With `require_logprobs=False` the text is returned with
no tokens instead.

The `openai` client's own retries are disabled (max_retries=0): `LLMClient` retries, with
backoff, and counts them. Failures map to TransientProviderError (429, 5xx, 408, timeouts,
connection errors; `retry_after_s` carries a Retry-After header) or ProviderError (anything
else, including malformed answers). The API key never appears in a repr, a log line or an error.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import openai

from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError, TokenLogprob, TransientProviderError

MISSING_LOGPROB = -9999.0  # a token the endpoint gave no logprob for: probability ~0
NO_KEY = "no-key"  # local servers accept any key; the openai client insists on one


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str = "",
        completion_model: str,
        selection_model: str = "",
        selection_api: str = "chat",
        selection_prompt_types: Iterable[str] = ("selection", "bcr_selection"),
        organization: str | None = None,
        require_logprobs: bool = True,
        default_timeout_s: float = 30.0,
    ) -> None:
        if selection_api not in ("chat", "completions"):
            raise ValueError(f"selection_api must be chat or completions, got {selection_api!r}")
        self.base_url = base_url
        self.model = completion_model
        self.selection_model = selection_model or completion_model
        self.selection_api = selection_api
        self.selection_prompt_types = frozenset(selection_prompt_types)
        self.require_logprobs = require_logprobs
        self._secret = api_key or ""
        self._client = openai.OpenAI(
            api_key=api_key or NO_KEY,
            base_url=base_url,
            organization=organization,
            max_retries=0,
            timeout=default_timeout_s,
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIProvider(base_url={self.base_url!r}, completion_model={self.model!r}, "
            f"selection_model={self.selection_model!r}, selection_api={self.selection_api!r}, "
            f"api_key={'***' if self._secret else 'unset'})"
        )

    def redact(self, text: str) -> str:
        """`text` with the API key masked (error bodies of some servers echo it)."""
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "***")
        return text

    def is_selection(self, request: LLMRequest) -> bool:
        return request.prompt_type in self.selection_prompt_types

    def model_for(self, request: LLMRequest) -> str:
        return self.selection_model if self.is_selection(request) else self.model

    def uses_chat(self, request: LLMRequest) -> bool:
        return self.is_selection(request) and self.selection_api == "chat"

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        try:
            if self.uses_chat(request):
                raw = self._client.chat.completions.create(**self._chat_args(request), timeout=timeout_s)
                return self._parse_chat(raw, request)
            raw = self._client.completions.create(**self._completion_args(request), timeout=timeout_s)
            return self._parse_completion(raw, request)
        except ProviderError:
            raise
        except openai.APITimeoutError:
            raise TransientProviderError(f"timed out after {timeout_s:g} s ({self.base_url})") from None
        except openai.APIConnectionError as exc:
            raise TransientProviderError(self.redact(f"cannot reach {self.base_url}: {_cause(exc)}")) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except Exception as exc:  # malformed JSON, unexpected shapes: the answer is unusable
            raise ProviderError(self.redact(f"malformed response from {self.base_url}: {type(exc).__name__}: {exc}")) from None

    # ------------------------------------------------------------------------------- requests
    def _completion_args(self, request: LLMRequest) -> dict[str, Any]:
        args: dict[str, Any] = {
            "model": self.model_for(request),
            "prompt": request.prompt if not request.is_chat else _flatten(request.messages),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.logprobs:
            args["logprobs"] = request.logprobs
        if request.stop:
            args["stop"] = list(request.stop)
        return args

    def _chat_args(self, request: LLMRequest) -> dict[str, Any]:
        messages = request.messages if request.is_chat else (("user", request.prompt),)
        args: dict[str, Any] = {
            "model": self.model_for(request),
            "messages": [{"role": role, "content": content} for role, content in messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.logprobs:
            args["logprobs"] = True
            args["top_logprobs"] = request.logprobs
        if request.stop:
            args["stop"] = list(request.stop)
        return args

    # ------------------------------------------------------------------------------ responses
    def _parse_completion(self, raw: Any, request: LLMRequest) -> LLMResponse:
        choice = self._first_choice(raw)
        text = choice.text or ""
        tokens: list[TokenLogprob] = []
        logprobs = getattr(choice, "logprobs", None)
        names = getattr(logprobs, "tokens", None) if logprobs is not None else None
        if request.logprobs and names is None:
            if self.require_logprobs:
                raise ProviderError(self._no_logprobs(request))
        elif names is not None and logprobs is not None:
            values = logprobs.token_logprobs or []
            tops = logprobs.top_logprobs or []
            if len(values) != len(names) or (tops and len(tops) != len(names)):
                raise ProviderError(f"malformed logprobs from {self.base_url}: {len(names)} tokens, {len(values)} logprobs, {len(tops)} alternatives")
            for i, token in enumerate(names):
                alternatives = tops[i] if i < len(tops) and tops[i] else {}
                tokens.append(TokenLogprob(str(token), _logprob(values[i]), _best_first(alternatives.items())))
        return self._response(raw, request, choice, text, tokens)

    def _parse_chat(self, raw: Any, request: LLMRequest) -> LLMResponse:
        choice = self._first_choice(raw)
        text = (choice.message.content if choice.message is not None else None) or ""
        tokens: list[TokenLogprob] = []
        content = getattr(getattr(choice, "logprobs", None), "content", None)
        if request.logprobs and content is None:
            if self.require_logprobs:
                raise ProviderError(self._no_logprobs(request))
        for item in content or ():
            top = _best_first((alt.token, alt.logprob) for alt in (item.top_logprobs or ()))
            tokens.append(TokenLogprob(str(item.token), _logprob(item.logprob), top))
        return self._response(raw, request, choice, text, tokens)

    def _first_choice(self, raw: Any) -> Any:
        choices = getattr(raw, "choices", None)
        if not choices:
            raise ProviderError(f"response from {self.base_url} has no choices")
        return choices[0]

    def _response(self, raw: Any, request: LLMRequest, choice: Any, text: str, tokens: list[TokenLogprob]) -> LLMResponse:
        usage = getattr(raw, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None) if usage is not None else None
        completion_tokens = getattr(usage, "completion_tokens", None) if usage is not None else None
        # Some local servers omit usage; estimate (about 4 characters per token) so the budget
        # still bites.
        if prompt_tokens is None:
            prompt_text = request.prompt or _flatten(request.messages)
            prompt_tokens = math.ceil(len(prompt_text) / 4)
        if completion_tokens is None:
            completion_tokens = len(tokens) or math.ceil(len(text) / 4)
        return LLMResponse(
            text=text,
            tokens=tokens,
            prompt_tokens=int(prompt_tokens),
            completion_tokens=int(completion_tokens),
            finish_reason=str(getattr(choice, "finish_reason", "") or ""),
        )

    def _no_logprobs(self, request: LLMRequest) -> str:
        return (
            f"response from {self.base_url} ({self.model_for(request)}) lacks logprobs although "
            f"{request.logprobs} were requested: the endpoint or model does not return them"
        )

    def _status_error(self, exc: openai.APIStatusError) -> ProviderError:
        status = exc.status_code
        detail = self.redact(_message(exc))
        if status == 429 or status == 408 or status >= 500:
            error = TransientProviderError(f"HTTP {status} from {self.base_url}: {detail}")
            error.retry_after_s = _retry_after(exc)  # type: ignore[attr-defined]
            return error
        return ProviderError(f"HTTP {status} from {self.base_url}: {detail}")

    def close(self) -> None:
        self._client.close()


def _flatten(messages: Iterable[tuple[str, str]]) -> str:
    return "\n\n".join(content for _role, content in messages)


def _logprob(value: Any) -> float:
    if value is None:
        return MISSING_LOGPROB
    value = float(value)
    return value if math.isfinite(value) else MISSING_LOGPROB


def _best_first(pairs: Iterable[tuple[Any, Any]]) -> tuple[tuple[str, float], ...]:
    items = [(str(token), _logprob(lp)) for token, lp in pairs]
    return tuple(sorted(items, key=lambda item: -item[1]))  # stable: ties keep the server's order


def _message(exc: openai.APIStatusError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(getattr(exc, "message", "") or exc)[:300]


def _cause(exc: Exception) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause else str(exc)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None
