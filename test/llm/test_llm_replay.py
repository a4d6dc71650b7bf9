"""Cassettes: recording real calls (through the real openai client) and replaying them, and
cassettes built from data."""
from __future__ import annotations

import json
import math

import pytest

from task_learning.errors import ConfigError
from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError, TokenLogprob
from task_learning.llm.client import make_client
from task_learning.llm.replay import ReplayProvider, cassette_entry, match_entry, write_cassette
from task_learning.testing.fake_server import (
    CHAT,
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    chat_body,
    completion_body,
    error_body,
)


def goal(prefix: str, prompt_type: str = "initial") -> LLMRequest:
    return LLMRequest(
        prompt_type=prompt_type, prompt="Task: tidy kitchen\n(RESULT)" + prefix, logprobs=5,
        stop=("(END RESULT)", ".", "Steps:", "\n"), context={"object": "mug", "prefix": prefix}, scope="Mug|1",
    )


def tokens(*pairs):
    return [(t, math.log(p), {t: math.log(p), " other": math.log(max(1e-6, 1 - p))}) for t, p in pairs]


def test_record_then_replay_gives_identical_responses_without_calls(tmp_path):
    cassette = tmp_path / "run.jsonl"
    requests = [goal(""), goal(" the goal is that the mug is in the cup", "recurse"), LLMRequest(prompt_type="selection", prompt="Pick 1 or 2", scope="Mug|1")]
    with FakeOpenAIServer() as server:
        server.queue(COMPLETIONS,
                     ScriptedReply(body=completion_body(tokens((" the", 0.99), (" goal", 0.8)), prompt_tokens=50)),
                     ScriptedReply(body=completion_body(tokens(("board", 0.9)), prompt_tokens=60)))
        server.queue(CHAT, ScriptedReply(body=chat_body("2", prompt_tokens=70, completion_tokens=1)))
        server.set_default(COMPLETIONS, ScriptedReply(status=400, body=error_body("nope", "invalid_request_error")))
        recording = make_client(f"record:{cassette}", env={"OPENAI_BASE_URL": server.base_url}, cache="memory")
        recorded = [recording.complete(r) for r in requests]
        failed = recording.complete(goal(" never answered"))
        recording.complete(requests[0])  # a cache hit: not a real call, not recorded
        recording.close()
        sent = len(server.received)
    assert all(r.ok for r in recorded) and not failed.ok
    assert sent == 4
    lines = cassette.read_text().splitlines()
    assert len(lines) == 4  # every real call, the failure included
    assert json.loads(lines[0])["provider"] == "openai"

    for _ in range(2):  # deterministic: the same twice
        replay = make_client(f"replay:{cassette}", cache="off")
        replayed = [replay.complete(r) for r in requests]
        for a, b in zip(recorded, replayed):
            assert (a.text, a.tokens, a.prompt_tokens, a.completion_tokens, a.finish_reason) == (
                b.text, b.tokens, b.prompt_tokens, b.completion_tokens, b.finish_reason)
        assert replay.usage.calls == 3
        assert replay.usage.prompt_tokens == recording.usage.prompt_tokens
        again = replay.complete(goal(" never answered"))
        assert not again.ok and "recorded failure" in again.error and "nope" in again.error


def test_missing_request_is_a_clear_error_naming_the_prefix(tmp_path):
    path = write_cassette(tmp_path / "c.jsonl", [cassette_entry(goal(""), LLMResponse(text=" x"))])
    client = make_client(f"replay:{path}", cache="off", max_retries=3)
    response = client.complete(goal(" the dish"))
    assert not response.ok
    assert "no recorded response" in response.error and "prefix=' the dish'" in response.error and "object='mug'" in response.error
    assert client.retries == 0 and client.usage.failures == 1
    with pytest.raises(ProviderError, match="prefix=' the dish'"):
        ReplayProvider(path).complete(goal(" the dish"), 1.0)


def test_cassette_built_from_data_with_exact_and_match_entries(tmp_path):
    root = LLMResponse(text=" the goal is", tokens=[TokenLogprob(" the", -0.01, ((" the", -0.01), (" a", -4.0)))], prompt_tokens=100, completion_tokens=3)
    cup = LLMResponse(text="board", tokens=[TokenLogprob("board", -0.05)])
    generic = LLMResponse(text=" anything")
    entries = [
        match_entry(generic, prompt_type="recurse"),
        match_entry(cup, prompt_type="recurse", context={"object": "mug", "prefix": " the goal is that the mug is in the cup"}),
        cassette_entry(goal(""), root),
    ]
    provider = ReplayProvider(write_cassette(tmp_path / "built.jsonl", entries))
    assert len(provider) == 3
    got = provider.complete(goal(""), 1.0)
    assert got.text == " the goal is" and got.tokens == root.tokens and got.prompt_tokens == 100
    # The most specific match wins, whatever the prompt text.
    assert provider.complete(goal(" the goal is that the mug is in the cup", "recurse"), 1.0).text == "board"
    assert provider.complete(goal(" something else", "recurse"), 1.0).text == " anything"
    with pytest.raises(ProviderError):
        provider.complete(goal(" x", "repair"), 1.0)
    with pytest.raises(ValueError):
        match_entry(generic)


def test_success_preferred_over_recorded_failure_for_one_request(tmp_path):
    path = write_cassette(tmp_path / "c.jsonl", [
        cassette_entry(goal(""), LLMResponse(text="", error="HTTP 503")),
        cassette_entry(goal(""), LLMResponse(text=" ok")),
        cassette_entry(goal(""), LLMResponse(text=" later")),
    ])
    assert ReplayProvider(path).complete(goal(""), 1.0).text == " ok"


@pytest.mark.parametrize(
    "line, words",
    [
        ("{not json", "line 1: not JSON"),
        ('{"response": {"text": "x"}}', "line 1: expected an object"),
        ('{"key": "k", "response": {"tokens": [{"logprob": 1}]}}', "line 1.response: malformed response"),
        ('{"match": {"colour": "red"}, "response": {"text": "x"}}', "line 1.match: expected conditions"),
    ],
)
def test_malformed_cassette_names_the_line(tmp_path, line, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError, match=words.replace(".", r"\.")):
        ReplayProvider(path)
