"""Batched LLM requests: `LLMClient.complete_many` sends many prompts per round trip, counts calls
(prompts) and requests (round trips) apart, falls back to single requests for providers that
refuse lists (once, remembered), and the openai provider sends a real list-prompt request to a
local OpenAI-compatible server through the real `openai` client."""
from __future__ import annotations

import math
import threading

import pytest

from task_learning.llm.base import BatchNotSupported, LLMRequest, LLMResponse, ProviderError, TransientProviderError
from task_learning.llm.cache import ResponseCache
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm.latency import FixedLatencyProvider
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.llm.replay import ReplayProvider, cassette_entry, write_cassette
from task_learning.testing.fake_server import (
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    batch_completion_body,
    completion_body,
    error_body,
)


def req(i: int, scope: str = "A", kind: str = "initial", **kw) -> LLMRequest:
    return LLMRequest(prompt_type=kind, prompt=f"prompt {i}", logprobs=5, context={"i": i}, scope=scope, **kw)


class Echo:
    """Answers 'echo <prompt>'; counts single and batch calls."""

    name = "echo"
    model = "echo-1"

    def __init__(self) -> None:
        self.singles = 0
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        with self.lock:
            self.singles += 1
        return LLMResponse(text=f"echo {request.prompt}", prompt_tokens=3, completion_tokens=2)

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        with self.lock:
            self.batches.append(len(requests))
        return [LLMResponse(text=f"echo {r.prompt}", prompt_tokens=3, completion_tokens=2) for r in requests]


class SinglesOnly(Echo):
    complete_batch = None  # type: ignore[assignment]


class RefusesLists(Echo):
    def __init__(self) -> None:
        super().__init__()
        self.refusals = 0

    def complete_batch(self, requests, timeout_s):
        self.refusals += 1
        raise BatchNotSupported("prompt must be a string")


def test_a_level_is_one_round_trip_with_calls_counted_per_prompt():
    provider = Echo()
    client = LLMClient(provider, cache=None, max_batch_size=64)
    answers = client.complete_many([req(i) for i in range(10)])
    assert [a.text for a in answers] == [f"echo prompt {i}" for i in range(10)]
    assert provider.batches == [10] and provider.singles == 0
    assert client.usage.calls == 10 and client.usage.requests == 1
    assert client.usage.prompt_tokens == 30 and client.usage.completion_tokens == 20
    assert client.usage.to_dict()["requests"] == 1


def test_max_batch_size_cuts_a_level_into_chunks_and_parameters_split_batches():
    provider = Echo()
    client = LLMClient(provider, cache=None, max_batch_size=4)
    requests = [req(i) for i in range(10)] + [req(100 + i, kind="selection", max_tokens=4) for i in range(3)]
    answers = client.complete_many(requests)
    assert [a.text for a in answers] == [f"echo {r.prompt}" for r in requests]
    assert sorted(provider.batches) == [2, 3, 4, 4]  # goal prompts 4+4+2, selections 3 (other max_tokens)
    assert client.usage.requests == 4 and client.usage.calls == 13


def test_scope_usage_counts_a_shared_round_trip_for_every_object_in_it():
    client = LLMClient(Echo(), cache=None, max_batch_size=64)
    client.complete_many([req(1, "A"), req(2, "B"), req(3, "B")])
    assert client.usage.requests == 1
    assert client.scope_usage("A").requests == 1 and client.scope_usage("A").calls == 1
    assert client.scope_usage("B").requests == 1 and client.scope_usage("B").calls == 2


def test_identical_requests_in_a_list_make_one_call_and_the_cache_answers_reruns():
    provider = Echo()
    client = LLMClient(provider, cache=ResponseCache(), max_batch_size=64)
    answers = client.complete_many([req(1), req(1), req(2)])
    assert [a.text for a in answers] == ["echo prompt 1", "echo prompt 1", "echo prompt 2"]
    assert client.usage.calls == 2 and client.usage.cache_hits == 1
    again = client.complete_many([req(1), req(2)])
    assert all(a.cached for a in again) and client.usage.calls == 2 and client.usage.requests == 1


