"""The `openai` provider against a local OpenAI-compatible server, through the REAL `openai`
client and LLMClient: formats, failures, retries, timeouts, and the API key kept secret."""
from __future__ import annotations

import logging
import math
import time

import pytest

from task_learning.llm.base import LLMRequest
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.testing.fake_server import (
    CHAT,
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    chat_body,
    completion_body,
    error_body,
)

SECRET = "sk-test-DO-NOT-LEAK-1234567890"

# " the goal is that the mug is in the cup|board": the mug example's root shape.
GOAL_TOKENS = [
    (" the", math.log(0.99), {" the": math.log(0.99), " a": math.log(0.005)}),
    (" mug", math.log(0.62), {" mug": math.log(0.62), " cup": math.log(0.30), " dish": math.log(0.04)}),
    (" is", math.log(0.97), {" is": math.log(0.97)}),
]


def goal_request(prefix: str = "", **extra) -> LLMRequest:
    return LLMRequest(
        prompt_type=extra.pop("prompt_type", "initial"),
        prompt="Task: tidy kitchen\n(RESULT)" + prefix,
        logprobs=5,
        stop=("(END RESULT)", ".", "Steps:", "\n"),
        context={"object": "mug", "prefix": prefix},
        scope=extra.pop("scope", "Mug|1"),
        **extra,
    )


def selection_request() -> LLMRequest:
    return LLMRequest(prompt_type="selection", prompt="Options:\n1. a\n2. b\nAnswer:", max_tokens=5, scope="Mug|1")


@pytest.fixture()
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def client_for(server, **kw) -> LLMClient:
    provider = OpenAIProvider(
        base_url=server.base_url,
        api_key=SECRET,
        completion_model="fake-instruct",
        selection_model="fake-chat",
        selection_api=kw.pop("selection_api", "chat"),
        require_logprobs=kw.pop("require_logprobs", True),
    )
    kw.setdefault("timeout_s", 2.0)
    kw.setdefault("max_retries", 2)
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("max_backoff_s", 0.05)
    return LLMClient(provider, **kw)


def test_completions_legacy_logprobs_are_mapped_best_first(server):
    # The server lists alternatives in a scrambled order; `top` must come back best first.
    scrambled = [(t, lp, dict(sorted(alts.items(), key=lambda kv: kv[1]))) for t, lp, alts in GOAL_TOKENS]
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body(scrambled, prompt_tokens=42)))
    client = client_for(server)
    response = client.complete(goal_request())
    assert response.ok, response.error
    assert response.text == " the mug is"
    assert [t.token for t in response.tokens] == [" the", " mug", " is"]
    assert response.tokens[1].prob == pytest.approx(0.62)
    assert [alt for alt, _ in response.tokens[1].top] == [" mug", " cup", " dish"]
    assert response.prompt_tokens == 42 and response.completion_tokens == 3
    sent = server.requests_to(COMPLETIONS)[0].body
    assert sent["model"] == "fake-instruct" and sent["logprobs"] == 5 and sent["temperature"] == 0
    assert sent["stop"] == ["(END RESULT)", ".", "Steps:", "\n"]
    assert sent["prompt"].endswith("(RESULT)")
    usage = client.usage.by_type["initial"]
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens, usage.failures) == (1, 42, 3, 0)


def test_selection_goes_to_chat_with_the_selection_model(server):
    server.queue(CHAT, ScriptedReply(body=chat_body("2", prompt_tokens=30, completion_tokens=1)))
    client = client_for(server)
    response = client.complete(selection_request())
    assert response.ok and response.text == "2"
    sent = server.requests_to(CHAT)[0].body
    assert sent["model"] == "fake-chat"
    assert sent["messages"] == [{"role": "user", "content": "Options:\n1. a\n2. b\nAnswer:"}]
    assert not server.requests_to(COMPLETIONS)
    assert client.usage.by_type["selection"].prompt_tokens == 30


