"""Search Tree rules (notes/stars-reference.md) against small scripted models."""
from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.stars.tree import (
    TreeRoot,
    TreeSettings,
    TreeState,
    ends_sentence,
    expand,
    normalize_response,
)
from task_learning.testing.mug_example import _response, _t
from task_learning.types import CandidateSource

CTX = GoalContext("tidy kitchen", "kitchen", "cup", "on", "table")
TEMPLATES = load_templates()


class ScriptedClient:
    """Answers by the request's prefix; unknown prefixes get an error response (like a dead
    endpoint). Optional random delays shuffle completion order."""

    def __init__(self, script, jitter_s: float = 0.0, seed: int = 0):
        self.script = script
        self.requests: list[LLMRequest] = []
        self.jitter_s = jitter_s
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            self.requests.append(request)
            delay = self._rng.random() * self.jitter_s
        if delay:
            time.sleep(delay)
        prefix = request.context["prefix"]
        if prefix not in self.script:
            return LLMResponse(text="", error=f"no script for {prefix!r}")
        return _response(self.script[prefix])

    @property
    def prefixes(self) -> list[str]:
        return [r.context["prefix"] for r in self.requests]


def root() -> TreeRoot:
    return TreeRoot(build_request=lambda pt, prefix: TEMPLATES.goal_request(CTX, pt, prefix, scope="Cup|1"),
                    key="goal")


def run(script, settings=None, workers=1, jitter=0.0, seed=0):
    client = ScriptedClient(script, jitter, seed)
    state = TreeState(settings=settings or TreeSettings())
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            expand(client, [root()], state, pool)
    else:
        expand(client, [root()], state)
    return client, state


H = [_t(" The", 0.99), _t(" goal", 0.99), _t(" is", 0.99), _t(" that", 0.99), _t(" the", 0.99),
     _t(" cup", 0.99), _t(" is", 0.99)]
P = " The goal is that the cup is"


def test_branches_only_below_090_and_on_alternatives_above_005():
    script = {
        "": H + [_t(" in", 0.89, {" on": 0.06, " under": 0.05, " near": 0.04}),
                 _t(" the", 0.95, {" a": 0.049}), _t(" sink", 0.90, {" cupboard": 0.09})],
        P + " on": [_t(" the", 0.99), _t(" shelf", 0.99)],
    }
    client, state = run(script)
    # " in" (0.89) branches on " on" (0.06 > 0.05) only: 0.05 is not above 0.05; " sink" at exactly
    # 0.90 is not below 0.90.
    assert client.prefixes == ["", P + " on"]
    assert [c.text for c in state.candidates] == [
        "the goal is that the cup is in the sink", "the goal is that the cup is on the shelf"]
    assert client.requests[0].prompt_type == "initial" and client.requests[1].prompt_type == "recurse"
    assert client.requests[1].prompt.endswith("(RESULT)" + P + " on")


def test_skips_same_token_dash_and_comma_alternatives():
    script = {"": H + [_t(" in", 0.5, {"in": 0.2, " -": 0.1, ",": 0.1, " In ": 0.1}), _t(" it", 0.99)]}
    client, state = run(script)
    assert client.prefixes == [""]
    assert len(state.candidates) == 1


def test_sentence_end_alternative_is_a_response_without_request():
    script = {"": H + [_t(" in", 0.99), _t(" the", 0.99), _t(" sink", 0.99),
                       _t(" and", 0.7, {".(": 0.2, "\n": 0.07}), _t(" washed", 0.99)]}
    client, state = run(script)
    assert client.prefixes == [""]
    texts = [c.text for c in state.candidates]
    assert texts == ["the goal is that the cup is in the sink and washed", "the goal is that the cup is in the sink"]
    finished = state.candidates[1]
    assert finished.source is CandidateSource.RECURSE and finished.parent_id == 1
    # Its score counts the ending alternative's probability.
    assert finished.score == pytest.approx((0.99 * 10 + 0.2) / 11)
    assert state.counts["duplicates"] == 1  # "\n" gave the same sentence again


def test_ends_sentence_and_normalisation():
    assert ends_sentence(".(") and ends_sentence(".") and ends_sentence("\n") and ends_sentence(" (")
    assert not ends_sentence(" cup")
    assert normalize_response("  The goal is  that X.  ") == "the goal is that x"


def chain_script(depth_levels: int, p_alt: float = 0.3):
    """Every response branches on its last token; continuation k adds ' wk'."""
    script = {"": H + [_t(" w0", 0.5, {" a0": p_alt})]}
    prefix = P
    for k in range(1, depth_levels + 2):
        prefix = prefix + f" a{k - 1}"
        script[prefix] = [_t(f" w{k}", 0.5, {f" a{k}": p_alt})]
    return script


def test_depth_limit_two_levels_of_recursion():
    client, state = run(chain_script(5), TreeSettings(continue_at_least=0.0))
    assert client.prefixes == ["", P + " a0", P + " a0 a1"]
    assert [r.prompt_type for r in client.requests] == ["initial", "recurse", "recurse"]
    assert state.counts["pruned_depth"] == 1


