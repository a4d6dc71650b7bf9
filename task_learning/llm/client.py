"""`LLMClient`: the one door every LLM call in the project goes through.

A provider only talks to a model; the client adds what every caller needs and none should write
twice: accounting by prompt type, a response cache, retries with exponential backoff on transient
failures, a timeout per call, a cap on requests per scope (object), a token budget per run, an
optional cassette recorder, and thread safety (STARS sends one tree level concurrently).
Each of these is a layer of its own (llm/layers/), composed here; `LLMClient` keeps the order a
request meets them in and the public face its callers use.

`complete` never raises for a provider failure: it returns an `LLMResponse` whose `error` says
what went wrong (a dead endpoint, garbage, a spent budget), counted as a failure in `usage`.

Counting, per prompt type (`client.usage`, a `task_learning.types.LLMUsage`):
* calls: requests handed to the provider (a request retried three times is one call; the retries
  are counted apart in `client.retries`);
* prompt/completion tokens: as reported by successful responses;
* cache_hits: requests answered by the cache (no call, no tokens);
* failures: requests answered with an error, including those refused by the cap or the budget
  (which make no call).

Order: the cache answers first (a hit is free, so it is served even past a cap or budget); then
the scope cap (`request.scope`; the empty scope is a scope like any other) and the token budget
are checked; then the provider is called, retried on TransientProviderError only. The budget is
checked before each call against the tokens already used, so concurrent calls in flight may
overshoot it by at most one call each.

Circuit breaker: after `breaker_failures` attempts in a row that could not reach the endpoint
(connection refused, no complete answer by the deadline), after `breaker_failures` answers in a
row that were errors (an endpoint that fails every call: 5xx after the retries, error bodies, no
logprobs), or at once when no later call can succeed (FatalProviderError: refused credentials, a
model or path the endpoint does not have, a local server that died or hangs), the breaker opens:
every later request fails at once (no call, no retry) and `unavailable` says why. Callers that
run many requests (a STARS run, BCR trials) call `raise_if_unavailable()` between units of work,
so a dead endpoint ends the run in seconds with a clear message and a non-zero exit instead of
minutes of retries per object. A long-lived caller (a ROS node serving goal after goal) calls
`reset_breaker()` before each goal, so an endpoint that came back (a restarted server) is used.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from task_learning.errors import LLM_UNAVAILABLE, ConfigError, LLMUnavailableError
from task_learning.llm.base import LLMProvider, LLMRequest, LLMResponse
from task_learning.llm.cache import ResponseCache
from task_learning.llm.latency import FixedLatencyProvider
from task_learning.llm.layers.admission import Admission
from task_learning.llm.layers.batching import Batcher, WorkerPools
from task_learning.llm.layers.breaker import CircuitBreaker
from task_learning.llm.layers.calls import ProviderCalls
from task_learning.llm.layers.endpoint import Endpoint, close_quietly
from task_learning.llm.layers.retry import Retrier, RetryPolicy
from task_learning.llm.layers.single_flight import SingleFlight
from task_learning.llm.layers.usage_counter import UsageCounter
from task_learning.llm.replay import CallRecorder, CassetteRecorder, ReplayProvider
from task_learning.llm.settings import ClientSettings, LLMSettings, load_llm_settings
from task_learning.llm.usage import usage_diff
from task_learning.types import LLMUsage

log = logging.getLogger(__name__)


class LLMClient:
    """A provider wrapped in the layers of llm/layers/: accounting, cache, retries, caps, budget,
    circuit breaker, recording and list-prompt batches. Thread-safe. This class only composes
    them and keeps the order a request meets them in (the module's docstring)."""

    def __init__(
        self,
        provider: LLMProvider,
        *,
        cache: ResponseCache | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_requests_per_scope: int | None = 1500,
        token_budget: int | None = None,
        recorder: CallRecorder | None = None,
        max_backoff_s: float = 30.0,
        jitter: float = 0.5,
        seed: int = 0,
        max_in_flight: int | None = None,
        max_batch_size: int = 1,
        sleep: Callable[[float], None] = time.sleep,
        breaker_failures: int = 5,
    ) -> None:
        self.provider = provider
        self.cache = cache
        self.recorder = recorder
        self.endpoint = Endpoint(provider)
        self.counter = UsageCounter()
        self.breaker = CircuitBreaker(self.endpoint, breaker_failures)
        policy = RetryPolicy(max_retries=int(max_retries), backoff_s=float(backoff_s),
                             max_backoff_s=float(max_backoff_s), jitter=float(jitter))
        retrier = Retrier(self.endpoint, self.breaker, self.counter, policy, seed=seed,
                          max_in_flight=max_in_flight, sleep=sleep)
        self.calls = ProviderCalls(self.endpoint, retrier, self.counter, timeout_s)
        self.admission = Admission(self.counter, max_requests_per_scope=max_requests_per_scope,
                                   token_budget=token_budget)
        self.flight = SingleFlight()
        self.pools = WorkerPools(int(max_in_flight or 32))
        self.batcher = Batcher(self.calls, max_batch_size, self.pools)

    @classmethod
    def from_settings(cls, provider: LLMProvider, settings: ClientSettings, *, cache: ResponseCache | None = None,
                      recorder: CallRecorder | None = None,
                      sleep: Callable[[float], None] = time.sleep) -> "LLMClient":
        """A client with the limits of `client:` in llm.yaml (its `cache` entry is the caller's
        to turn into a ResponseCache: `cache`)."""
        return cls(provider, cache=cache, recorder=recorder, sleep=sleep, timeout_s=settings.timeout_s,
                   max_retries=settings.max_retries, backoff_s=settings.backoff_s,
                   max_backoff_s=settings.max_backoff_s, jitter=settings.jitter, seed=settings.seed,
                   max_requests_per_scope=settings.max_requests_per_scope, token_budget=settings.token_budget,
                   max_in_flight=settings.max_in_flight, max_batch_size=settings.max_batch_size,
                   breaker_failures=settings.breaker_failures)

    def __repr__(self) -> str:
        return (
            f"LLMClient(provider={self.provider_name!r}, model={self.endpoint.model!r}, "
            f"cache={'on' if self.cache is not None else 'off'}, timeout_s={self.timeout_s}, "
            f"max_retries={self.max_retries}, max_requests_per_scope={self.max_requests_per_scope}, "
            f"token_budget={self.token_budget})"
        )

    # ------------------------------------------------------------------------------ the limits
    @property
    def timeout_s(self) -> float:
        return self.calls.timeout_s

    @timeout_s.setter
    def timeout_s(self, value: float) -> None:
        self.calls.timeout_s = float(value)

    @property
    def max_retries(self) -> int:
        return self.calls.retrier.policy.max_retries

    @property
    def jitter(self) -> float:
        return self.calls.retrier.policy.jitter

    @property
    def max_requests_per_scope(self) -> int:
        return self.admission.max_requests_per_scope

    @property
    def token_budget(self) -> int:
        return self.admission.token_budget

    @property
    def max_batch_size(self) -> int:
        return self.batcher.max_batch_size

    @property
    def batches_refused(self) -> bool:
        return self.calls.batches_refused

    @property
    def breaker_failures(self) -> int:
        return self.breaker.failures

    # ----------------------------------------------------------------------------------- calls
    def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request (from the cache or the provider). Never raises for provider trouble."""
        if not isinstance(request, LLMRequest):
            raise TypeError(f"LLMClient.complete expects an LLMRequest, got {type(request).__name__}")
        key = request.cache_key(self.provider_name, self.model_for(request))
        if self.cache is None:
            return self._complete_uncached(request, key)
        hit = self._cache_hit(request, key)
        if hit is not None:
            return hit
        waiting = self.flight.claim(key)
        if waiting is not None:  # the same request is in flight: its answer, once the cache has it
            waiting.wait()
            hit = self._cache_hit(request, key)
            return hit if hit is not None else self._complete_uncached(request, key)
        try:
            return self._complete_uncached(request, key)
        finally:
            self.flight.release(key)

    def complete_many(self, requests: list[LLMRequest]) -> list[LLMResponse]:
        """Answer independent requests (one search-tree level, of one object or of many) with as
        few round trips as the provider allows; answers come back in request order.

        Cache hits and the single flight work as in `complete`; identical requests in the list
        make one call (the others count as cache hits). The rest is admitted one by one (scope
        cap, budget: a whole batch may overshoot the budget) and sent by the batcher (layers/
        batching.py) in list-prompt requests of at most `max_batch_size` prompts. Never raises
        for provider trouble.
        """
        for request in requests:
            if not isinstance(request, LLMRequest):
                raise TypeError(f"LLMClient.complete_many expects LLMRequests, got {type(request).__name__}")
        answers: list[LLMResponse | None] = [None] * len(requests)
        keys = [r.cache_key(self.provider_name, self.model_for(r)) for r in requests]
        to_send, owned, later = self._claim_all(requests, keys, answers)
        try:
            admitted = [i for i in to_send if self._refusal_into(requests[i], answers, i) is None]
            for indices, responses in self.batcher.send([(i, requests[i]) for i in admitted]):
                for i, response in zip(indices, responses):
                    answers[i] = response
                    self._settle(requests[i], keys[i], response)
        finally:
            for key in owned:
                self.flight.release(key)
        for i in later:  # now answered by the cache, or asked again if that call failed
            answers[i] = self.complete(requests[i])
        return [a if a is not None else LLMResponse(text="", error="no answer") for a in answers]

    def _claim_all(self, requests: list[LLMRequest], keys: list[str],
                   answers: list[LLMResponse | None]) -> tuple[list[int], list[str], list[int]]:
        """Cache hits into `answers`; then (requests to send, keys claimed for them, requests
        to ask after those: duplicates and requests another thread is already making)."""
        to_send: list[int] = []
        owned: list[str] = []
        later: list[int] = []
        for i, request in enumerate(requests):
            if self.cache is None:
                to_send.append(i)
                continue
            hit = self._cache_hit(request, keys[i])
            if hit is not None:
                answers[i] = hit
            elif self.flight.try_claim(keys[i]):
                owned.append(keys[i])
                to_send.append(i)
            else:
                later.append(i)
        return to_send, owned, later

    def _refusal_into(self, request: LLMRequest, answers: list[LLMResponse | None], i: int) -> str | None:
        """The refusal of a request the breaker or admission turns away, written to answers[i];
        None when it may be sent."""
        refusal = self._refusal(request)
        if refusal is None:
            return None
        answers[i] = LLMResponse(text="", error=refusal)
        return refusal

    def _refusal(self, request: LLMRequest) -> str | None:
        """Why a request is not sent (the breaker is open, the scope cap or the budget is
        reached), counted as a failure; None when it was admitted (counted as a call)."""
        kind = request.prompt_type or "unknown"
        refusal = self.breaker.refusal()
        if refusal:
            self.counter.count(kind, request.scope, failures=1)
            return refusal
        refusal = self.admission.admit(request, kind)
        if refusal:
            log.warning("LLM request refused (%s): %s", kind, refusal)
            return refusal
        return None

    def _complete_uncached(self, request: LLMRequest, key: str) -> LLMResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            return LLMResponse(text="", error=refusal)
        response = self.calls.call(request)
        self._settle(request, key, response)
        return response

    def _settle(self, request: LLMRequest, key: str, response: LLMResponse) -> None:
        """Count one answered call, cache and record it."""
        self.breaker.note_answer(response)
        self.counter.count_answer(request.prompt_type or "unknown", request.scope, response)
        if response.ok and self.cache is not None:
            self.cache.put(key, response)
        if self.recorder is not None:  # a cassette that cannot be written ends the run (OutputError)
            self.recorder.record(request, response, provider=self.provider_name, model=self.model_for(request))

    def _cache_hit(self, request: LLMRequest, key: str) -> LLMResponse | None:
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            self.counter.count(request.prompt_type or "unknown", request.scope, cache_hits=1)
        return hit

    # ------------------------------------------------------------------------- circuit breaker
    @property
    def unavailable(self) -> str:
        """Why the endpoint stopped serving this run; "" while the breaker is closed."""
        return self.breaker.reason

    def raise_if_unavailable(self) -> None:
        """LLMUnavailableError when the breaker is open: for loops over many objects or trials."""
        reason = self.unavailable
        if reason:
            raise LLMUnavailableError(f"{LLM_UNAVAILABLE}, run stopped: {reason}")

    def reset_breaker(self) -> None:
        """Close the breaker: the next request calls the endpoint again (a long-lived node does
        this before each goal, so a restarted server is used; a run never needs it)."""
        self.breaker.reset()

    # ------------------------------------------------------------------------------ accounting
    def use_provider(self, provider: LLMProvider) -> None:
        """Have every layer call `provider` from now on (the experiment puts its answer sharing
        around the client's own provider): the layers hold it through one Endpoint."""
        self.provider = self.endpoint.provider = provider

    @property
    def provider_name(self) -> str:
        return self.endpoint.name

    def model_for(self, request: LLMRequest) -> str:
        """The model that serves a request (providers with several models expose `model_for`)."""
        return self.endpoint.model_for(request)

    @property
    def usage(self) -> LLMUsage:
        """A snapshot of the run's usage (a copy: safe to keep and compare)."""
        return self.counter.run_usage()

    def usage_snapshot(self) -> LLMUsage:
        return self.usage

    def usage_since(self, snapshot: LLMUsage) -> LLMUsage:
        """Usage since `snapshot` (from `usage_snapshot()`): for one object handled alone."""
        return usage_diff(self.usage, snapshot)

    def scope_usage(self, scope: str) -> LLMUsage:
        """Usage of one scope (object) only, exact even when objects are handled concurrently."""
        return self.counter.scope_usage(scope)

    def scope_requests(self, scope: str) -> int:
        return self.admission.scope_requests(scope)

    @property
    def retries(self) -> int:
        return self.counter.retries()

    def stats(self) -> dict[str, object]:
        """Usage plus what `LLMUsage` does not hold: retries by type, refusals, the budget and
        why the endpoint is unavailable."""
        out = self.counter.stats()
        out["token_budget"] = self.token_budget
        out["unavailable"] = self.unavailable
        return out

    # -------------------------------------------------------------------------------- lifetime
    def close(self) -> None:
        self.pools.close()
        for part in (self.cache, self.recorder, self.provider):
            close_quietly(part)

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------ factory
MAKE_CLIENT_OPTIONS = (
    "config", "settings", "env",
    "timeout_s", "max_retries", "backoff_s", "max_backoff_s", "jitter", "seed",
    "max_requests_per_scope", "token_budget", "max_in_flight", "max_batch_size", "cache", "record", "latency_s", "sleep",
    "max_response_bytes", "breaker_failures",
    "base_url", "api_key", "completion_model", "selection_model", "selection_api", "offline", "local_server",
)
SPECS = "offline, openai, local, replay:FILE, record:FILE"
# The models by environment (pointing at your own model edits no tracked file); below an explicit
# option, above config/llm.yaml. With `local`, the completion model is a GGUF file to serve.
ENV_COMPLETION_MODEL = "TASK_LEARNING_LLM_MODEL"
ENV_SELECTION_MODEL = "TASK_LEARNING_LLM_SELECTION_MODEL"


def make_client(spec: str | None = None, **options: Any) -> LLMClient:
    """Build a client from a spec and config/llm.yaml.

    spec: "offline" | "openai" | "local" | "replay:FILE" | "record:FILE" (openai, recording every
    real call to FILE); None or "" takes `default` from llm.yaml. "local" starts llama-server with
    the installed model (llm/local_provider.py) and stops it when the client closes, unless a
    base_url (a running server) or a local_server (a LocalServer the caller owns) is given.
    options: config (path of an llm.yaml) or settings (an LLMSettings); env (a mapping instead of
    os.environ); any `client:` value (timeout_s, max_retries, backoff_s, max_backoff_s, jitter,
    seed, max_requests_per_scope, token_budget, max_in_flight, max_batch_size, cache: None/False/"off" | True/
    "memory" | a path | a ResponseCache); record (a cassette path, with any spec); latency_s (wrap
    the provider in FixedLatencyProvider, for benches); openai values base_url, api_key,
    completion_model, selection_model, selection_api (environment: OPENAI_BASE_URL,
    TASK_LEARNING_LLM_MODEL, TASK_LEARNING_LLM_SELECTION_MODEL); offline (options for
    OfflineProvider); local_server.
    Bad specs and options raise ConfigError with a clear message.
    """
    unknown = sorted(set(options) - set(MAKE_CLIENT_OPTIONS))
    if unknown:
        raise ConfigError(None, "make_client", f"unknown option(s) {', '.join(unknown)} (allowed: {', '.join(MAKE_CLIENT_OPTIONS)})")
    settings: LLMSettings = options.get("settings") or load_llm_settings(options.get("config"))
    env: Mapping[str, str] = options["env"] if options.get("env") is not None else os.environ
    spec = (spec or settings.default or "").strip()
    kind, _, argument = spec.partition(":")
    kind, argument = kind.strip().lower(), argument.strip()
    provider, record_to = _provider(spec, kind, argument, settings, env, options)
    if options.get("latency_s"):
        provider = FixedLatencyProvider(provider, float(options["latency_s"]))
    limits = settings.client
    if kind == "local":  # a list of prompts on a few cores takes longer than a hosted call
        limits = limits.model_copy(update={"timeout_s": settings.local.timeout_s,
                                           "max_batch_size": settings.local.max_batch_size})
    try:
        # an explicit option over the file, as the file's type (a command line may give 5 for 5.0)
        limits = limits.model_copy(update={name: type(getattr(limits, name))(options[name])
                                           for name in CLIENT_LIMITS if options.get(name) is not None})
        return LLMClient.from_settings(
            provider, limits, cache=_make_cache(options["cache"] if "cache" in options else limits.cache),
            recorder=CassetteRecorder(record_to) if record_to else None, sleep=options.get("sleep") or time.sleep)
    except BaseException as exc:
        close_quietly(provider)  # a local server started for this client
        if isinstance(exc, (TypeError, ValueError)):
            raise ConfigError(None, "make_client", f"bad client option: {exc}") from None
        raise


# The client's limits an option to make_client may set (over `client:` in llm.yaml).
CLIENT_LIMITS = ("timeout_s", "max_retries", "backoff_s", "max_backoff_s", "jitter", "seed", "max_requests_per_scope",
                 "token_budget", "max_in_flight", "max_batch_size", "breaker_failures")


def _provider(spec: str, kind: str, argument: str, settings: LLMSettings, env: Mapping[str, str],
              options: Mapping[str, Any]) -> tuple[LLMProvider, str | None]:
    """The provider a spec names, and the cassette to record its calls to (None: none)."""
    record_to = options.get("record")
    if kind in ("record", "replay") and not argument:
        raise ConfigError(None, "llm", f"'{kind}:' needs a cassette file ({kind}:FILE); expected one of {SPECS}")
    if kind == "offline" and not argument:
        return _offline_provider(dict(settings.offline) | dict(options.get("offline") or {})), record_to
    if kind == "openai" and not argument:
        return _openai_provider(settings, env, options), record_to
    if kind == "local" and not argument:
        from task_learning.llm.local_provider import local_provider

        local_options = dict(options)
        local_options.setdefault("completion_model", env.get(ENV_COMPLETION_MODEL))
        return local_provider(settings.local, env, local_options), record_to
    if kind == "record":
        return _openai_provider(settings, env, options), argument
    if kind == "replay":
        return ReplayProvider(argument), record_to
    raise ConfigError(None, "llm", f"unknown LLM provider {spec!r}; expected one of {SPECS}")


def _make_cache(value: Any) -> ResponseCache | None:
    if isinstance(value, ResponseCache):
        return value
    if value is None or value is False or (isinstance(value, str) and value.strip().lower() in ("off", "none", "")):
        return None
    if value is True or (isinstance(value, str) and value.strip().lower() == "memory"):
        return ResponseCache()
    if isinstance(value, (str, Path)):
        return ResponseCache(Path(value))
    raise ConfigError(None, "cache", f"expected off, memory, a file path or a ResponseCache, got {value!r}")


def _offline_provider(options: dict[str, Any]) -> LLMProvider:
    # By name through the registry: the offline stand-in sits above llm/ (llm/registry.py), and
    # the openai/replay paths must work without it.
    from task_learning.llm.registry import provider_class

    OfflineProvider = provider_class("offline")
    try:
        provider: LLMProvider = OfflineProvider(**options)
        return provider
    except TypeError as exc:
        raise ConfigError(None, "offline", f"bad option for the offline provider: {exc}") from None


def _openai_provider(settings: LLMSettings, env: Mapping[str, str], options: Mapping[str, Any]) -> LLMProvider:
    from task_learning.llm.openai_provider import OpenAIProvider  # keeps `openai` off other paths

    o = settings.openai
    base_url = options.get("base_url") or env.get("OPENAI_BASE_URL") or o.base_url
    api_key = options.get("api_key") or env.get(o.api_key_env or "OPENAI_API_KEY") or ""
    if not isinstance(base_url, str) or not base_url.strip().lower().startswith(("http://", "https://")):
        from task_learning.llm.http_guard import redact_url

        raise ConfigError(settings.source or None, "openai.base_url",
                          f"expected an http:// or https:// URL, got {redact_url(str(base_url))!r}")
    if not api_key and "api.openai.com" in base_url:
        raise ConfigError(
            settings.source or None, "openai",
            f"no API key: set {o.api_key_env or 'OPENAI_API_KEY'} (or OPENAI_BASE_URL to a local server)",
        )
    selection_api = options.get("selection_api") or o.selection_api
    if selection_api not in ("chat", "completions"):
        raise ConfigError(None, "selection_api", f"expected chat or completions, got {selection_api!r}")
    return OpenAIProvider(
        base_url=base_url,
        api_key=api_key,
        completion_model=options.get("completion_model") or env.get(ENV_COMPLETION_MODEL) or o.completion_model,
        selection_model=options.get("selection_model") or env.get(ENV_SELECTION_MODEL) or o.selection_model,
        selection_api=selection_api,
        selection_prompt_types=o.selection_prompt_types,
        organization=o.organization or None,
        require_logprobs=o.require_logprobs,
        constraints=o.constraints,
        max_response_bytes=int(options.get("max_response_bytes") or settings.client.max_response_bytes),
    )