def test_chat_logprobs_format_is_read(server):
    tokens = [("2", math.log(0.8), {"2": math.log(0.8), "1": math.log(0.15)})]
    server.queue(CHAT, ScriptedReply(body=chat_body("2", tokens=tokens)))
    client = client_for(server)
    request = LLMRequest(prompt_type="selection", messages=(("system", "be brief"), ("user", "pick")), logprobs=2)
    response = client.complete(request)
    assert response.ok, response.error
    assert response.tokens[0].token == "2" and response.tokens[0].prob == pytest.approx(0.8)
    assert response.tokens[0].top[1][0] == "1"
    sent = server.requests_to(CHAT)[0].body
    assert sent["logprobs"] is True and sent["top_logprobs"] == 2
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}


def test_selection_by_completions_when_configured(server):
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body([("3", -0.1, {"3": -0.1})])))
    client = client_for(server, selection_api="completions")
    response = client.complete(selection_request())
    assert response.text == "3"
    assert server.requests_to(COMPLETIONS)[0].body["model"] == "fake-chat"
    assert not server.requests_to(CHAT)


def test_429_then_success_is_retried_and_counted(server):
    server.queue(
        COMPLETIONS,
        ScriptedReply(status=429, body=error_body("slow down", "rate_limit_exceeded")),
        ScriptedReply(body=completion_body(GOAL_TOKENS)),
    )
    client = client_for(server)
    response = client.complete(goal_request())
    assert response.ok and response.text == " the mug is"
    assert len(server.requests_to(COMPLETIONS)) == 2
    assert client.retries == 1 and client.stats()["retries_by_type"] == {"initial": 1}
    assert client.usage.calls == 1 and client.usage.failures == 0
    # The openai client's own retries are off: exactly one HTTP request per attempt.
    assert server.requests_to(COMPLETIONS)[0].headers.get("x-stainless-retry-count") == "0"


def test_500_is_retried_then_a_failed_response_not_a_crash(server):
    server.set_default(COMPLETIONS, ScriptedReply(status=500, body=error_body("internal")))
    client = client_for(server, max_retries=2)
    response = client.complete(goal_request())
    assert not response.ok
    assert "500" in response.error and "3 attempt" in response.error
    assert len(server.requests_to(COMPLETIONS)) == 3
    assert client.retries == 2
    assert client.usage.failures == 1 and client.usage.calls == 1
    assert client.usage.prompt_tokens == 0


def test_400_is_not_retried(server):
    server.queue(COMPLETIONS, ScriptedReply(status=400, body=error_body("logprobs must be <= 5", "invalid_request_error")))
    client = client_for(server)
    response = client.complete(goal_request())
    assert "400" in response.error and "logprobs must be <= 5" in response.error
    assert len(server.requests_to(COMPLETIONS)) == 1 and client.retries == 0


def test_hang_past_the_timeout_gives_a_timeout_error_quickly(server):
    server.set_default(COMPLETIONS, ScriptedReply(delay_s=60.0, body=completion_body(GOAL_TOKENS)))
    client = client_for(server, timeout_s=0.25, max_retries=1)
    started = time.monotonic()
    response = client.complete(goal_request())
    elapsed = time.monotonic() - started
    assert not response.ok and "timed out after 0.25 s" in response.error
    # two attempts of 0.25 s and a short backoff; waiting for the reply would take 2 x 60 s (the
    # margin is wide so that a loaded machine cannot make this fail)
    assert elapsed < 30.0, elapsed
    assert len(server.requests_to(COMPLETIONS)) == 2
    assert client.usage.failures == 1


def test_endpoint_down_is_a_clear_failure(server):
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key=SECRET, completion_model="m")
    client = LLMClient(provider, timeout_s=0.5, max_retries=1, backoff_s=0.01)
    response = client.complete(goal_request())
    assert not response.ok and "cannot reach http://127.0.0.1:9/v1" in response.error
    assert client.usage.failures == 1 and client.retries == 1


