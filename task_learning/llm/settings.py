"""`config/llm.yaml`: which provider, which endpoint and models, and the client's limits.

Precedence for every value: an explicit option to `make_client` > the standard environment
variables (OPENAI_BASE_URL, OPENAI_API_KEY or the variable `openai.api_key_env` names) > the file
> the defaults below. The API key is read from the environment (or an explicit option) only,
never from a config file, and is kept out of every repr, log line and error.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from task_learning.config import check_keys, config_path, expect_number, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError

SELECTION_APIS = ("chat", "completions")


@dataclass(frozen=True)
class ClientSettings:
    timeout_s: float = 30.0  # per call
    max_retries: int = 4  # on 429 / 5xx / timeouts, after the first attempt
    backoff_s: float = 1.0  # first retry delay; doubles each retry
    max_backoff_s: float = 30.0
    jitter: float = 0.5  # each delay is multiplied by 1 + jitter * U[0, 1) from a seeded RNG
    seed: int = 0
    max_requests_per_scope: int = 1500  # per object (the original STARS cap); 0: no cap
    token_budget: int = 0  # prompt + completion tokens per run; 0: no budget
    max_in_flight: int = 16  # concurrent provider calls; 0: unbounded
    max_batch_size: int = 256  # prompts per list-prompt request (complete_many); 1: no lists
    cache: str = "memory"  # off | memory | a JSONL file path (relative: to the working directory)
    max_response_bytes: int = 8_000_000  # an answer larger than this is refused, unread past it
    breaker_failures: int = 5  # unreachable attempts in a row that end the run; 0: never


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    completion_model: str = "gpt-3.5-turbo-instruct"  # goal requests: completions + logprobs
    selection_model: str = "gpt-4o-mini"
    selection_api: str = "chat"  # chat | completions
    selection_prompt_types: tuple[str, ...] = ("selection", "bcr_selection")
    organization: str = ""
    require_logprobs: bool = True  # a response lacking requested logprobs is an error


@dataclass(frozen=True)
class LocalSettings:
    """The `local` provider: llama.cpp's server with a GGUF model, started and stopped by the
    client (or a running one at `base_url`). Defaults chosen for 2 cores (docs/llm.md)."""

    base_url: str = ""  # a running llama-server (http://127.0.0.1:PORT/v1); empty: start one
    model: str = ""  # GGUF file to serve; empty: the installed Gemma 3 270M (`task-learning llm install`)
    server: str = ""  # llama-server binary; empty: the installed one
    model_name: str = "gemma-3-270m-q4_k_m"  # what the server is asked for and reports
    context: int = 8192  # -c: KV cache tokens, one pool shared by the slots
    parallel: int = 2  # -np: requests decoded together
    threads: int = 1  # -t: 0 = every core of this machine; 1: see config/llm.yaml
    swa_full: bool = True  # --swa-full: Gemma 3's sliding-window layers keep the whole prompt, so
    #                        the prefix cache can serve prompts longer than the 512-token window
    startup_timeout_s: float = 120.0  # model load until /health says ok
    health_timeout_s: float = 5.0  # a call that timed out: /health silent this long = hung server
    timeout_s: float = 120.0  # per call (a list of prompts on 2 cores takes a while)
    timeout_per_prompt_s: float = 8.0  # a list of n prompts: timeout_s + this * (n - 1) (docs/llm.md)
    max_batch_size: int = 32  # prompts per list request
    extra_args: tuple[str, ...] = ()  # more llama-server options, e.g. ["--cache-reuse", "256"]


@dataclass(frozen=True)
class LLMSettings:
    default: str = "offline"  # the spec used when none is given
    client: ClientSettings = field(default_factory=ClientSettings)
    openai: OpenAISettings = field(default_factory=OpenAISettings)
    local: LocalSettings = field(default_factory=LocalSettings)
    offline: Mapping[str, Any] = field(default_factory=dict)  # keyword options for OfflineProvider
    source: str = ""  # the file read, for messages


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
    if data is None:
        data = {}
    return parse_llm_settings(data, file=path)


def parse_llm_settings(data: Any, *, file: str | Path = "<llm settings>") -> LLMSettings:
    top = check_keys(data, file=file, key="", optional=("default", "client", "openai", "local", "offline"))
    raw_client = top.get("client", {})
    if isinstance(raw_client, dict) and isinstance(raw_client.get("cache"), bool):
        # YAML reads a bare `off`/`on` as a boolean.
        raw_client = dict(raw_client, cache="memory" if raw_client["cache"] else "off")
    default = str(expect_type(top.get("default", LLMSettings.default), str, file=file, key="default"))
    client = _dataclass_from(ClientSettings, raw_client, file=file, key="client")
    openai = _dataclass_from(OpenAISettings, top.get("openai", {}), file=file, key="openai")
    local = _dataclass_from(LocalSettings, top.get("local", {}), file=file, key="local")
    _check_local(local, file)
    offline = top.get("offline", {}) or {}
    expect_type(offline, dict, file=file, key="offline")
    _check_client(client, file)
    if openai.selection_api not in SELECTION_APIS:
        raise ConfigError(file, "openai.selection_api", f"expected one of {', '.join(SELECTION_APIS)}, got {openai.selection_api!r}")
    if client.cache.strip() == "":
        raise ConfigError(file, "client.cache", "expected off, memory or a file path")
    return LLMSettings(default=default, client=client, openai=openai, local=local, offline=dict(offline),
                       source=str(file))


# The range of every numeric client setting (low, high, low end open), checked by the shared
# number check (task_learning.numbers), so NaN and infinities are refused with the rest.
CLIENT_RANGES: dict[str, tuple[float, float, bool]] = {
    "timeout_s": (0.0, 3600.0, True),
    "max_retries": (0, 100, False),
    "backoff_s": (0.0, 600.0, False),
    "max_backoff_s": (0.0, 3600.0, False),
    "jitter": (0.0, 1.0, False),
    "seed": (0, 2**32 - 1, False),
    "max_requests_per_scope": (0, 10_000_000, False),
    "token_budget": (0, 10**12, False),
    "max_in_flight": (0, 1024, False),
    "max_batch_size": (0, 100_000, False),
    "max_response_bytes": (1024, 2**31, False),
    "breaker_failures": (0, 1000, False),
}


def _check_client(client: ClientSettings, file: str | Path) -> None:
    for name, (low, high, low_open) in CLIENT_RANGES.items():
        expect_number(getattr(client, name), file=file, key=f"client.{name}", low=low, high=high,
                      low_open=low_open, integer=isinstance(low, int))


# The range of every numeric `local` setting (low, high, low end open), as for the client's.
LOCAL_RANGES: dict[str, tuple[float, float, bool]] = {
    "context": (256, 1 << 20, False),
    "parallel": (1, 64, False),
    "threads": (0, 256, False),
    "max_batch_size": (1, 100_000, False),
    "startup_timeout_s": (0.0, 3600.0, True),
    "health_timeout_s": (0.0, 600.0, True),
    "timeout_s": (0.0, 3600.0, True),
    "timeout_per_prompt_s": (0.0, 600.0, False),
}


def _check_local(local: LocalSettings, file: str | Path) -> None:
    for name, (low, high, low_open) in LOCAL_RANGES.items():
        expect_number(getattr(local, name), file=file, key=f"local.{name}", low=low, high=high,
                      low_open=low_open, integer=isinstance(low, int))
    if local.base_url and not local.base_url.lower().startswith(("http://", "https://")):
        raise ConfigError(file, "local.base_url", f"expected an http:// URL or nothing, got {local.base_url!r}")


def _dataclass_from(cls: type, raw: Any, *, file: str | Path, key: str) -> Any:
    """Build a settings dataclass from a mapping, checking names and types against its defaults."""
    defaults = cls()
    names = list(vars(defaults))
    raw = check_keys(raw if raw is not None else {}, file=file, key=key, optional=names)
    values: dict[str, Any] = {}
    for name, value in raw.items():
        default = getattr(defaults, name)
        where = join_key(key, name)
        if isinstance(default, bool):
            values[name] = expect_type(value, bool, file=file, key=where)
        elif isinstance(default, float):
            if isinstance(value, bool):
                raise ConfigError(file, where, f"expected a number, got {value!r}")
            values[name] = float(expect_type(value, (int, float), file=file, key=where))
        elif isinstance(default, int):
            if isinstance(value, bool):
                raise ConfigError(file, where, f"expected int, got {value!r}")
            values[name] = expect_type(value, int, file=file, key=where)
        elif isinstance(default, tuple):
            expect_type(value, list, file=file, key=where)
            for i, item in enumerate(value):
                expect_type(item, str, file=file, key=join_key(where, i))
            values[name] = tuple(value)
        else:
            values[name] = "" if value is None else expect_type(value, str, file=file, key=where)
    return cls(**values)