def test_a_provider_without_lists_gets_concurrent_single_requests():
    provider = SinglesOnly()
    client = LLMClient(provider, cache=None, max_batch_size=64)
    answers = client.complete_many([req(i) for i in range(6)])
    assert [a.text for a in answers] == [f"echo prompt {i}" for i in range(6)]
    assert provider.singles == 6
    assert client.usage.calls == 6 and client.usage.requests == 6


def test_a_refused_list_falls_back_once_and_is_remembered(caplog):
    provider = RefusesLists()
    client = LLMClient(provider, cache=None, max_batch_size=64)
    first = client.complete_many([req(i) for i in range(5)])
    second = client.complete_many([req(10 + i) for i in range(5)])
    assert [a.text for a in first + second] == [f"echo prompt {i}" for i in (0, 1, 2, 3, 4, 10, 11, 12, 13, 14)]
    assert provider.refusals == 1 and client.batches_refused
    assert provider.singles == 10 and client.usage.calls == 10 and client.usage.requests == 10
    assert sum("refuses a list" in r.getMessage() for r in caplog.records) == 1


def test_max_batch_size_one_never_sends_lists():
    provider = Echo()
    client = LLMClient(provider, cache=None, max_batch_size=1)
    client.complete_many([req(i) for i in range(3)])
    assert provider.batches == [] and provider.singles == 3


def test_transient_batch_failure_is_retried_as_a_whole_then_reported():
    class Flaky(Echo):
        def __init__(self):
            super().__init__()
            self.failures = 1

        def complete_batch(self, requests, timeout_s):
            if self.failures:
                self.failures -= 1
                raise TransientProviderError("HTTP 503")
            return super().complete_batch(requests, timeout_s)

    class Broken(Echo):
        def complete_batch(self, requests, timeout_s):
            raise ProviderError("HTTP 401 bad key")

    flaky = LLMClient(Flaky(), cache=None, max_batch_size=8, backoff_s=0.0, sleep=lambda s: None)
    assert [a.ok for a in flaky.complete_many([req(1), req(2)])] == [True, True]
    assert flaky.retries == 1 and flaky.usage.requests == 1
    broken = LLMClient(Broken(), cache=None, max_batch_size=8)
    answers = broken.complete_many([req(1), req(2)])
    assert all("401" in a.error for a in answers) and broken.usage.failures == 2
    assert not broken.batches_refused  # an auth error is not a refused list


def test_scope_cap_refuses_prompts_of_a_list_before_sending():
    provider = Echo()
    client = LLMClient(provider, cache=None, max_batch_size=64, max_requests_per_scope=3)
    answers = client.complete_many([req(i) for i in range(5)])
    assert [a.ok for a in answers] == [True, True, True, False, False]
    assert "request cap" in answers[-1].error and provider.batches == [3]


def test_fixed_latency_costs_one_delay_per_round_trip():
    inner = Echo()
    provider = FixedLatencyProvider(inner, 0.0)
    client = LLMClient(provider, cache=None, max_batch_size=64)
    client.complete_many([req(i) for i in range(7)])
    assert provider.round_trips == 1 and provider.calls == 7
    only_singles = FixedLatencyProvider(SinglesOnly(), 0.0)
    assert not callable(getattr(only_singles, "complete_batch", None))


def test_offline_and_replay_answer_batches_exactly_as_single_requests(tmp_path):
    from task_learning.stars.prompts import GoalContext, load_templates

    templates = load_templates()
    ctx = GoalContext("tidy kitchen", "kitchen", "mug", "in", "dish rack")
    requests = [templates.goal_request(ctx, "initial" if not p else "recurse", p, scope="Mug|1")
                for p in ("", " The goal is that the mug is in the", " The goal is that the mug is on the")]
    single = make_client("offline", cache=None)
    batched = make_client("offline", cache=None, max_batch_size=64)
    alone = [single.complete(r) for r in requests]
    together = batched.complete_many(requests)
    assert [(a.text, a.tokens) for a in alone] == [(t.text, t.tokens) for t in together]
    assert single.usage.requests == 3 and batched.usage.requests == 1
    cassette = write_cassette(tmp_path / "c.jsonl", [cassette_entry(r, a) for r, a in zip(requests, alone)])
    replay = LLMClient(ReplayProvider(cassette), cache=None, max_batch_size=64)
    replayed = replay.complete_many(requests)
    assert [a.text for a in replayed] == [a.text for a in alone] and replay.usage.requests == 1


