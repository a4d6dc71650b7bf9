"""`config/llm.yaml`: which provider, which endpoint and models, and the client's limits.

Precedence for every value: an explicit option to `make_client` > the standard environment
variables (OPENAI_BASE_URL, OPENAI_API_KEY or the variable `openai.api_key_env` names) > the file
> the defaults below. The API key is read from the environment (or an explicit option) only,
never from a config file, and is kept out of every repr, log line and error.

The file's shape is declared once, as the typed models below (task_learning.inputs.schema: unknown keys
refused with a 'did you mean', types strict, numbers in their ranges); the same models are the
settings the client and the local server read, so nothing is described twice. A copy with some
values changed (command-line options over the file) is `settings.model_copy(update=...)`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, PrivateAttr, model_validator

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, load_yaml
from task_learning.inputs.schema import Schema, bounded, invalid, validate

SELECTION_APIS = ("chat", "completions")


def _none_is_empty(value: Any) -> Any:
    """A key written with no value (`organization:`) reads as the empty text."""
    return "" if value is None else value


def _list_as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _cache_words(value: Any) -> Any:
    """YAML reads a bare `off`/`on` as a boolean: the words they were."""
    if isinstance(value, bool):
        return "memory" if value else "off"
    return value


def _cache_not_blank(value: str) -> str:
    if not value.strip():
        raise invalid("expected off, memory or a file path")
    return value


def _selection_api(value: str) -> str:
    if value not in SELECTION_APIS:
        raise invalid(f"expected one of {', '.join(SELECTION_APIS)}, got {value!r}")
    return value


def _http_or_nothing(value: str) -> str:
    if value and not value.lower().startswith(("http://", "https://")):
        raise invalid(f"expected an http:// URL or nothing, got {value!r}")
    return value


def _int(low: int, high: int) -> BeforeValidator:
    return bounded(low=low, high=high, integer=True)


def _seconds(high: float) -> BeforeValidator:
    return bounded(low=0.0, high=high, low_open=True)


Text = Annotated[str, BeforeValidator(_none_is_empty)]
Names = Annotated[tuple[str, ...], BeforeValidator(_list_as_tuple)]


class ClientSettings(Schema):
    """`client:`: what LLMClient adds around every provider (llm/client.py)."""

    timeout_s: Annotated[float, _seconds(3600.0)] = 30.0  # per call
    max_retries: Annotated[int, _int(0, 100)] = 4  # on 429 / 5xx / timeouts, after the first attempt
    backoff_s: Annotated[float, bounded(low=0.0, high=600.0)] = 1.0  # first retry delay; doubles each retry
    max_backoff_s: Annotated[float, bounded(low=0.0, high=3600.0)] = 30.0
    # each delay is multiplied by 1 + jitter * U[0, 1) from a seeded RNG
    jitter: Annotated[float, bounded(low=0.0, high=1.0)] = 0.5
    seed: Annotated[int, _int(0, 2**32 - 1)] = 0
    max_requests_per_scope: Annotated[int, _int(0, 10_000_000)] = 1500  # per object (the original STARS cap); 0: no cap
    token_budget: Annotated[int, _int(0, 10**12)] = 0  # prompt + completion tokens per run; 0: no budget
    max_in_flight: Annotated[int, _int(0, 1024)] = 16  # concurrent provider calls; 0: unbounded
    max_batch_size: Annotated[int, _int(0, 100_000)] = 256  # prompts per list-prompt request; 1: no lists
    # off | memory | a JSONL file path (relative: to the working directory)
    cache: Annotated[str, BeforeValidator(_cache_words), AfterValidator(_cache_not_blank)] = "memory"
    # an answer larger than this is refused, unread past it
    max_response_bytes: Annotated[int, _int(1024, 2**31)] = 8_000_000
    breaker_failures: Annotated[int, _int(0, 1000)] = 5  # unreachable attempts in a row that end the run; 0: never


class OpenAISettings(Schema):
    """`openai:`: any OpenAI-compatible endpoint (llm/openai_provider.py)."""

    base_url: Text = "https://api.openai.com/v1"
    api_key_env: Text = "OPENAI_API_KEY"
    completion_model: Text = "gpt-3.5-turbo-instruct"  # goal requests: completions + logprobs
    selection_model: Text = "gpt-4o-mini"
    selection_api: Annotated[str, AfterValidator(_selection_api)] = "chat"  # chat | completions
    selection_prompt_types: Names = ("selection", "bcr_selection")
    organization: Text = ""
    require_logprobs: bool = True  # a response lacking requested logprobs is an error
    # how the endpoint takes a grounded request's constraint (llm/constraints.py): none (OpenAI),
    # llama.cpp, vllm or ollama
    constraints: Literal["none", "llama.cpp", "vllm", "ollama"] = "none"


class LocalSettings(Schema):
    """The `local` provider: llama.cpp's server with a GGUF model, started and stopped by the
    client (or a running one at `base_url`). Defaults chosen for 2 cores (docs/llm.md)."""

    # a running llama-server (http://127.0.0.1:PORT/v1); empty: start one
    base_url: Annotated[Text, AfterValidator(_http_or_nothing)] = ""
    model: Text = ""  # GGUF file to serve; empty: the installed Gemma 3 270M (`task-learning llm install`)
    server: Text = ""  # llama-server binary; empty: the installed one
    model_name: Text = "gemma-3-270m-q4_k_m"  # what the server is asked for and reports
    context: Annotated[int, _int(256, 1 << 20)] = 16384  # -c: KV cache tokens, one pool shared by the slots
    parallel: Annotated[int, _int(1, 64)] = 2  # -np: requests decoded together
    threads: Annotated[int, _int(0, 256)] = 1  # -t: 0 = every core of this machine; 1: see config/llm.yaml
    swa_full: bool = True  # --swa-full: Gemma 3's sliding-window layers keep the whole prompt, so
    #                        the prefix cache can serve prompts longer than the 512-token window
    startup_timeout_s: Annotated[float, _seconds(3600.0)] = 120.0  # model load until /health says ok
    health_timeout_s: Annotated[float, _seconds(600.0)] = 5.0  # a call that timed out: /health silent this long = hung server
    timeout_s: Annotated[float, _seconds(3600.0)] = 120.0  # per call (a list of prompts on 2 cores takes a while)
    # a list of n prompts: timeout_s + this * (n - 1) (docs/llm.md)
    timeout_per_prompt_s: Annotated[float, bounded(low=0.0, high=600.0)] = 8.0
    # and every call: + this * its max_tokens (a base model often runs to max_tokens; docs/llm.md)
    timeout_per_token_s: Annotated[float, bounded(low=0.0, high=60.0)] = 0.5
    max_batch_size: Annotated[int, _int(1, 100_000)] = 32  # prompts per list request
    extra_args: Names = ()  # more llama-server options, e.g. ["--cache-reuse", "256"]


class LLMSettings(Schema):
    """The whole file. `source` is the file read (for messages), not one of its keys."""

    default: str = "offline"  # the spec used when none is given
    client: ClientSettings = ClientSettings()
    openai: OpenAISettings = OpenAISettings()
    local: LocalSettings = LocalSettings()
    offline: dict[str, Any] = Field(default_factory=dict)  # keyword options for OfflineProvider
    _source: str = PrivateAttr(default="")

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        """A section written with nothing under it (`client:`) holds the defaults."""
        if isinstance(data, dict):
            return {key: {} if value is None and key in ("client", "openai", "local", "offline") else value
                    for key, value in data.items()}
        return data

    @property
    def source(self) -> str:
        return self._source


def default_settings_path() -> Path:
    return config_path("llm.yaml")


def load_llm_settings(path: str | Path | None = None) -> LLMSettings:
    """Read and validate llm.yaml. A missing default file gives the defaults; a missing explicit
    file is an error."""
    if path is None:
        try:
            path = default_settings_path()
        except ConfigError:
            return LLMSettings()
        if not Path(path).exists():
            return LLMSettings()
    data = load_yaml(path)
    return parse_llm_settings({} if data is None else data, file=path)


def parse_llm_settings(data: Any, *, file: str | Path = "<llm settings>") -> LLMSettings:
    """`data` (a parsed llm.yaml) as settings; ConfigError naming the file and key otherwise."""
    settings = validate(LLMSettings, data, file=file)
    settings._source = str(file)
    return settings
