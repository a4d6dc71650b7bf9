"""Constrained decoding's plumbing (llm/constraints.py): the GBNF a llama.cpp server gets, what
each provider style sends, the one-line notice where an endpoint cannot constrain, and the
server's root URL accepted (issue 40, item 12)."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from task_learning.errors import TaskLearningError
from task_learning.llm.base import LLMRequest
from task_learning.llm.constraints import (
    Constraint,
    ConstraintStyle,
    Decoding,
    effective_decoding,
    notice,
    parse_decoding,
    request_body,
    resolve_decoding,
)
from task_learning.llm.local_provider import LocalProvider, with_api_path
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply, completion_body

CHOICES = (" The goal is that the eggs are in the fridge and the fridge is closed",
           " The goal is that the eggs are in the pantry and the pantry is closed",
           " The goal is that the eggs are on the counter",
           " The goal is that the eggs are on the counter top")


def test_gbnf_is_a_trie_of_what_may_follow_the_prefix():
    grammar = Constraint(CHOICES, after=" The goal is that the eggs are").gbnf()
    assert grammar == ('root ::= " " ("in the " ("fridge and the fridge is closed" | '
                       '"pantry and the pantry is closed") | "on the counter" (" top")?)\n')
    assert Constraint(CHOICES, after=" The goal is that the eggs are on the c").remaining() == ("ounter", "ounter top")


def test_gbnf_escapes_quotes_and_backslashes():
    assert Constraint(('say "hi"\\',)).gbnf() == 'root ::= "say \\"hi\\"\\\\"\n'


def test_prefixes_and_complete_choices():
    constraint = Constraint(CHOICES)
    assert constraint.allows_prefix(" The goal is that the eggs are in the f")
    assert not constraint.allows_prefix(" The goal is that the eggs are in the bag")
    assert constraint.is_choice(CHOICES[2]) and not constraint.is_choice(CHOICES[2][:-3])


def test_each_style_sends_its_own_fields():
    choice = Constraint(CHOICES)
    schema = Constraint(json_schema='{"type": "object"}')
    assert set(request_body(choice, ConstraintStyle.LLAMA_CPP)) == {"grammar"}
    assert set(request_body(choice, ConstraintStyle.VLLM)) == {"guided_grammar"}
    assert request_body(choice, ConstraintStyle.OLLAMA) == {}
    assert request_body(schema, ConstraintStyle.LLAMA_CPP) == {"json_schema": {"type": "object"}}
    assert request_body(schema, ConstraintStyle.VLLM) == {"guided_json": {"type": "object"}}
    assert request_body(schema, ConstraintStyle.OLLAMA) == {"format": {"type": "object"}}
    assert request_body(choice, ConstraintStyle.NONE) == request_body(None, ConstraintStyle.LLAMA_CPP) == {}


def test_decoding_defaults_to_grounded_with_the_local_model_only():
    assert parse_decoding("auto", "local") is Decoding.GROUNDED
    assert parse_decoding(None, "openai") is Decoding.FREE
    assert parse_decoding("auto", "offline") is Decoding.FREE
    assert parse_decoding("grounded", "openai") is Decoding.GROUNDED
    with pytest.raises(TaskLearningError, match="unknown decoding 'beam'"):
        parse_decoding("beam")


def test_an_endpoint_that_cannot_constrain_gets_one_line_and_free_decoding():
    openai = OpenAIProvider(base_url="http://127.0.0.1:9/v1", completion_model="m")  # constraints: none
    decoding, line = effective_decoding(openai, Decoding.GROUNDED)
    assert decoding is Decoding.FREE
    assert "\n" not in line and "cannot constrain decoding" in line and "falls back to free decoding" in line
    local = LocalProvider(base_url="http://127.0.0.1:9/v1", model_name="m")
    assert effective_decoding(local, Decoding.GROUNDED) == (Decoding.GROUNDED, "")
    assert effective_decoding(openai, Decoding.FREE) == (Decoding.FREE, "")
    assert "JSON schema, not a grammar" in notice("openai", ConstraintStyle.OLLAMA)


def test_a_nodes_decoding_parameter_resolves_with_one_line_for_every_fallback():
    """resolve_decoding is what the nodes (action_selector, planner, anticipation) do with their
    `decoding` parameter: auto is grounded with local; a protocol without a grounded form and an
    endpoint that cannot constrain each fall back to free decoding with one line, never silently."""
    local = LocalProvider(base_url="http://127.0.0.1:9/v1", model_name="m")
    openai = OpenAIProvider(base_url="http://127.0.0.1:9/v1", completion_model="m")
    assert resolve_decoding("auto", "local", local) == (Decoding.GROUNDED, "")
    assert resolve_decoding("auto", "openai", openai) == (Decoding.FREE, "")
    decoding, line = resolve_decoding("grounded", "openai", openai)
    assert decoding is Decoding.FREE and "cannot constrain decoding" in line and "\n" not in line
    decoding, line = resolve_decoding("auto", "local", None, supported=False, what="anticipation")
    assert decoding is Decoding.FREE and line == "decoding grounded: anticipation has no grounded form yet; free decoding"
    assert resolve_decoding("free", "local", local, supported=False) == (Decoding.FREE, "")


def test_the_planners_llm_engine_decodes_as_its_settings_say():
    """The planner node's goal executor (planning.reaching) gives its BCR llm engine the decoding
    the node resolved; before, the planner's engine always decoded freely."""
    from task_learning.bcr.domain import load_domain
    from task_learning.llm.client import make_client
    from task_learning.planning.reaching import ReachSettings, goal_executor

    with make_client("offline") as client:
        for decoding, grounded in (("grounded", True), ("free", False)):
            executor = goal_executor(ReachSettings(engine="llm", decoding=decoding), load_domain("household"), None, client)
            assert executor.engine_factory().grounded is grounded  # type: ignore[attr-defined]


