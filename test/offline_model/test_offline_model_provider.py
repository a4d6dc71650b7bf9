"""The offline provider honours the LLMProvider contract the way a completion endpoint does."""
from __future__ import annotations

import math

import pytest

from task_learning.llm.base import LLMProvider, LLMRequest, ProviderError
from task_learning.llm.tokens import count_tokens, split_tokens
from task_learning.offline_model import LABEL, OfflineProvider, count_prompt_tokens

STOPS = ("(END RESULT)", ".", "Steps:", "\n")


@pytest.fixture(scope="module")
def provider() -> OfflineProvider:
    return OfflineProvider()


def goal_request(obj="mug", place="dish rack", prefix="", prompt_type="initial", *, stop=STOPS,
                 max_tokens=50, logprobs=5, feedback="", repair_of="", system_context=(),
                 relation="in", prompt=None) -> LLMRequest:
    return LLMRequest(
        prompt_type=prompt_type,
        prompt=prompt if prompt is not None else f"Task: tidy kitchen. Aware of {obj} {relation} {place}. (RESULT){prefix}",
        max_tokens=max_tokens, temperature=0.0, logprobs=logprobs, stop=stop,
        context={"task": "tidy kitchen", "location": "kitchen", "object": obj, "object_place": place,
                 "object_relation": relation, "prefix": prefix, "repair_of": repair_of,
                 "feedback": feedback, "system_context": list(system_context)},
    )


def test_is_a_provider_and_says_it_is_not_a_language_model(provider):
    assert isinstance(provider, LLMProvider)
    assert provider.name == "offline"
    assert "not a language model" in provider.model and provider.model == LABEL


def test_same_request_twice_gives_identical_responses(provider):
    a = provider.complete(goal_request(), 5)
    b = OfflineProvider().complete(goal_request(), 5)  # a fresh instance: no hidden state
    assert a.text and a.text == b.text
    assert [(t.token, t.logprob, t.top) for t in a.tokens] == [(t.token, t.logprob, t.top) for t in b.tokens]
    assert (a.prompt_tokens, a.completion_tokens, a.finish_reason) == (b.prompt_tokens, b.completion_tokens, b.finish_reason)


def test_goal_text_is_gpt_tokenised_and_stops_before_the_period(provider):
    r = provider.complete(goal_request(), 5)
    assert r.text.startswith(" The goal is that the mug is in the")
    assert "." not in r.text and r.finish_reason == "stop"
    assert "".join(t.token for t in r.tokens) == r.text
    tokens = [t.token for t in r.tokens]
    assert tokens[:5] == [" The", " goal", " is", " that", " the"]
    assert tokens == split_tokens(r.text)  # cl100k_base's own split
    assert " dishwasher" in tokens  # one token in cl100k_base (GPT-3's p50k_base split it)


def test_token_alternatives_are_well_formed(provider):
    for obj, place in [("mug", "dish rack"), ("can of beans", "bag"), ("stapler", "bag"), ("milk", "table")]:
        r = provider.complete(goal_request(obj, place), 5)
        assert r.tokens
        for t in r.tokens:
            assert t.logprob <= 0.0
            assert 1 <= len(t.top) <= 5
            assert t.top[0][0] == t.token and t.top[0][1] == t.logprob  # chosen first (greedy)
            probs = [math.exp(lp) for _, lp in t.top]
            assert all(lp <= 0.0 for _, lp in t.top)
            assert probs == sorted(probs, reverse=True)
            assert sum(probs) <= 1.0 + 1e-9
            assert len({tok for tok, _ in t.top}) == len(t.top)


def test_decision_points_have_branching_alternatives(provider):
    """Where the destination, the conjunction and the state are decided the chosen token is below
    0.90 and some alternatives exceed 0.05 (the Search Tree's thresholds) while others do not."""
    r = provider.complete(goal_request(), 5)
    low = [t for t in r.tokens if t.prob < 0.90]
    assert len(low) >= 3
    assert any(math.exp(lp) > 0.05 for t in low for tok, lp in t.top[1:])
    assert any(math.exp(lp) < 0.05 for t in low for tok, lp in t.top[1:])
    # settled positions are confident
    assert r.tokens[1].token == " goal" and r.tokens[1].prob > 0.9


