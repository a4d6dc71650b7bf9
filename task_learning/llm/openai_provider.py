"""Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama) through the `openai` client.

Routing: goal requests go to the completions API with `logprobs` (continuing a forced prefix
needs it; chat endpoints cannot continue an assistant prefix). Prompt types listed in
`selection_prompt_types` go to the selection model, by chat or completions (`selection_api`).
A chat request sent to a completions route is flattened to text ending in "Answer:" (`llm.base.flatten_conversation`);
a completion request sent to a chat route becomes one user message.

Logprobs are read in both layouts, in completions answers too: legacy completions
(`logprobs.tokens`, `token_logprobs`, `top_logprobs` as dicts: OpenAI, vLLM) and chat
(`logprobs.content[i].top_logprobs`: chat endpoints, and llama.cpp's server for /v1/completions),
tokens given as strings, as UTF-8 `bytes` or as OpenAI's "bytes:\\x.." strings. `TokenLogprob.top` is
best first. A response lacking logprobs that were asked for is an error (`require_logprobs`,
the default): STARS cannot branch without them, and an empty token list would silently turn
the Search Tree into plain prompting. With `require_logprobs=False` the text is returned with
no tokens instead.

Batches (`complete_batch`): requests with the same `batch_key` (same route, model and sampling
parameters) go out as ONE completions request whose `prompt` is the list of their prompts; the
answer's choices are matched back by `index`. The server reports usage for the whole request, so
the prompt, completion and cached tokens are split over the prompts (exact totals, per-prompt
shares by prompt length). A server that refuses a list (HTTP 400/404/415/422) or answers it with
the wrong number of choices raises BatchNotSupported, and the client stops sending lists to it;
a refusal that is about a prompt's length (it exceeds the context) is for that list only.
Chat routes take one conversation per request: never batched. `usage.prompt_tokens_details.
cached_tokens` (the server's prefix cache) is reported as `cached_prompt_tokens` when present.

The `openai` client's own retries are disabled (max_retries=0): `LLMClient` retries, with
backoff, and counts them. Failures map to TransientProviderError (429, 5xx, 408;
`retry_after_s` carries a Retry-After header), ConnectionProviderError (cannot connect, or no
complete answer by the call's deadline), AuthProviderError (401, 403), EndpointConfigError (404 to
a single request: no such model or path, a configuration error) or ProviderError
(anything else: malformed answers, an error body sent with status 200, an HTML page, logprobs
that are not log probabilities, an answer over the size cap).

Every call has a wall-clock deadline (connect, send, headers and body together: `timeout_s`)
and a cap on the bytes received (`max_response_bytes`), enforced at the socket layer
(`http_guard.py`). The API key and any credentials in the base URL (`http://user:pw@host`)
never appear in a repr, a log line, an error or a cassette: the URL is shown with `***`.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Hashable, Iterable, TypeVar

import openai

from task_learning.llm.base import (
    AuthProviderError,
    BatchNotSupported,
    ConnectionProviderError,
    EndpointConfigError,
    LLMRequest,
    LLMResponse,
    ProviderError,
    TokenLogprob,
    TransientProviderError,
    flatten_conversation,
)
from task_learning.llm.constraints import ConstraintStyle, request_body
from task_learning.llm.http_guard import (
    CallGuard,
    guarded_http_client,
    is_too_large,
    redact_url,
    split_credentials,
    transport_errors,
)
from task_learning.llm.streamed import StreamedAnswer, assemble

MISSING_LOGPROB = -9999.0  # a token the endpoint gave no logprob for: probability ~0
LOGPROB_TOLERANCE = 1e-6  # a logprob this far above 0 is rounding noise, read as 0
DEFAULT_MAX_RESPONSE_BYTES = 8_000_000
NO_KEY = "no-key"  # local servers accept any key; the openai client insists on one
_T = TypeVar("_T")


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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        constraints: str | ConstraintStyle = ConstraintStyle.NONE,
        stream: bool = False,
    ) -> None:
        if selection_api not in ("chat", "completions"):
            raise ValueError(f"selection_api must be chat or completions, got {selection_api!r}")
        self.max_response_bytes = int(max_response_bytes)
        self.model = completion_model
        self.selection_model = selection_model or completion_model
        self.selection_api = selection_api
        self.selection_prompt_types = frozenset(selection_prompt_types)
        self.require_logprobs = require_logprobs
        # how this endpoint is told a grounded request's constraint (llm/constraints.py)
        self.constraints = ConstraintStyle(constraints)
        # completions answers streamed (llm/streamed.py): a call cut at its deadline then stops the
        # server's decoding (llama-server looks at a streamed request's connection every token)
        self.stream = bool(stream)
        self._secret = api_key or ""
        self._guard = CallGuard()
        self._organization = organization
        self._default_timeout_s = default_timeout_s
        self._connect(base_url)

    def _connect(self, base_url: str) -> None:
        """(Re)open the `openai` client on `base_url` (a local server's URL is known once it runs)."""
        url = split_credentials(base_url)
        self.base_url = url.shown  # for messages: credentials replaced by ***
        self._url_secrets = url.secrets
        self._client = openai.OpenAI(
            api_key=self._secret or NO_KEY,
            base_url=url.url,
            organization=self._organization,
            max_retries=0,
            timeout=self._default_timeout_s,
            http_client=guarded_http_client(self._guard, auth=url.auth, timeout_s=self._default_timeout_s),
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIProvider(base_url={self.base_url!r}, completion_model={self.model!r}, "
            f"selection_model={self.selection_model!r}, selection_api={self.selection_api!r}, "
            f"api_key={'***' if self._secret else 'unset'})"
        )

    def redact(self, text: str) -> str:
        """`text` with the API key and URL credentials masked (error bodies of some servers echo
        them), and any URL's user info replaced by ***."""
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "***")
        for secret in self._url_secrets:
            text = text.replace(secret, "***")
        return redact_url(text)

    def is_selection(self, request: LLMRequest) -> bool:
        return request.prompt_type in self.selection_prompt_types

    def model_for(self, request: LLMRequest) -> str:
        return self.selection_model if self.is_selection(request) else self.model

    def uses_chat(self, request: LLMRequest) -> bool:
        return self.is_selection(request) and self.selection_api == "chat"

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        def call() -> LLMResponse:
            if self.uses_chat(request):
                raw = self._client.chat.completions.create(**self._chat_args(request), timeout=timeout_s)
                return self._parse_chat(raw, request)
            args = self._completion_args(request)
            if self.stream:
                return self._parse_completion(_one(self._streamed(args, timeout_s)), request)
            raw = self._client.completions.create(**args, timeout=timeout_s)
            return self._parse_completion(raw, request)

        return self._round_trip(call, timeout_s, list_prompts=False)

    def _streamed(self, args: dict[str, Any], timeout_s: float) -> list[StreamedAnswer]:
        """A completions request streamed and read to its end, one answer per prompt. Leaving the
        block closes the connection whatever happened (a deadline, a size cap): the server then
        stops decoding at its next token."""
        with self._client.completions.create(**args, stream=True, timeout=timeout_s) as chunks:
            return assemble(chunks)

    def _round_trip(self, call: Callable[[], _T], timeout_s: float, list_prompts: bool) -> _T:
        """`call()` within the time and size guard, its failures mapped to the client's error
        classes (what the client retries, what opens its breaker, what a list refusal is). One
        mapping for single requests and list prompts, so they never drift apart."""
        try:
            with self._guard.limits(timeout_s, self.max_response_bytes):
                return call()
        except ProviderError:
            raise
        except openai.APITimeoutError:
            raise ConnectionProviderError(f"timed out after {timeout_s:g} s: no complete answer from {self.base_url} (deadline covers connect and every read)") from None
        except openai.APIConnectionError as exc:
            too_large = is_too_large(exc)
            if too_large is not None:
                raise ProviderError(f"refused the answer from {self.base_url}: {too_large}") from None
            raise ConnectionProviderError(self.redact(f"cannot reach {self.base_url}: {_cause(exc)}")) from None
        except openai.APIStatusError as exc:
            if list_prompts and exc.status_code in LIST_REFUSED:
                message = _message(exc)
                raise BatchNotSupported(self.redact(f"HTTP {exc.status_code} from {self.base_url}: {message}"),
                                        permanent=not _about_context(message)) from None
            raise self._status_error(exc) from None
        except TRANSPORT_ERRORS as exc:  # a streamed answer cut while it was read (the SDK maps only its start)
            too_large = is_too_large(exc)
            if too_large is not None:
                raise ProviderError(f"refused the answer from {self.base_url}: {too_large}") from None
            if isinstance(exc, TIMEOUT_ERRORS):
                raise ConnectionProviderError(f"timed out after {timeout_s:g} s: no complete answer from {self.base_url} (deadline covers connect and every read)") from None
            raise ConnectionProviderError(self.redact(f"lost {self.base_url} while reading its answer: {type(exc).__name__}: {exc}")) from None
        except Exception as exc:  # noqa: BLE001 - malformed JSON, unexpected shapes: the answer is unusable
            too_large = is_too_large(exc)
            if too_large is not None:
                raise ProviderError(f"refused the answer from {self.base_url}: {too_large}") from None
            raise ProviderError(self.redact(f"malformed response from {self.base_url}: {type(exc).__name__}: {_printable(str(exc))}")) from None

    # -------------------------------------------------------------------------------- batches
    def batch_key(self, request: LLMRequest) -> tuple[Hashable, ...] | None:
        """Requests with equal keys can share one list-prompt request; None: never batched."""
        if self.uses_chat(request):
            return None
        return (self.model_for(request), request.max_tokens, request.temperature, request.logprobs,
                request.stop, request.constraint.key() if request.constraint is not None else None)

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        """Answer requests of one `batch_key` with one completions request (a list of prompts)."""
        if not requests:
            return []
        if len({self.batch_key(r) for r in requests}) != 1 or self.batch_key(requests[0]) is None:
            raise ProviderError("complete_batch needs completion requests with one batch key")
        args = self._completion_args(requests[0])
        args["prompt"] = [self._completion_args(r)["prompt"] for r in requests]

        def call() -> list[LLMResponse]:
            if self.stream:
                return self._parse_streamed_batch(self._streamed(args, timeout_s), requests)
            raw = self._client.completions.create(**args, timeout=timeout_s)
            return self._parse_batch(raw, requests)

        return self._round_trip(call, timeout_s, list_prompts=True)

    def _parse_batch(self, raw: Any, requests: list[LLMRequest]) -> list[LLMResponse]:
        choices = list(getattr(raw, "choices", None) or [])
        indices = sorted(int(c.index) for c in choices if isinstance(getattr(c, "index", None), int))
        if len(choices) != len(requests) or indices != list(range(len(requests))):
            raise BatchNotSupported(f"{len(requests)} prompts answered with {len(choices)} choices")
        by_index = {c.index: c for c in choices}
        responses = self._parse_each([_OneChoice(by_index[i]) for i in range(len(requests))], requests)
        _split_usage(getattr(raw, "usage", None), requests, responses)
        return responses

    def _parse_streamed_batch(self, answers: list[StreamedAnswer], requests: list[LLMRequest]) -> list[LLMResponse]:
        """A streamed list's answers: one per prompt, each with its own usage (llama.cpp sends it
        with each prompt's last chunk), so nothing is split."""
        if [a.choices[0].index for a in answers] != list(range(len(requests))):
            raise BatchNotSupported(f"{len(requests)} prompts answered with {len(answers)} streamed choices")
        return self._parse_each(answers, requests)

    def _parse_each(self, answers: list[Any], requests: list[LLMRequest]) -> list[LLMResponse]:
        responses = []
        for answer, request in zip(answers, requests):
            try:
                responses.append(self._parse_completion(answer, request))
            except ProviderError as exc:  # one malformed answer does not spoil the others
                responses.append(LLMResponse(text="", error=f"{self.name}: {exc}"))
        return responses

    # ------------------------------------------------------------------------------- requests
    def _completion_args(self, request: LLMRequest) -> dict[str, Any]:
        args: dict[str, Any] = {
            "model": self.model_for(request),
            "prompt": request.prompt if not request.is_chat else flatten_conversation(request.messages),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.logprobs:
            args["logprobs"] = request.logprobs
        if request.stop:
            args["stop"] = list(request.stop)
        extra = request_body(request.constraint, self.constraints)
        if extra:
            args["extra_body"] = extra
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
        """Completions answers carry logprobs in one of two layouts: OpenAI's legacy one
        (`tokens`, `token_logprobs`, `top_logprobs` as {token: logprob} dicts; vLLM too) or the
        chat one (`content[i]` with `token`, `bytes`, `logprob`, `top_logprobs`: llama.cpp's
        server sends this for /v1/completions)."""
        choice = self._first_choice(raw)
        text = choice.text or ""
        tokens: list[TokenLogprob] = []
        logprobs = _field(choice, "logprobs")
        content = _field(logprobs, "content")
        names = _field(logprobs, "tokens")
        if isinstance(content, list) and (content or names is None):
            tokens = self._content_tokens(content)
        elif names is not None:
            values = _field(logprobs, "token_logprobs") or []
            tops = _field(logprobs, "top_logprobs") or []
            if len(values) != len(names) or (tops and len(tops) != len(names)):
                raise ProviderError(f"malformed logprobs from {self.base_url}: {len(names)} tokens, {len(values)} logprobs, {len(tops)} alternatives")
            for i, token in enumerate(names):
                alternatives = tops[i] if i < len(tops) and tops[i] else {}
                if not isinstance(alternatives, dict):
                    raise ProviderError(f"malformed logprobs from {self.base_url}: top_logprobs[{i}] is not a mapping")
                tokens.append(TokenLogprob(_token_text(token), self._logprob(values[i], token),
                                           self._best_first((_token_text(t), lp) for t, lp in alternatives.items())))
        elif request.logprobs and self.require_logprobs and text.strip():
            raise ProviderError(self._no_logprobs(request))
        # An answer with nothing in it has nothing to give logprobs for: llama.cpp sends null (or
        # no token) when it stopped at once, or when a stop string began inside the only token
        # (" (" of "(END RESULT)" leaves the text " ").
        return self._response(raw, request, choice, text, tokens)

    def _parse_chat(self, raw: Any, request: LLMRequest) -> LLMResponse:
        choice = self._first_choice(raw)
        text = (choice.message.content if choice.message is not None else None) or ""
        content = _field(_field(choice, "logprobs"), "content")
        if request.logprobs and content is None:
            if self.require_logprobs:
                raise ProviderError(self._no_logprobs(request))
        return self._response(raw, request, choice, text, self._content_tokens(content or []))

    def _content_tokens(self, content: list[Any]) -> list[TokenLogprob]:
        """The chat layout's tokens: objects (the SDK parsed them) or plain dicts (it did not),
        each token given as a string, as `bytes` (a list of byte values) or both."""
        tokens = []
        for item in content:
            token = _token_text(_field(item, "token"), _field(item, "bytes"))
            alternatives = _field(item, "top_logprobs") or _field(item, "top_probs") or ()
            top = self._best_first((_token_text(_field(alt, "token"), _field(alt, "bytes")), _log_of(alt))
                                   for alt in alternatives)
            tokens.append(TokenLogprob(token, self._logprob(_log_of(item), token), top))
        return tokens

    def _first_choice(self, raw: Any) -> Any:
        if isinstance(raw, (str, bytes)):  # the client hands back a body that is not JSON as text
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            kind = "an HTML page" if "<html" in text[:2000].lower() or "<!doctype" in text[:2000].lower() else "not JSON"
            raise ProviderError(self.redact(f"response from {self.base_url} is {kind}: {_snippet(text)}"))
        choices = getattr(raw, "choices", None)
        if not choices:
            error = _error_field(raw)
            if error:
                raise ProviderError(self.redact(f"error from {self.base_url} (sent with status 200): {error}"))
            raise ProviderError(f"response from {self.base_url} has no choices{_api_path_hint(self.base_url)}")
        return choices[0]

    def _logprob(self, value: Any, token: Any) -> float:
        """A log probability as sent, checked: finite and <= 0 (-inf reads as probability ~0).
        Anything else makes the whole answer unusable: ranking by it would be garbage."""
        if value is None:
            return MISSING_LOGPROB
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ProviderError(f"malformed logprobs from {self.base_url}: {value!r} for token {_snippet(str(token), 40)} is not a number") from None
        if number == -math.inf:
            return MISSING_LOGPROB
        if not math.isfinite(number) or number > LOGPROB_TOLERANCE:
            raise ProviderError(
                f"malformed logprobs from {self.base_url}: {number!r} for token {_snippet(str(token), 40)} "
                "(a log probability is finite and <= 0)")
        return min(number, 0.0)

    def _best_first(self, pairs: Iterable[tuple[Any, Any]]) -> tuple[tuple[str, float], ...]:
        items = [(str(token), self._logprob(lp, token)) for token, lp in pairs]
        return tuple(sorted(items, key=lambda item: -item[1]))  # stable: ties keep the server's order

    def _response(self, raw: Any, request: LLMRequest, choice: Any, text: str, tokens: list[TokenLogprob]) -> LLMResponse:
        usage = getattr(raw, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None) if usage is not None else None
        completion_tokens = getattr(usage, "completion_tokens", None) if usage is not None else None
        # Some local servers omit usage; estimate (about 4 characters per token) so the budget
        # still bites.
        if prompt_tokens is None:
            prompt_text = request.prompt or flatten_conversation(request.messages)
            prompt_tokens = math.ceil(len(prompt_text) / 4)
        if completion_tokens is None:
            completion_tokens = len(tokens) or math.ceil(len(text) / 4)
        return LLMResponse(
            text=text,
            tokens=tokens,
            prompt_tokens=int(prompt_tokens),
            completion_tokens=int(completion_tokens),
            finish_reason=str(getattr(choice, "finish_reason", "") or ""),
            cached_prompt_tokens=_cached_tokens(usage),
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
        if status in (401, 403):
            return AuthProviderError(f"HTTP {status} from {self.base_url}: credentials refused ({detail}); "
                                     "check the API key variable or the URL's user info")
        if status == 404:
            return EndpointConfigError(
                f"HTTP 404 from {self.base_url}: {detail} - a configuration error: the endpoint has no such "
                "model or path (check the model name: --llm-model, openai.completion_model/selection_model; "
                "and the base URL: --base-url, OPENAI_BASE_URL, which usually ends in /v1)")
        return ProviderError(f"HTTP {status} from {self.base_url}: {detail}")

    def close(self) -> None:
        self._client.close()


LIST_REFUSED = frozenset({400, 404, 415, 422})  # how servers say "prompt must be a string"
TRANSPORT_ERRORS, TIMEOUT_ERRORS = transport_errors()


def _one(answers: list[StreamedAnswer]) -> StreamedAnswer:
    """A single prompt's streamed answer (none: an answer with no choices, reported as such)."""
    return answers[0] if answers else StreamedAnswer([])


class _OneChoice:
    """One choice of a batch answer, shaped as a one-choice response without usage (the batch's
    usage is split afterwards)."""

    usage = None

    def __init__(self, choice: Any) -> None:
        self.choices = [choice]


def _api_path_hint(shown_url: str) -> str:
    """A hint for a base URL without a path: OpenAI-compatible servers (llama.cpp, vLLM,
    Ollama) serve the API under /v1, and their root answers something else."""
    from urllib.parse import urlsplit

    parts = urlsplit(shown_url)
    if parts.path.strip("/"):
        return ""
    return f": did you mean {shown_url.rstrip('/')}/v1 ?"


def _cached_tokens(usage: Any) -> int:
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    if isinstance(details, dict):
        value = details.get("cached_tokens")
    else:
        value = getattr(details, "cached_tokens", None)
    return int(value) if isinstance(value, (int, float)) and value > 0 else 0


def _split_usage(usage: Any, requests: list[LLMRequest], responses: list[LLMResponse]) -> None:
    """Spread a batch's reported usage over its prompts: totals exact, shares by prompt length
    (prompt and cached tokens) and by tokens generated (completion tokens).

    llama.cpp's server reports the usage of the FIRST prompt of a list only (its OpenAI-compatible
    answer is the first result with the other choices appended). Seen by the completion tokens:
    exactly the first choice's, fewer than all choices generated. Then the first prompt keeps the
    server's figures, the others' completion tokens are their own token counts, their prompt
    tokens are estimated from their length at the first prompt's tokens per character, and their
    cached tokens are not claimed: with lists, cached_prompt_tokens is a lower bound there."""
    if usage is None:
        return  # each response keeps its own estimate
    weights = [max(1, len(r.prompt or flatten_conversation(r.messages))) for r in requests]
    prompt_total = getattr(usage, "prompt_tokens", None)
    completion_total = getattr(usage, "completion_tokens", None)
    generated = [len(r.tokens) for r in responses]
    if (len(responses) > 1 and isinstance(completion_total, int) and isinstance(prompt_total, int)
            and all(generated) and completion_total == generated[0] < sum(generated)):
        per_char = prompt_total / weights[0]
        for i, response in enumerate(responses):
            response.completion_tokens = generated[i]
            response.prompt_tokens = prompt_total if i == 0 else max(1, round(weights[i] * per_char))
            response.cached_prompt_tokens = _cached_tokens(usage) if i == 0 else 0
        return
    if isinstance(prompt_total, int):
        for response, share in zip(responses, _shares(prompt_total, weights)):
            response.prompt_tokens = share
    cached = _cached_tokens(usage)
    for response, share in zip(responses, _shares(cached, weights)):
        response.cached_prompt_tokens = share
    if isinstance(completion_total, int):
        generated = [max(1, r.completion_tokens) for r in responses]
        for response, share in zip(responses, _shares(completion_total, generated)):
            response.completion_tokens = share


def _shares(total: int, weights: list[int]) -> list[int]:
    """Integers proportional to weights that add up to total exactly (largest remainders)."""
    whole = sum(weights)
    raw = [total * w / whole for w in weights]
    out = [int(x) for x in raw]
    for i in sorted(range(len(raw)), key=lambda i: out[i] - raw[i])[: total - sum(out)]:
        out[i] += 1
    return out


def _field(item: Any, name: str) -> Any:
    """A field of an answer part, whether the SDK parsed it into an object or left a dict (fields
    its types do not know, like llama.cpp's `logprobs.content` in completions, stay dicts)."""
    if item is None:
        return None
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def _token_text(token: Any, raw: Any = None) -> str:
    """A token as text. Servers send a string, the UTF-8 bytes as a list of ints (`bytes`, for a
    token that is part of a character, whose string is then garbled), or OpenAI's
    "bytes:\\xe2\\x80" string for such a token; every form is accepted."""
    if isinstance(raw, list) and raw and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        decoded = bytes(raw).decode("utf-8", "replace")
        if not isinstance(token, str) or "\ufffd" in token or not token:
            return decoded
    if isinstance(token, list) and all(isinstance(b, int) and 0 <= b < 256 for b in token):
        return bytes(token).decode("utf-8", "replace")
    if isinstance(token, str) and token.startswith("bytes:"):
        try:
            return token[6:].encode("latin-1").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
        except (UnicodeDecodeError, UnicodeEncodeError):
            return token
    return "" if token is None else str(token)


_CONTEXT_WORDS = ("context", "too long", "exceed", "too many tokens")


def _about_context(message: str) -> bool:
    """An error about a prompt's length (llama.cpp: "exceed_context_size_error"), not its type."""
    lowered = message.lower()
    return any(word in lowered for word in _CONTEXT_WORDS)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def _printable(text: str) -> str:
    """One line of printable text: control characters (escape sequences included) become spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())


def _snippet(text: str, limit: int = 200) -> str:
    text = _printable(re.sub(r"<[^>]{0,200}>", " ", text))  # HTML tags say nothing
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _error_field(raw: Any) -> str:
    """The message of an `{"error": ...}` body, whatever its shape; "" if there is none."""
    error = getattr(raw, "error", None)
    if error is None:
        extra = getattr(raw, "model_extra", None) or {}
        error = extra.get("error") if isinstance(extra, dict) else None
    if error is None:
        return ""
    if isinstance(error, dict):
        error = error.get("message") or error
    return _printable(str(error))[:300]


def _message(exc: openai.APIStatusError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return _printable(str(inner["message"]))[:300]
    return _printable(re.sub(r"<[^>]{0,200}>", " ", str(getattr(exc, "message", "") or exc)))[:300]


def _cause(exc: Exception) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause else str(exc)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _log_of(item: Any) -> Any:
    """An item's log probability: `logprob` as sent, or the log of `prob` (llama.cpp's
    `post_sampling_probs` answers: probabilities under the grammar, constraints.py)."""
    logprob = _field(item, "logprob")
    if logprob is not None:
        return logprob
    prob = _field(item, "prob")
    if isinstance(prob, (int, float)) and not isinstance(prob, bool):
        return math.log(prob) if prob > 0 else -math.inf
    return prob