def test_empty_output_is_a_valid_empty_response(server):
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body([], prompt_tokens=12)))
    client = client_for(server)
    response = client.complete(goal_request())
    assert response.ok and response.text == "" and response.tokens == []
    assert client.usage.by_type["initial"].prompt_tokens == 12


def test_output_lacking_logprobs_is_an_error_by_default(server):
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS, with_logprobs=False)))
    client = client_for(server)
    response = client.complete(goal_request())
    assert not response.ok and "lacks logprobs although 5 were requested" in response.error
    assert client.usage.failures == 1 and client.retries == 0
    # Opting out returns the text without tokens.
    lenient = client_for(server, require_logprobs=False)
    response = lenient.complete(goal_request())
    assert response.ok and response.text == " the mug is" and response.tokens == []


def test_malformed_json_and_missing_choices_are_clear_errors(server):
    server.queue(COMPLETIONS, ScriptedReply(body="{this is not json"))
    server.queue(COMPLETIONS, ScriptedReply(body={"id": "x", "object": "text_completion", "choices": []}))
    client = client_for(server)
    first = client.complete(goal_request())
    second = client.complete(goal_request(" the"))
    assert "malformed response" in first.error
    assert "no choices" in second.error
    assert client.usage.failures == 2


def test_missing_usage_is_estimated(server):
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS, prompt_tokens=None)))
    client = client_for(server)
    response = client.complete(goal_request())
    assert response.ok
    assert response.completion_tokens == 3
    assert response.prompt_tokens == math.ceil(len(goal_request().prompt) / 4)


def test_api_key_never_in_logs_reprs_or_errors(server, caplog):
    caplog.set_level(logging.DEBUG)
    server.queue(COMPLETIONS, ScriptedReply(status=401, body=error_body(f"Incorrect API key provided: {SECRET}", "invalid_api_key")))
    server.queue(COMPLETIONS, ScriptedReply(status=503, body=error_body(f"overloaded for {SECRET}")))
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS)))
    def fresh():
        return make_client(
            "openai", env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": SECRET},
            backoff_s=0.01, max_backoff_s=0.02, cache=False,
        )

    client = fresh()
    denied = client.complete(goal_request())  # a 401 also opens the circuit breaker
    assert "401" in denied.error and SECRET not in client.unavailable
    ok = fresh().complete(goal_request(" x"))
    assert ok.ok
    # The key really was sent ...
    assert server.requests_to(COMPLETIONS)[0].headers.get("authorization") == f"Bearer {SECRET}"
    # ... and is nowhere a user could see it.
    seen = [caplog.text, repr(client), repr(client.provider), str(client.stats()), denied.error]
    for text in seen:
        assert SECRET not in text
    assert "***" in denied.error


def test_make_client_openai_reads_env_and_options(server):
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS)))
    client = make_client(
        "openai", env={"OPENAI_BASE_URL": server.base_url}, completion_model="my-model", cache=False
    )
    assert client.complete(goal_request()).ok
    assert server.requests_to(COMPLETIONS)[0].body["model"] == "my-model"
    # No key is fine for a local server; the official endpoint without a key is a clear error.
    from task_learning.errors import ConfigError

    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_client("openai", env={})


def test_concurrent_requests_through_the_real_client(server):
    from concurrent.futures import ThreadPoolExecutor

    server.set_default(COMPLETIONS, ScriptedReply(delay_s=0.5, body=completion_body(GOAL_TOKENS)))
    client = client_for(server, cache=None)
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(client.complete, [goal_request(f" p{i}") for i in range(8)]))
    assert all(r.ok for r in responses)
    assert client.usage.calls == 8 and len(server.requests_to(COMPLETIONS)) == 8
    # requests overlap at the server (one after another, it would never answer two at once)
    assert server.max_in_flight >= 2, server.max_in_flight


