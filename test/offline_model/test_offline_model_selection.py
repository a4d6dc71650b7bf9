"""Selection answers of the offline model: one integer, in range, chosen by household judgement."""
from __future__ import annotations

import math

import pytest

from task_learning.llm.base import LLMRequest, ProviderError
from task_learning.offline_model import OfflineProvider

# The STARS paper appendix B.6: the six viable options for the mug in the dish rack, lowest score first.
MUG_OPTIONS = [
    "the goal is that the mug is in the cupboard",
    "the goal is that the mug is in the dishwasher",
    "the goal is that the mug is in the dishwasher and the dishwasher is closed",
    "the goal is that the mug is in the drawer and the drawer is closed",
    "the goal is that the mug is in the cupboard and the cupboard is closed",
    "the goal is that the mug is in the dish rack",
]


@pytest.fixture(scope="module")
def provider() -> OfflineProvider:
    return OfflineProvider()


def selection(options, obj="mug", place="dish rack", *, chat=True, system_context=(), logprobs=0):
    ctx = {"task": "tidy kitchen", "object": obj, "object_place": place, "options": list(options),
           "system_context": list(system_context)}
    body = "\n".join(f"{i}. {o}" for i, o in enumerate(options, 1))
    if chat:
        return LLMRequest("selection", messages=(("user", body + "\nAnswer with one number."),),
                          context=ctx, logprobs=logprobs, max_tokens=5)
    return LLMRequest("selection", prompt=body + "\nAnswer:", context=ctx, logprobs=logprobs, max_tokens=5)


def test_mug_example_selects_the_closed_cupboard_like_gpt4(provider):
    r = provider.complete(selection(MUG_OPTIONS), 5)
    assert r.text == "5"
    assert r.completion_tokens == 1 and r.prompt_tokens > 0 and r.finish_reason == "stop"


def test_completion_form_answers_with_a_leading_space_and_alternatives(provider):
    r = provider.complete(selection(MUG_OPTIONS, chat=False, logprobs=5), 5)
    assert r.text.strip() == "5"
    top = r.tokens[0].top
    assert top[0][0] == r.tokens[0].token and len(top) == 5
    assert sum(math.exp(lp) for _, lp in top) <= 1.0
    assert all(int(tok) in range(1, 7) for tok, _ in top)


def test_answer_always_in_range_and_deterministic(provider):
    pools = [
        MUG_OPTIONS[:1],
        list(reversed(MUG_OPTIONS)),
        ["the goal is that the can of beans is in the pantry", "the goal is that the can of beans is in the cupboard"],
        ["gibberish", "more gibberish", "the goal is that the pen is in the drawer"],
        ["nothing useful here"] * 3,
    ]
    for options in pools:
        a = provider.complete(selection(options, obj="mug" if "mug" in options[0] else "pen"), 5)
        b = provider.complete(selection(options, obj="mug" if "mug" in options[0] else "pen"), 5)
        assert a.text == b.text
        assert 1 <= int(a.text) <= len(options)


def test_order_does_not_change_the_chosen_text(provider):
    forward = provider.complete(selection(MUG_OPTIONS), 5)
    backward = provider.complete(selection(list(reversed(MUG_OPTIONS))), 5)
    assert MUG_OPTIONS[int(forward.text) - 1] == list(reversed(MUG_OPTIONS))[int(backward.text) - 1]


def test_knowledge_picks_the_conventional_place(provider):
    opts = ["the goal is that the milk is in the pantry", "the goal is that the milk is in the refrigerator",
            "the goal is that the milk is on the counter"]
    assert provider.complete(selection(opts, obj="milk", place="bag"), 5).text == "2"
    opts = ["the goal is that the novel is in the drawer", "the goal is that the novel is on the bookshelf"]
    assert provider.complete(selection(opts, obj="novel", place="bag"), 5).text == "2"


def test_user_context_changes_the_selection_for_used_dishware(provider):
    opts = ["the goal is that the mug is in the dishwasher", "the goal is that the mug is in the cupboard"]
    without = provider.complete(selection(opts, place="counter"), 5).text
    with_ctx = provider.complete(selection(opts, place="counter", system_context=(
        "Dishware on the table or on the counter has been used and is dirty.",)), 5).text
    assert without == "2" and with_ctx == "1"


def test_selection_without_options_is_a_clear_error(provider):
    with pytest.raises(ProviderError, match="options"):
        provider.complete(LLMRequest("selection", prompt="pick one", context={"object": "mug"}), 5)