def test_mug_in_dish_rack_resembles_the_paper(provider):
    """The STARS paper Table 9: GPT-3's answer for the mug in the dish rack was the dishwasher, turned on,
    with the cupboard and the cabinet as strong alternatives at the destination (whole words in
    cl100k_base)."""
    r = provider.complete(goal_request(), 5)
    assert r.text == " The goal is that the mug is in the dishwasher and the dishwasher is turned on"
    dish = next(t for t in r.tokens if t.token == " dishwasher")
    alts = {tok for tok, lp in dish.top[1:] if math.exp(lp) > 0.05}
    assert {" cupboard", " cabinet"} <= alts
    conj = next(t for t in r.tokens if t.token == " and")
    assert any(tok.startswith(".") and math.exp(lp) > 0.05 for tok, lp in conj.top[1:])


def test_prefix_is_continued_and_only_the_continuation_returned(provider):
    r = provider.complete(goal_request(prefix=" The goal is that the mug is in the cup", prompt_type="recurse"), 5)
    assert r.text.startswith("board")  # mid-word continuation, like Table 10
    assert not r.text.startswith(" The")
    assert r.tokens[0].token == "board"


def test_any_prefix_of_an_earlier_answer_continues_it_exactly(provider):
    full = provider.complete(goal_request(obj="cereal box", place="table"), 5)
    text = full.text
    boundaries = [0]
    for t in full.tokens:
        boundaries.append(boundaries[-1] + len(t.token))
    cuts = set(boundaries[1:-1]) | {5, 13, len(text) - 2}  # token boundaries and mid-token cuts
    for cut in sorted(cuts):
        prefix = text[:cut]
        r = provider.complete(goal_request(obj="cereal box", place="table", prefix=prefix, prompt_type="recurse"), 5)
        assert prefix + r.text == text, (cut, prefix, r.text)


def test_alternative_prefix_gives_a_different_consistent_sentence(provider):
    root = provider.complete(goal_request(), 5)
    dish = next(t for t in root.tokens if t.token == " dishwasher")
    alt = next(tok for tok, lp in dish.top[1:] if tok == " cupboard")
    head = root.text[: root.text.index(" dishwasher")]
    r1 = provider.complete(goal_request(prefix=head + alt, prompt_type="recurse"), 5)
    r2 = provider.complete(goal_request(prefix=head + alt, prompt_type="recurse"), 5)
    assert r1.text == r2.text and (head + alt + r1.text).startswith(" The goal is that the mug is in the cupboard")


def test_stop_sequences_and_no_stops(provider):
    with_stops = provider.complete(goal_request(), 5)
    assert with_stops.finish_reason == "stop" and "." not in with_stops.text
    assert with_stops.completion_tokens == len(with_stops.tokens) + 1  # the stop token is billed
    no_stop = provider.complete(goal_request(stop=()), 5)
    assert no_stop.text.startswith(with_stops.text)
    assert "END RESULT)" in no_stop.text and no_stop.finish_reason == "stop"
    cut = provider.complete(goal_request(stop=(" is",)), 5)
    assert cut.text == " The goal"


def test_max_tokens_truncates_with_length(provider):
    r = provider.complete(goal_request(max_tokens=4), 5)
    assert len(r.tokens) == 4 and r.finish_reason == "length"
    assert r.text == " The goal is that" and r.completion_tokens == 4
    zero = provider.complete(goal_request(max_tokens=0), 5)
    assert zero.text == "" and zero.finish_reason == "length"


def test_logprobs_zero_gives_no_alternatives(provider):
    r = provider.complete(goal_request(logprobs=0), 5)
    assert r.tokens and all(t.top == () for t in r.tokens)
    assert r.text == provider.complete(goal_request(), 5).text


def test_prompt_tokens_are_counted_from_the_prompt(provider):
    """cl100k_base counts: one token per common word here; chat adds OpenAI's overhead."""
    short = provider.complete(goal_request(prompt="one two three four five six seven eight nine ten"), 5)
    assert short.prompt_tokens == 10
    long_prompt = "word " * 700
    assert provider.complete(goal_request(prompt=long_prompt), 5).prompt_tokens == count_tokens(long_prompt)
    chat = LLMRequest("selection", messages=(("system", "a b c"), ("user", "d e f g")),
                      context={"options": ["the goal is that the mug is in the cupboard"], "object": "mug"})
    assert count_prompt_tokens(chat) == 3 + (3 + 1 + 3) + (3 + 1 + 4)