# ----------------------------------------------------------------- servers as they are (issue 26)
@pytest.mark.parametrize("layout", ["llamacpp", "llamacpp-bytes"])
def test_completions_in_llama_cpp_layout_are_read(server, layout):
    """llama.cpp's server answers /v1/completions with the chat layout (logprobs.content[i] with
    token, bytes, top_logprobs); with the token strings empty, the bytes carry them."""
    accented = [(" caf", math.log(0.5), {" caf": math.log(0.5), " tea": math.log(0.2)}),
                ("é", math.log(0.9), {"é": math.log(0.9), "e": math.log(0.05)})]
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS + accented, prompt_tokens=91,
                                                                 cached_tokens=86, layout=layout)))
    client = client_for(server)
    response = client.complete(goal_request())
    assert response.ok, response.error
    assert [t.token for t in response.tokens] == [" the", " mug", " is", " caf", "é"]
    assert [alt for alt, _ in response.tokens[1].top] == [" mug", " cup", " dish"]
    assert response.tokens[1].prob == pytest.approx(0.62)
    assert response.cached_prompt_tokens == 86 and response.prompt_tokens == 91
    assert client.usage.cached_prompt_tokens == 86


def test_list_prompts_in_llama_cpp_layout(server):
    from task_learning.testing.fake_server import batch_completion_body

    server.queue(COMPLETIONS, ScriptedReply(body=batch_completion_body([GOAL_TOKENS[:1], GOAL_TOKENS[1:]],
                                                                       cached_tokens=12, layout="llamacpp")))
    client = client_for(server, max_batch_size=8)
    answers = client.complete_many([goal_request(" a"), goal_request(" b")])
    assert [a.ok for a in answers] == [True, True], [a.error for a in answers]
    assert [t.token for t in answers[1].tokens] == [" mug", " is"]
    assert len(server.requests_to(COMPLETIONS)) == 1 and client.usage.cached_prompt_tokens == 12


def test_openai_bytes_token_strings_are_decoded(server):
    body = completion_body([("bytes:\\xc3\\xa9", math.log(0.5), {"bytes:\\xc3\\xa9": math.log(0.5)})])
    server.queue(COMPLETIONS, ScriptedReply(body=body))
    response = client_for(server).complete(goal_request())
    assert response.ok and response.tokens[0].token == "é" and response.tokens[0].top[0][0] == "é"


def test_a_list_refused_for_its_length_is_not_a_refusal_of_lists(server):
    """llama.cpp refuses a prompt longer than the context with 400: that list goes one by one, but
    later lists are still sent (the server takes lists)."""
    server.queue(COMPLETIONS, ScriptedReply(status=400, body=error_body(
        "the request exceeds the available context size, try increasing it", "exceed_context_size_error")))
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS)))
    client = client_for(server, max_batch_size=8)
    answers = client.complete_many([goal_request(" a"), goal_request(" b")])
    assert all(a.ok for a in answers) and not client.batches_refused


def test_a_wrong_model_name_is_a_configuration_error_that_ends_the_run(server):
    server.set_default(COMPLETIONS, ScriptedReply(status=404, body=error_body(
        "The model `gpt-nope` does not exist", "invalid_request_error")))
    client = client_for(server)
    first = client.complete(goal_request())
    assert "404" in first.error and "configuration error" in first.error and "does not exist" in first.error
    assert client.unavailable and len(server.requests_to(COMPLETIONS)) == 1  # not retried
    second = client.complete(goal_request(" x"))
    assert "not called" in second.error and len(server.requests_to(COMPLETIONS)) == 1


