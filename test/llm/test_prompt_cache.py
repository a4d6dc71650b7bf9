"""Prompt caching made visible: the long shared part of every STARS prompt comes first (so a
server's prefix cache can serve it), the meter of cacheable prompt share, and the server's cached
token counts carried through usage."""
from __future__ import annotations

import os

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.cache import ResponseCache
from task_learning.llm.client import LLMClient
from task_learning.llm.codec import response_from_dict, response_to_dict
from task_learning.llm.prefix_cache import PrefixCacheMeter, PrefixShare
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.types import MismatchKind

MUG = GoalContext("tidy kitchen", "kitchen", "mug", "in", "dish rack")
FORK = GoalContext("tidy kitchen", "kitchen", "fork", "on", "table")


def shared(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def test_goal_prompts_of_different_objects_share_everything_before_the_object():
    t = load_templates()
    mug, fork = t.goal_prompt(MUG), t.goal_prompt(FORK)
    common = shared(mug, fork)
    assert common >= len(t.goal_examples)  # the few-shot examples, the long part, come first
    assert mug[common:].startswith("mug") and len(mug) - common < 0.15 * len(mug)
    branch = t.goal_prompt(MUG, prefix=" The goal is that the mug is in the")
    assert branch.startswith(mug)  # a branch is its root prompt plus the forced prefix


def test_repair_and_selection_prompts_put_their_shared_examples_first():
    t = load_templates()
    kind = MismatchKind.UNGROUNDED_OBJECT
    a = t.goal_prompt(MUG, repair_of="the goal is that the mug is in the cabinet",
                      feedback="No. Cannot see a cabinet.", repair_kind=kind)
    b = t.goal_prompt(FORK, repair_of="the goal is that the fork is in the cabinet",
                      feedback="No. Cannot see a cabinet.", repair_kind=kind)
    assert shared(a, b) >= len(t.repair_examples[kind])
    s1 = t.selection_request(MUG, ["the goal is that the mug is in the sink", "the goal is that the mug is in the cupboard"])
    s2 = t.selection_request(FORK, ["the goal is that the fork is in the drawer", "the goal is that the fork is in the sink"])
    assert shared(s1.prompt or s1.messages[-1][1], s2.prompt or s2.messages[-1][1]) >= len(t.selection_example)


def test_prefix_share_counts_the_longest_prefix_seen_before():
    meter = PrefixShare()
    assert meter.add("abcdef") == 0
    assert meter.add("abcxyz") == 3
    assert meter.add("abcdeg") == 5  # against "abcdef", not the later "abcxyz"
    assert meter.add("zzz") == 0
    assert meter.prompts == 4 and meter.chars == 21 and meter.cached_chars == 8
    assert abs(meter.share - 8 / 21) < 1e-12


class Quiet:
    name = "quiet"
    model = "q"

    def complete(self, request, timeout_s):
        return LLMResponse(text="ok", prompt_tokens=10, completion_tokens=1, cached_prompt_tokens=8)

    def complete_batch(self, requests, timeout_s):
        return [self.complete(r, timeout_s) for r in requests]


def test_meter_sees_batched_and_single_prompts_and_usage_carries_cached_tokens():
    meter = PrefixCacheMeter(Quiet())
    client = LLMClient(meter, cache=ResponseCache(), max_batch_size=8)
    client.complete(LLMRequest("initial", prompt="shared part: one"))
    client.complete_many([LLMRequest("recurse", prompt="shared part: two"),
                          LLMRequest("recurse", prompt="shared part: three")])
    assert meter.meter.prompts == 3 and meter.meter.cached_chars == len("shared part: ") + len("shared part: t")
    assert client.usage.cached_prompt_tokens == 24 and client.usage.to_dict()["cached_prompt_tokens"] == 24
    assert client.usage.by_type["recurse"].cached_prompt_tokens == 16


def test_cached_prompt_tokens_survive_the_cache_and_cassette_codec():
    response = LLMResponse(text="x", prompt_tokens=100, completion_tokens=2, cached_prompt_tokens=64)
    assert response_from_dict(response_to_dict(response)).cached_prompt_tokens == 64
    plain = LLMResponse(text="x")
    assert "cached_prompt_tokens" not in response_to_dict(plain)  # old cassettes stay byte-identical