def test_unknown_object_gets_a_generic_answer(provider):
    r = provider.complete(goal_request(obj="flux capacitor", place="counter", relation="on"), 5)
    assert r.text.startswith(" The goal is that the flux capacitor is ")
    assert r.tokens and r.finish_reason == "stop"
    odd = provider.complete(goal_request(obj="", place="", prompt="no context at all"), 5)
    assert odd.text.startswith(" The goal is that the object is")


def test_object_read_from_prompt_when_context_is_missing(provider):
    req = LLMRequest("initial", prompt="Task: store groceries.\nAware of milk in bag.\n(RESULT)",
                     logprobs=5, stop=STOPS)
    r = provider.complete(req, 5)
    assert r.text.startswith(" The goal is that the milk is")


def test_plural_objects_take_are(provider):
    r = provider.complete(goal_request(obj="granola bars", place="counter", relation="on"), 5)
    assert r.text.startswith(" The goal is that the granola bars are")
    r = provider.complete(goal_request(obj="half and half", place="counter", relation="on"), 5)
    assert r.text.startswith(" The goal is that the half and half is")


def test_prefix_nothing_continues_ends_the_sentence(provider):
    r = provider.complete(goal_request(prefix=" The goal is that the mug is under the moon", prompt_type="recurse"), 5)
    assert r.text == "" and r.finish_reason == "stop"


def test_unsupported_prompt_type_is_a_clear_error(provider):
    with pytest.raises(ProviderError, match="unsupported prompt_type"):
        provider.complete(LLMRequest("poetry", prompt="x"), 5)


def test_bcr_selection_is_answered_in_the_dollar_form(provider):
    context = {"goal": ["inside(Mug|1, Cupboard|1)"], "history": [], "errors": []}
    only = provider.complete(LLMRequest("bcr_selection", prompt="x", context=dict(context, candidates=["PickupObject Mug|1"])), 5)
    assert only.ok and only.finish_reason == "stop"
    assert only.text.endswith("$$ PickupObject Mug|1 $$") and "inside(Mug|1, Cupboard|1)" in only.text
    assert only.prompt_tokens > 0 and only.completion_tokens > 0
    # among several, the answer is one of them (the first step towards the goal: go to the mug)
    options = ["NavigateToObject Mug|1", "PickupObject Mug|1", "OpenObject Cupboard|1"]
    several = provider.complete(LLMRequest("bcr_selection", prompt="x", context=dict(context, candidates=options)), 5)
    assert several.text.endswith("$$ NavigateToObject Mug|1 $$")


@pytest.mark.parametrize("context", [
    {"object": None, "object_place": None, "prefix": None, "system_context": None},
    {"object": 42, "object_place": ["bag"], "prefix": 7, "system_context": "Dishes are dirty."},
    {"object": "müsli Ω", "object_place": "étagère", "prefix": " Thé"},
    {"object": "mug\x00\x07", "object_place": "dish rack", "prefix": "x" * 10000},
    {"object": "mug", "feedback": "No. " * 500, "repair_of": "\n\n"},
])
def test_odd_context_values_give_an_answer_not_a_traceback(provider, context):
    req = LLMRequest("recurse", prompt="(RESULT)", logprobs=5, stop=STOPS, max_tokens=-3 if "feedback" in context else 50,
                     context=context)
    r = provider.complete(req, 5)
    assert isinstance(r.text, str) and r.finish_reason in ("stop", "length")
    assert r.prompt_tokens >= 0 and r.completion_tokens >= 0


def test_odd_selection_options_are_answered_in_range(provider):
    req = LLMRequest("selection", messages=(("user", "pick"),),
                     context={"object": None, "options": [None, 3, "the goal is that the mug is in the sink"]})
    r = provider.complete(req, 5)
    assert 1 <= int(r.text) <= 3