@pytest.mark.parametrize("reply", [
    ScriptedReply(status=500, body=error_body("CUDA out of memory")),
    ScriptedReply(body=error_body("model overloaded")),  # an error body with status 200
    ScriptedReply(body=completion_body(GOAL_TOKENS, with_logprobs=False)),
], ids=["5xx", "error-body", "no-logprobs"])
def test_an_endpoint_that_fails_every_call_opens_the_breaker(server, reply):
    server.set_default(COMPLETIONS, reply)
    client = client_for(server, max_retries=0, breaker_failures=3)
    errors = [client.complete(goal_request(f" {i}")).error for i in range(5)]
    assert all(errors)
    assert "3 calls in a row failed" in client.unavailable and server.base_url in client.unavailable
    assert len(server.requests_to(COMPLETIONS)) == 3  # the last two were never sent
    client.reset_breaker()  # a node's next goal: the endpoint gets a fresh chance
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(GOAL_TOKENS)))
    assert client.complete(goal_request(" again")).ok and not client.unavailable


def test_one_success_between_failures_keeps_the_breaker_closed(server):
    bad = ScriptedReply(status=500, body=error_body("flaky"))
    good = ScriptedReply(body=completion_body(GOAL_TOKENS))
    server.queue(COMPLETIONS, bad, bad, good, bad, bad, good)
    client = client_for(server, max_retries=0, breaker_failures=3)
    outcomes = [client.complete(goal_request(f" {i}")).ok for i in range(6)]
    assert outcomes == [False, False, True, False, False, True] and not client.unavailable


def test_a_list_whose_usage_counts_the_first_prompt_only_is_not_undercounted(server):
    """llama.cpp answers a list with the first prompt's usage only: the others' completion tokens
    are their own, their prompt tokens estimated by length, their cached tokens not claimed."""
    from task_learning.testing.fake_server import batch_completion_body

    body = batch_completion_body([GOAL_TOKENS, GOAL_TOKENS[:2]], prompt_tokens=40, cached_tokens=30,
                                 layout="llamacpp")
    body["usage"] = {"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43,
                     "prompt_tokens_details": {"cached_tokens": 30}}
    server.queue(COMPLETIONS, ScriptedReply(body=body))
    client = client_for(server, max_batch_size=8)
    first, second = client.complete_many([goal_request(" a"), goal_request(" bb")])
    assert (first.prompt_tokens, first.completion_tokens, first.cached_prompt_tokens) == (40, 3, 30)
    assert second.completion_tokens == 2 and second.cached_prompt_tokens == 0
    assert second.prompt_tokens == round(40 * len(goal_request(" bb").prompt) / len(goal_request(" a").prompt))


def test_an_empty_answer_without_logprobs_is_not_an_error(server):
    """llama.cpp stops at once on a stop string (the branch ended its sentence): text "" and
    logprobs null. Nothing was generated, so nothing lacks logprobs."""
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body([], with_logprobs=False)))
    # the stop string "(END RESULT)" began inside the token " (": the text is " ", no token listed
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body([(" ", -0.1, {})], with_logprobs=False)))
    client = client_for(server)
    for text in ("", " "):
        response = client.complete(goal_request(f" the mug is in the cupboard{text}"))
        assert response.ok and response.text == text and response.tokens == []


def test_a_conversation_sent_to_completions_ends_where_the_answer_goes(server):
    """A base model (no chat template) needs to see where its answer starts: the flattened
    conversation ends with "Answer:", earlier answers marked the same way."""
    server.queue(COMPLETIONS, ScriptedReply(body=completion_body([(" 2", -0.1, {" 2": -0.1})])))
    client = client_for(server, selection_api="completions")
    request = LLMRequest(prompt_type="selection", messages=(("system", "Be brief."), ("user", "Pick 1 or 2."),
                                                            ("assistant", "3"), ("user", "1 or 2 only.")),
                         max_tokens=3, scope="Mug|1")
    assert client.complete(request).ok
    assert server.requests_to(COMPLETIONS)[0].body["prompt"] == (
        "Be brief.\n\nPick 1 or 2.\n\nAnswer: 3\n\n1 or 2 only.\n\nAnswer:")