def test_the_local_provider_sends_the_grammar_to_llama_cpp_and_keys_lists_by_it():
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=completion_body([(" in", math.log(0.9), {})])))
        provider = LocalProvider(base_url=server.base_url, model_name="m")
        constrained = LLMRequest(prompt_type="initial", prompt="(RESULT) The goal is that the eggs are",
                                 logprobs=5, constraint=Constraint(CHOICES, after=" The goal is that the eggs are"))
        provider.complete(constrained, 10.0)
        provider.complete(LLMRequest(prompt_type="initial", prompt="(RESULT)", logprobs=5), 10.0)
        first, second = (r.body for r in server.requests_to(COMPLETIONS))
        assert first["grammar"].startswith('root ::= " " ("in the "') and "grammar" not in second
        assert provider.batch_key(constrained) != provider.batch_key(LLMRequest(prompt_type="initial", logprobs=5))


def test_llama_servers_root_url_is_its_v1_api():
    assert with_api_path("http://127.0.0.1:8080") == "http://127.0.0.1:8080/v1"
    assert with_api_path("http://127.0.0.1:8080/") == "http://127.0.0.1:8080/v1"
    assert with_api_path("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert with_api_path("https://host/api/v1") == "https://host/api/v1"


def test_a_root_url_without_choices_says_did_you_mean_v1():
    from task_learning.llm.base import ProviderError

    with FakeOpenAIServer() as server:
        root = server.base_url.rsplit("/v1", 1)[0]
        server.set_default("/completions", ScriptedReply(body={"content": "llama.cpp's own answer"}))
        provider = OpenAIProvider(base_url=root, completion_model="m")
        with pytest.raises(ProviderError, match=r"has no choices: did you mean http://127\.0\.0\.1:\d+/v1 \?"):
            provider.complete(LLMRequest(prompt_type="initial", prompt="x"), 10.0)


def test_elicit_with_an_openai_endpoint_says_in_one_line_that_it_decodes_freely(capsys):
    from task_learning.apps.cli import main

    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(
            [(" The", -0.01, {}), (" goal", -0.01, {}), (" is", -0.01, {}), (" that", -0.01, {}), (" the", -0.01, {}),
             (" yogurt", -0.01, {}), (" is", -0.01, {}), (" in", -0.01, {}), (" the", -0.01, {}), (" fridge", -0.01, {})])))
        main(["elicit", "--scene", "store_groceries", "--object", "yogurt", "--condition", "ST", "--llm", "openai",
              "--base-url", server.base_url, "--decoding", "grounded"])
        assert all("grammar" not in r.body for r in server.requests_to(COMPLETIONS))
    err = [line for line in capsys.readouterr().err.splitlines() if "cannot constrain decoding" in line]
    assert len(err) == 1 and "falls back to free decoding" in err[0]


def test_constrained_probabilities_ask_llama_cpp_for_the_alternatives_under_the_grammar():
    """llama.cpp reports the raw alternatives of the whole vocabulary with a grammar (an allowed
    token outside its top N gets no share); `constrained_probabilities` asks for them after the
    sampler chain, every sampler neutral, and reads `prob` / `top_probs` as log probabilities."""
    plain = request_body(Constraint(CHOICES), ConstraintStyle.LLAMA_CPP)
    asked = request_body(Constraint(CHOICES, constrained_probabilities=True), ConstraintStyle.LLAMA_CPP)
    assert asked["grammar"] == plain["grammar"] and asked["post_sampling_probs"] is True
    assert (asked["temperature"], asked["top_k"], asked["top_p"], asked["min_p"]) == (1.0, 0, 1.0, 0.0)
    assert set(request_body(Constraint(CHOICES, constrained_probabilities=True), ConstraintStyle.VLLM)) == {
        "guided_grammar"}
    token = {"id": 1, "token": " in", "bytes": [32, 105, 110], "prob": 0.75,
             "top_probs": [{"id": 1, "token": " in", "bytes": [32, 105, 110], "prob": 0.75},
                           {"id": 2, "token": " on", "bytes": [32, 111, 110], "prob": 0.25}]}
    body = {"id": "c", "object": "text_completion", "created": 0, "model": "m",
            "choices": [{"text": " in", "index": 0, "logprobs": {"content": [token]}, "finish_reason": "length"}]}
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=body))
        provider = LocalProvider(base_url=server.base_url, model_name="m")
        request = LLMRequest(prompt_type="initial", prompt="(RESULT) The goal is that the eggs are", logprobs=5,
                             max_tokens=1, constraint=Constraint(CHOICES, after=" The goal is that the eggs are",
                                                                 constrained_probabilities=True))
        response = provider.complete(request, 10.0)
        sent = server.requests_to(COMPLETIONS)[0].body
    assert sent["post_sampling_probs"] is True and sent["temperature"] == 1.0
    assert response.ok and math.isclose(response.tokens[0].logprob, math.log(0.75))
    assert [(t, round(math.exp(lp), 6)) for t, lp in response.tokens[0].top] == [(" in", 0.75), (" on", 0.25)]
    assert provider.batch_key(request) != provider.batch_key(replace(request, constraint=Constraint(
        CHOICES, after=" The goal is that the eggs are")))
