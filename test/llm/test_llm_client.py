"""LLMClient: accounting, cache, retries with backoff, scope cap, token budget, thread safety,
and make_client / llm.yaml validation. Uses small in-process providers (no network)."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from task_learning.errors import ConfigError
from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError, TokenLogprob, TransientProviderError
from task_learning.llm.cache import ResponseCache
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm.latency import FixedLatencyProvider
from task_learning.llm.settings import load_llm_settings, parse_llm_settings


class EchoProvider:
    """Answers every request with its prefix, 10 prompt + 5 completion tokens; scripted failures."""

    name = "echo"
    model = "echo-1"

    def __init__(self, failures: list[Exception] | None = None, delay_s: float = 0.0) -> None:
        self.failures = list(failures or [])
        self.delay_s = delay_s
        self.calls = 0
        self.timeouts: list[float] = []
        self._lock = threading.Lock()

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        with self._lock:
            self.calls += 1
            self.timeouts.append(timeout_s)
            failure = self.failures.pop(0) if self.failures else None
        if self.delay_s:
            time.sleep(self.delay_s)
        if failure is not None:
            raise failure
        text = f"answer to {request.context.get('prefix', '')}"
        return LLMResponse(text=text, tokens=[TokenLogprob(text, -0.1)], prompt_tokens=10, completion_tokens=5)


def req(prefix: str = "", prompt_type: str = "initial", scope: str = "Mug|1") -> LLMRequest:
    return LLMRequest(prompt_type=prompt_type, prompt="P" + prefix, logprobs=5, context={"prefix": prefix}, scope=scope)


def fast(provider, **kw) -> LLMClient:
    kw.setdefault("backoff_s", 0.001)
    kw.setdefault("max_backoff_s", 0.002)
    return LLMClient(provider, **kw)


def test_accounting_by_prompt_type_and_timeout_passed():
    provider = EchoProvider()
    client = fast(provider, timeout_s=7.5)
    for t in ("initial", "recurse", "recurse", "selection"):
        assert client.complete(req(t, prompt_type=t)).ok
    usage = client.usage
    assert usage.calls == 4 and usage.by_type["recurse"].calls == 2
    assert usage.prompt_tokens == 40 and usage.completion_tokens == 20
    assert usage.by_type["selection"].completion_tokens == 5
    assert provider.timeouts == [7.5] * 4


def test_cache_rerun_makes_zero_calls_and_counts_hits():
    provider = EchoProvider()
    client = fast(provider, cache=ResponseCache())
    first = [client.complete(req(p)) for p in ("", " a", " b")]
    second = [client.complete(req(p)) for p in ("", " a", " b")]
    assert provider.calls == 3
    assert [r.text for r in first] == [r.text for r in second]
    assert not any(r.cached for r in first) and all(r.cached for r in second)
    assert client.usage.calls == 3 and client.usage.cache_hits == 3
    assert client.usage.prompt_tokens == 30  # hits cost no tokens
    # Mutating what a caller received does not change the cache.
    second[0].tokens.clear()
    assert client.complete(req("")).tokens


def test_failed_responses_are_not_cached():
    provider = EchoProvider(failures=[ProviderError("bad request")])
    client = fast(provider, cache=ResponseCache())
    assert not client.complete(req()).ok
    assert client.complete(req()).ok
    assert provider.calls == 2 and client.usage.cache_hits == 0


def test_persistent_cache_serves_a_second_run(tmp_path):
    path = tmp_path / "cache.jsonl"
    first = fast(EchoProvider(), cache=ResponseCache(path))
    expected = [first.complete(req(p)) for p in ("", " x")]
    first.close()
    with path.open("a") as f:
        f.write("{damaged line\n")
    provider = EchoProvider()
    second = fast(provider, cache=ResponseCache(path))
    again = [second.complete(req(p)) for p in ("", " x")]
    assert provider.calls == 0 and second.usage.calls == 0 and second.usage.cache_hits == 2
    assert [(r.text, r.tokens) for r in again] == [(r.text, r.tokens) for r in expected]


def test_cache_is_keyed_by_provider_model_and_request():
    cache = ResponseCache()
    a, b = EchoProvider(), EchoProvider()
    b.model = "echo-2"
    fast(a, cache=cache).complete(req())
    fast(b, cache=cache).complete(req())
    assert (a.calls, b.calls) == (1, 1)


def test_retries_with_seeded_exponential_backoff():
    sleeps: list[float] = []
    failures = [TransientProviderError("429"), TransientProviderError("503"), TransientProviderError("timeout")]
    client = LLMClient(EchoProvider(failures=failures), max_retries=3, backoff_s=0.1, max_backoff_s=10, jitter=0.5, seed=7, sleep=sleeps.append)
    assert client.complete(req()).ok
    assert len(sleeps) == 3 and client.retries == 3
    for attempt, delay in enumerate(sleeps):
        base = 0.1 * 2**attempt
        assert base <= delay < base * 1.5
    again: list[float] = []
    failures = [TransientProviderError("429"), TransientProviderError("503"), TransientProviderError("timeout")]
    LLMClient(EchoProvider(failures=failures), max_retries=3, backoff_s=0.1, max_backoff_s=10, jitter=0.5, seed=7, sleep=again.append).complete(req())
    assert again == sleeps  # reproducible


def test_backoff_capped_and_retry_after_honoured():
    sleeps: list[float] = []
    error = TransientProviderError("429")
    error.retry_after_s = 3.0
    client = LLMClient(EchoProvider(failures=[error, TransientProviderError("x")] * 3), max_retries=6, backoff_s=1.0, max_backoff_s=2.0, jitter=0.0, sleep=sleeps.append)
    client.complete(req())
    assert sleeps[0] == 2.0  # Retry-After 3 s, capped to max_backoff_s
    assert max(sleeps) == 2.0


def test_retries_exhausted_give_an_error_response():
    provider = EchoProvider(failures=[TransientProviderError("HTTP 503")] * 10)
    client = fast(provider, max_retries=2)
    response = client.complete(req())
    assert not response.ok and "failed after 3 attempt(s): HTTP 503" in response.error
    assert provider.calls == 3 and client.usage.failures == 1 and client.usage.calls == 1


def test_provider_bugs_and_bad_returns_become_error_responses():
    class Broken(EchoProvider):
        def complete(self, request, timeout_s):
            if request.context.get("prefix") == "crash":
                raise KeyError("oops")
            return "not a response"

    client = fast(Broken())
    crashed = client.complete(req("crash"))
    wrong = client.complete(req("x"))
    assert "unexpected error: KeyError" in crashed.error
    assert "not an LLMResponse" in wrong.error
    assert client.usage.failures == 2
    with pytest.raises(TypeError):
        client.complete("a prompt")  # a programming error, not a provider failure


def test_scope_cap_refuses_without_calling():
    provider = EchoProvider()
    client = fast(provider, max_requests_per_scope=3, cache=ResponseCache())
    results = [client.complete(req(f" {i}")) for i in range(5)]
    assert [r.ok for r in results] == [True, True, True, False, False]
    assert "request cap reached" in results[3].error and "'Mug|1'" in results[3].error
    assert provider.calls == 3
    assert client.complete(req(" 0")).ok  # a cache hit costs nothing, even past the cap
    assert client.complete(req(" 9", scope="Plate|1")).ok  # other scopes unaffected
    assert client.scope_requests("Mug|1") == 3
    assert client.usage.failures == 2 and client.stats()["refused"]["scope_cap"] == 2
    assert client.scope_usage("Mug|1").calls == 3 and client.scope_usage("Plate|1").calls == 1


def test_token_budget_stops_calls():
    provider = EchoProvider()
    client = fast(provider, token_budget=25)  # 15 tokens per call
    results = [client.complete(req(f" {i}")) for i in range(4)]
    assert [r.ok for r in results] == [True, True, False, False]
    assert "token budget spent: 30 of 25" in results[2].error
    assert provider.calls == 2 and client.stats()["refused"]["token_budget"] == 2


def test_usage_snapshot_and_diff_for_one_object():
    client = fast(EchoProvider())
    client.complete(req(" a"))
    before = client.usage_snapshot()
    client.complete(req(" b", prompt_type="recurse"))
    client.complete(req(" c", prompt_type="recurse"))
    delta = client.usage_since(before)
    assert set(delta.by_type) == {"recurse"}
    assert delta.calls == 2 and delta.prompt_tokens == 20
    assert before.calls == 1  # the snapshot is a copy


def test_thread_safe_counts_and_exact_cap_under_concurrency():
    provider = EchoProvider(delay_s=0.001)
    client = fast(provider, max_requests_per_scope=50)
    requests = [req(f" {i}", scope="A") for i in range(120)] + [req(f" {i}", scope="B") for i in range(40)]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(client.complete, requests))
    assert sum(r.ok for r in results) == 90  # 50 for A, 40 for B
    assert provider.calls == 90
    usage = client.usage
    assert usage.calls == 90 and usage.failures == 70 and usage.prompt_tokens == 900


def test_identical_concurrent_requests_make_one_call():
    provider = EchoProvider(delay_s=0.05)
    client = fast(provider, cache=ResponseCache())
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(client.complete, [req(" same")] * 8))
    assert provider.calls == 1
    assert all(r.ok and r.text == "answer to  same" for r in results)
    assert client.usage.calls == 1 and client.usage.cache_hits == 7


def test_fixed_latency_overlaps_and_max_in_flight_bounds_it():
    slow = FixedLatencyProvider(EchoProvider(), 0.05)
    client = fast(slow, max_in_flight=4)
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        assert all(r.ok for r in pool.map(client.complete, [req(f" {i}") for i in range(16)]))
    elapsed = time.monotonic() - started
    # overlapping (4 at once) and bounded (never 5); so at least 4 waves of 0.05 s (no upper bound
    # on wall time: a loaded machine stretches it)
    assert slow.calls == 16 and slow.max_in_flight == 4
    assert elapsed >= 0.19
    with pytest.raises(ValueError):
        FixedLatencyProvider(EchoProvider(), -1)


def test_repr_names_no_secrets():
    text = repr(fast(EchoProvider(), cache=ResponseCache()))
    assert "echo" in text and "cache=on" in text


# ------------------------------------------------------------------------- make_client / yaml
def test_shipped_llm_yaml_is_valid():
    settings = load_llm_settings()
    assert settings.client.max_requests_per_scope == 1500
    assert settings.openai.selection_api in ("chat", "completions")
    assert settings.default == "offline"


@pytest.mark.parametrize(
    "data, key, words",
    [
        ({"client": {"timeout": 3}}, "client.timeout", "did you mean 'timeout_s'"),
        ({"client": {"max_retries": "many"}}, "client.max_retries", "expected an integer"),
        ({"client": {"timeout_s": 0}}, "client.timeout_s", "must be a finite number in (0, 3600]"),
        ({"client": {"timeout_s": float("nan")}}, "client.timeout_s", "finite"),
        ({"client": {"max_retries": 10**9}}, "client.max_retries", "between 0 and 100"),
        ({"client": {"jitter": 2}}, "client.jitter", "must be a finite number in [0, 1]"),
        ({"openai": {"selection_api": "responses"}}, "openai.selection_api", "chat, completions"),
        ({"openai": {"selection_prompt_types": "selection"}}, "openai.selection_prompt_types", "expected list"),
        ({"providers": {}}, "providers", "unknown key"),
    ],
)
def test_bad_llm_yaml_names_the_key(data, key, words):
    with pytest.raises(ConfigError) as info:
        parse_llm_settings(data, file="config/llm.yaml")
    assert info.value.key == key and words in str(info.value)


def test_make_client_rejects_bad_specs_and_options(tmp_path):
    for spec, words in [("gpt", "unknown LLM provider 'gpt'"), ("replay:", "needs a cassette"), ("record:", "needs a cassette")]:
        with pytest.raises(ConfigError, match=words):
            make_client(spec)
    with pytest.raises(ConfigError, match="cannot read cassette"):
        make_client(f"replay:{tmp_path / 'missing.jsonl'}")
    with pytest.raises(ConfigError, match="unknown option"):
        make_client("openai", retries=3)
    with pytest.raises(ConfigError, match="bad client option"):
        make_client("replay:" + str(_empty_cassette(tmp_path)), timeout_s=-1)


def test_make_client_applies_config_file_and_options(tmp_path):
    config = tmp_path / "llm.yaml"
    config.write_text("default: replay:" + str(_empty_cassette(tmp_path)) + "\nclient: {max_retries: 1, token_budget: 99, cache: off}\n")
    client = make_client(config=config)
    assert client.provider.name == "replay"
    assert client.max_retries == 1 and client.token_budget == 99 and client.cache is None
    client = make_client(config=config, max_retries=5, cache="memory", latency_s=0.01)
    assert client.max_retries == 5 and client.cache is not None
    assert isinstance(client.provider, FixedLatencyProvider)
    with pytest.raises(ConfigError, match="cannot read"):
        make_client(config=tmp_path / "nope.yaml")


def test_make_client_offline():
    client = make_client("offline")
    assert client.provider.name == "offline"
    with pytest.raises(ConfigError, match="bad option for the offline provider"):
        make_client("offline", offline={"colour": "red"})


def _empty_cassette(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path
