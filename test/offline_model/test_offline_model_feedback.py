"""Repair feedback steers the offline model away from what the robot rejected, and user context
(STARS*) shifts its beliefs; neither needs the scene."""
from __future__ import annotations

import pytest

from task_learning.llm.base import LLMRequest
from task_learning.offline_model import OfflineProvider
from task_learning.offline_model.stars.feedback import parse_feedback
from task_learning.offline_model.stars.goals import parse_goal

STOPS = ("(END RESULT)", ".", "Steps:", "\n")


@pytest.fixture(scope="module")
def provider() -> OfflineProvider:
    return OfflineProvider()


def request(obj="mug", place="dish rack", prefix="", *, feedback="", repair_of="", system_context=(),
            prompt_type="repair") -> LLMRequest:
    return LLMRequest(prompt_type, prompt=f"... (RESULT){prefix}", logprobs=5, stop=STOPS,
                      context={"task": "tidy kitchen", "location": "kitchen", "object": obj,
                               "object_place": place, "object_relation": "in", "prefix": prefix,
                               "repair_of": repair_of, "feedback": feedback,
                               "system_context": list(system_context)})


def all_texts(provider, req_kwargs) -> list[str]:
    """Every sentence the model could say for these settings (the whole tree's worth)."""
    query = provider.stars.goal_query(request(**req_kwargs))
    return [s.text for s in provider.stars.sentences_for(query)]


def test_cannot_see_a_cabinet_removes_cabinet(provider):
    rejected = "the goal is that the mug is in the cabinet and the cabinet is closed"
    before = all_texts(provider, {})
    assert any(" cabinet" in t for t in before)
    after = all_texts(provider, {"feedback": "No. Cannot see a cabinet.", "repair_of": rejected})
    assert after and not any(" cabinet" in t for t in after)
    r = provider.complete(request(feedback="No. Cannot see a cabinet.", repair_of=rejected), 5)
    assert "cabinet" not in r.text
    assert all(tok != " cabinet" for t in r.tokens for tok, _ in t.top)


def test_unknown_word_is_avoided(provider):
    rejected = "the goal is that the mug is in the dishwasher and the dishwasher is started"
    after = all_texts(provider, {"feedback": "No. Unknown word started.", "repair_of": rejected})
    assert after and not any(" started" in t for t in after)
    # other sentences about the dishwasher remain
    assert any("dishwasher" in t for t in after)


def test_not_grabbable_stops_moving_the_rack(provider):
    rejected = "the goal is that the mug is in the dish rack and the dish rack is in the cupboard"
    before = all_texts(provider, {})
    assert any("the dish rack is in the" in t for t in before)
    after = all_texts(provider, {"feedback": "No. Rack is not grabbable.", "repair_of": rejected})
    assert not any("the dish rack is in the" in t for t in after)
    assert any("the mug is in the dish rack" in t for t in after)  # the rack itself is still a place


def test_cannot_have_property_bans_that_state_on_that_object(provider):
    rejected = "the goal is that the mug is in the cupboard and the dish rack is empty"
    after = all_texts(provider, {"feedback": "No. Rack cannot have property empty.", "repair_of": rejected})
    assert not any("dish rack is empty" in t for t in after)
    assert any("dish rack is" in t for t in after)  # other states of the rack may remain


def test_not_a_receptacle(provider):
    rejected = "the goal is that the mug is in the sink"
    after = all_texts(provider, {"feedback": "No. Sink is not a receptacle.", "repair_of": rejected})
    assert after and not any("in the sink" in t for t in after)


def test_unreadable_feedback_bans_the_rejected_clause(provider):
    rejected = "the goal is that the mug is in the dishwasher and the dishwasher is turned on"
    after = all_texts(provider, {"feedback": "No. Could not understand. Rephrase.", "repair_of": rejected})
    assert not any("dishwasher is turned on" in t for t in after)
    r = provider.complete(request(feedback="No. Could not understand. Rephrase.", repair_of=rejected), 5)
    assert "turned on" not in r.text and r.text


def test_repair_never_repeats_the_rejected_sentence(provider):
    rejected = provider.complete(request(prompt_type="initial"), 5).text
    r = provider.complete(request(feedback="No. Could not understand. Rephrase.", repair_of=rejected), 5)
    assert r.text.strip().lower() != rejected.strip().lower()


def test_feedback_on_half_and_half_does_not_split_the_object_name(provider):
    rejected = "the goal is that the half and half is in the fridge and the fridge is closed"
    parts = parse_goal(rejected, "half and half")
    assert parts is not None and parts.dest == "fridge" and parts.clause_state == "closed"
    avoid = parse_feedback("No. Unknown word fridge.", rejected, "half and half")
    after = all_texts(provider, {"obj": "half and half", "place": "counter",
                                 "feedback": "No. Unknown word fridge.", "repair_of": rejected})
    assert after and not any("fridge" in t for t in after)
    assert any("half and half is in the refriger" in t for t in after)
    assert avoid.unknown_words == {"fridge"}


def test_everything_banned_gives_an_empty_answer_not_a_crash(provider):
    places = provider.knowledge.profile("mug", "dish rack").completion
    fb = " ".join(f"No. Cannot see a {p}." for p in places)
    r = provider.complete(request(feedback=fb, repair_of="x"), 5)
    assert r.text == "" and r.finish_reason == "stop"


def test_user_context_shifts_used_dishware_to_the_sink_and_dishwasher(provider):
    k = provider.knowledge
    plain = k.profile("mug", "counter", ())
    dirty = k.profile("mug", "counter", ("Assume that dishware on the table or counter is dirty.",))
    assert dirty.completion["dishwasher"] > plain.completion["dishwasher"]
    assert dirty.completion["cupboard"] < plain.completion["cupboard"]
    assert dirty.judgement["dishwasher"] > dirty.judgement["cupboard"]
    assert plain.judgement["cupboard"] > plain.judgement["dishwasher"]  # without context: put away
    rack = k.profile("mug", "dish rack", ("Assume that dishware on the table or counter is dirty.",))
    assert rack.completion == k.profile("mug", "dish rack", ()).completion  # the rule names places


def test_user_context_changes_the_answer_and_is_deterministic(provider):
    ctx = ("Assume that bottles and cans are empty.",)
    a = provider.complete(request(obj="soda can", place="table", prompt_type="initial", system_context=ctx), 5)
    b = provider.complete(request(obj="soda can", place="table", prompt_type="initial", system_context=ctx), 5)
    assert a.text == b.text and "recycling" in a.text
    dest = next(t for t in a.tokens if t.token == " recycling")
    assert dest.prob > 0.5


def test_feedback_changes_nothing_for_unrelated_words(provider):
    base = all_texts(provider, {})
    same = all_texts(provider, {"feedback": "No. Unknown word zebra.", "repair_of": ""})
    assert set(same) == set(base)


def test_goal_must_be_about_the_object_is_understood_and_bans_only_the_rejected_answer(provider):
    rejected = "the goal is that the cheese is in the fridge"
    avoid = parse_feedback("No. The goal must be about the mug.", rejected, "mug")
    assert avoid.rejected is None or avoid.banned_goals
    # Understood: not the "could not read it" fallback that bans clauses and verbs.
    assert not avoid.banned_clauses and not avoid.unknown_words and not avoid.unseen
    after = all_texts(provider, {"feedback": "No. The goal must be about the mug.", "repair_of": rejected})
    assert after and all("mug" in t for t in after)