# ------------------------------------------------------------------ the real openai client, loopback
TOKENS = [
    [(" the", math.log(0.99), {" the": math.log(0.99)}), (" mug", math.log(0.6), {" mug": math.log(0.6), " cup": math.log(0.3)})],
    [(" a", math.log(0.9), {" a": math.log(0.9)})],
    [(" yes", math.log(0.8), {" yes": math.log(0.8)})],
]


@pytest.fixture()
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def openai_client(server, **kw) -> LLMClient:
    provider = OpenAIProvider(base_url=server.base_url, api_key="sk-test", completion_model="fake-instruct",
                              selection_model="fake-chat")
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_retries", 0)
    return LLMClient(provider, cache=None, **kw)


def test_openai_sends_one_list_prompt_request_and_matches_choices_by_index(server):
    body = batch_completion_body(TOKENS, prompt_tokens=100, cached_tokens=240)
    body["choices"].reverse()  # servers may answer out of order: choices carry their index
    server.queue(COMPLETIONS, ScriptedReply(body=body))
    client = openai_client(server, max_batch_size=16)
    requests = [LLMRequest("initial", prompt="p" * n, logprobs=5, stop=("\n",), scope=f"O{n}") for n in (10, 20, 30)]
    answers = client.complete_many(requests)

    sent = server.requests_to(COMPLETIONS)
    assert len(sent) == 1
    assert sent[0].body["prompt"] == [r.prompt for r in requests]
    assert sent[0].body["logprobs"] == 5 and sent[0].body["model"] == "fake-instruct"
    assert [a.text for a in answers] == [" the mug", " a", " yes"]
    assert answers[0].tokens[1].top[1][0] == " cup"
    usage = client.usage
    assert usage.calls == 3 and usage.requests == 1
    assert usage.prompt_tokens == 300 and usage.completion_tokens == 4  # the server's totals, split
    assert usage.cached_prompt_tokens == 240
    assert [a.prompt_tokens for a in answers] == [50, 100, 150]  # shares by prompt length


def test_openai_list_refused_by_the_server_falls_back_cleanly_and_remembers(server):
    def one_prompt(request_body):  # answers "... <n>" with TOKENS[n]
        return completion_body(TOKENS[int(request_body["prompt"].split()[-1])], prompt_tokens=7, cached_tokens=5)

    server.set_default(COMPLETIONS, ScriptedReply(body=one_prompt))
    server.queue(COMPLETIONS, ScriptedReply(status=400, body=error_body("'prompt' must be a string")))
    client = openai_client(server, max_batch_size=16)
    requests = [LLMRequest("initial", prompt=f"prompt {n}", logprobs=5, scope="X") for n in range(3)]
    answers = client.complete_many(requests)
    assert [a.text for a in answers] == [" the mug", " a", " yes"]
    assert client.batches_refused
    again = client.complete_many([LLMRequest("recurse", prompt=f"again {n}", logprobs=5, scope="X") for n in range(2)])
    assert [a.text for a in again] == [" the mug", " a"]
    bodies = [r.body for r in server.requests_to(COMPLETIONS)]
    assert isinstance(bodies[0]["prompt"], list)  # the one list, refused
    assert all(isinstance(b["prompt"], str) for b in bodies[1:]) and len(bodies) == 6
    assert client.usage.calls == 5 and client.usage.requests == 5 and client.usage.failures == 0
    assert client.usage.cached_prompt_tokens == 25


def test_openai_list_answered_with_too_few_choices_counts_as_refused(server):
    server.queue(COMPLETIONS, ScriptedReply(body=batch_completion_body(TOKENS[:1])))
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(TOKENS[1])))
    client = openai_client(server, max_batch_size=16)
    answers = client.complete_many([LLMRequest("initial", prompt=f"p{n}", logprobs=5) for n in range(2)])
    assert [a.text for a in answers] == [" a", " a"] and client.batches_refused