def test_mean_probability_rule_from_level_one():
    # The level-1 branch " ... a0 x a1" has the tokens H (7 x 0.99), a0, x and the alternative a1.
    high = {"": H + [_t(" w0", 0.3, {" a0": 0.6})],
            P + " a0": [_t(" x", 0.99), _t(" w1", 0.8, {" a1": 0.15})],
            P + " a0 x a1": [_t(" end", 0.99)]}
    high_mean = (7 * 0.99 + 0.6 + 0.99 + 0.15) / 10  # 0.867
    client, _ = run(high)
    assert client.prefixes == ["", P + " a0", P + " a0 x a1"]
    # the rule is the mean of exactly these ten tokens: a threshold just above it prunes the branch
    client, state = run(high, TreeSettings(continue_at_least=high_mean + 0.002))
    assert client.prefixes == ["", P + " a0"] and state.counts["pruned_low_mean"] == 1
    low = dict(high)
    low[P + " a0"] = [_t(" x", 0.5), _t(" w1", 0.8, {" a1": 0.15})]
    low_mean = (7 * 0.99 + 0.6 + 0.5 + 0.15) / 10  # 0.818
    client, state = run(low)
    assert client.prefixes == ["", P + " a0"] and state.counts["pruned_low_mean"] == 1
    client, state = run(low, TreeSettings(continue_at_least=low_mean - 0.002))
    assert client.prefixes == ["", P + " a0", P + " a0 x a1"] and state.counts["pruned_low_mean"] == 0
    # The root's own branches are not subject to the rule (a 0.06 alternative still recurses).
    lowroot = {"": H + [_t(" w0", 0.06, {" a0": 0.06})], P + " a0": [_t(" x", 0.99)]}
    client, _ = run(lowroot)
    assert client.prefixes == ["", P + " a0"]


def test_dedup_and_never_rerequest_a_prefix():
    script = {
        "": H + [_t(" in", 0.6, {" inside": 0.3}), _t(" the", 0.99), _t(" sink", 0.99)],
        P + " inside": [_t(" the", 0.99), _t(" sink", 0.99)],
    }
    client, state = run(script)
    assert [c.text for c in state.candidates] == ["the goal is that the cup is in the sink",
                                                  "the goal is that the cup is inside the sink"]
    # Expanding the same root again: every prefix was requested already, nothing new goes out.
    again = expand(client, [root()], state)
    assert again == [] and len(client.requests) == 2 and state.counts["repeated_prefix"] == 1
    # Same text from another tree is a duplicate, not a new candidate.
    other = TreeRoot(build_request=lambda pt, prefix: TEMPLATES.goal_request(
        CTX, pt, prefix, repair_of="x", feedback="No."), key="other", root_type="repair",
        recurse_type="repair_recurse", root_source=CandidateSource.REPAIR,
        recurse_source=CandidateSource.REPAIR_RECURSE)
    assert expand(client, [other], state) == []
    assert state.counts["duplicates"] >= 2


def test_request_cap():
    script = {"": H + [_t(" in", 0.3, {" on": 0.2, " by": 0.2, " at": 0.2})]}
    for alt in (" on", " by", " at"):
        script[P + alt] = [_t(" x", 0.99)]
    client, state = run(script, TreeSettings(max_requests=2))
    assert len(client.requests) == 2 and state.counts["requests"] == 2
    assert state.counts["capped"] == 2
    assert client.prefixes == ["", P + " on"]


def test_failed_and_logprob_less_responses_are_counted_not_fatal():
    script = {"": H + [_t(" in", 0.3, {" on": 0.2})]}  # the " on" branch has no script: error
    client, state = run(script)
    assert state.counts["failed_requests"] == 1 and len(state.candidates) == 1
    bare = ScriptedClient({})
    bare.complete = lambda request: LLMResponse(text=" The goal is that the cup is in the sink")
    st = TreeState()
    expand(bare, [root()], st)
    assert st.counts["no_logprobs"] == 1 and st.candidates[0].score == 0.0


def test_concurrent_expansion_equals_sequential():
    from task_learning.testing.mug_example import RECURSIONS, ROOT

    script = {"": ROOT, **RECURSIONS}
    ctx = GoalContext("tidy kitchen", "kitchen", "mug", "in", "dish rack")

    def mk() -> TreeRoot:
        return TreeRoot(build_request=lambda pt, prefix: TEMPLATES.goal_request(ctx, pt, prefix), key="g")

    seq_client = ScriptedClient(script)
    seq = TreeState()
    expand(seq_client, [mk()], seq)
    for seed in range(3):
        client = ScriptedClient(script, jitter_s=0.01, seed=seed)
        state = TreeState()
        with ThreadPoolExecutor(8) as pool:
            expand(client, [mk()], state, pool)
        assert [c.to_dict() for c in state.candidates] == [c.to_dict() for c in seq.candidates]
        assert state.counts == seq.counts
    assert len(seq.candidates) == 13
