"""TBP as the STARS paper describes it: several samples at the configured temperatures, deduplicated,
ranked by mean token probability; the offline model samples with a seeded generator."""
from __future__ import annotations

import pytest

from task_learning.errors import ConfigError
from task_learning.llm.base import LLMRequest, LLMResponse, TokenLogprob
from task_learning.llm.client import LLMClient, make_client
from task_learning.offline_model import OfflineProvider
from task_learning.stars.elicit import ElicitationSetup, elicit_goal
from task_learning.stars.prompts import SamplingSettings, load_templates
from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata

STOP = ("(END RESULT)", ".", "Steps:", "\n")


def goal_request(temperature: float, sample: int = 0, obj: str = "mug", place: str = "dish rack"):
    return LLMRequest("initial", prompt=f"Aware of {obj} in {place}.\n(RESULT)", logprobs=5,
                      stop=STOP, temperature=temperature,
                      context={"object": obj, "object_place": place, "object_relation": "in",
                               "prefix": "", "sample": sample})


def test_the_configured_plan_sends_temperature_zero_once_then_each_temperature():
    sampling = load_templates().tbp_sampling
    plan = sampling.plan()
    assert plan[0] == (0.0, 0) and len(plan) > 1
    assert len({t for t, _ in plan}) == len(sampling.temperatures)
    assert SamplingSettings((0.0, 0.5), 3).plan() == [(0.0, 0), (0.5, 0), (0.5, 1), (0.5, 2)]


def test_bad_sampling_config_is_a_clear_error(tmp_path):
    import shutil

    from task_learning.inputs.config import config_path

    folder = tmp_path / "prompts"
    shutil.copytree(config_path("prompts"), folder)
    goal = folder / "goal.yaml"
    goal.write_text(goal.read_text().replace("temperatures: [0.0, 0.25, 0.5, 0.75, 1.0]",
                                             "temperatures: [0.0, 3.0]"))
    with pytest.raises(ConfigError, match=r"tbp_sampling\.temperatures\[1\]: must be a finite number in \[0, 2\], got 3"):
        load_templates(folder)


def test_offline_sampling_is_greedy_at_zero_seeded_above_and_reports_untempered_probabilities():
    provider = OfflineProvider()
    greedy = provider.complete(goal_request(0.0))
    assert provider.complete(goal_request(0.0, sample=3)).text == greedy.text
    hot = [provider.complete(goal_request(1.0, sample=i)) for i in range(12)]
    again = [provider.complete(goal_request(1.0, sample=i)) for i in range(12)]
    assert [r.text for r in hot] == [r.text for r in again]  # seeded: same request, same answer
    assert len({r.text for r in hot}) >= 3  # and the samples differ
    # the log probabilities are the model's own: a sampled text that equals the greedy one
    # carries the same probabilities
    same = next((r for r in hot if r.text == greedy.text), None)
    if same is not None:
        assert [round(t.logprob, 9) for t in same.tokens] == [round(t.logprob, 9) for t in greedy.tokens]


def test_higher_temperature_gives_more_distinct_answers():
    provider = OfflineProvider()
    distinct = {t: len({provider.complete(goal_request(t, sample=i)).text for i in range(20)})
                for t in (0.25, 1.0)}
    assert distinct[1.0] >= distinct[0.25]


class ScriptedSamples:
    """A provider that answers sample i with a scripted text and token probabilities."""

    name = "scripted"
    model = "scripted"

    def __init__(self, answers):
        self.answers = answers
        self.seen: list[tuple[float, int]] = []

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        key = (request.temperature, request.context.get("sample", 0))
        self.seen.append(key)
        text, probs = self.answers[len(self.seen) - 1]
        words = text.split(" ")
        tokens = [TokenLogprob((" " if i else "") + w, __import__("math").log(p))
                  for i, (w, p) in enumerate(zip(words, probs))]
        return LLMResponse(text=text, tokens=tokens, prompt_tokens=10, completion_tokens=len(tokens))


def test_tbp_dedups_samples_and_chooses_the_best_mean_token_probability():
    scene = load_scene("tidy_kitchen")
    state = world_state_from_metadata({"sceneName": scene.name, "objects": scene.objects})
    templates = load_templates()
    n = len(templates.tbp_sampling.plan())
    scripted = [("the goal is that the mug is in the sink", [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5]),
                ("the goal is that the mug is in the cupboard", [0.95] * 9),
                ("The goal is that the mug is in the sink.", [0.9] * 9)]
    scripted += [scripted[0]] * (n - len(scripted))
    provider = ScriptedSamples(scripted)
    client = LLMClient(provider)
    mug = next(o for o in scene.task_objects if o.startswith("Mug|"))
    result = elicit_goal(scene.task, mug, state, scene, "TBP", client,
                         setup=ElicitationSetup(templates=templates))
    assert provider.seen == templates.tbp_sampling.plan()  # every sample asked, none merged
    assert [c.text for c in result.candidates] == ["the goal is that the mug is in the sink",
                                                   "the goal is that the mug is in the cupboard"]
    assert result.counts["duplicates"] == n - 2
    assert result.chosen.text == "the goal is that the mug is in the cupboard"


def test_tbp_plus_o_can_propose_several_goals_before_asking_for_words():
    from task_learning.oversight.operator import ScriptedOperator

    scene = load_scene("tidy_kitchen")
    state = world_state_from_metadata({"sceneName": scene.name, "objects": scene.objects})
    client = make_client("offline", cache=False)
    proposals = []
    for oid in scene.task_objects:
        operator = ScriptedOperator(["no"] * 5 + ["the goal is that the object is in the garbage"])
        result = elicit_goal(scene.task, oid, state, scene, "TBP+O", client,
                             setup=ElicitationSetup(operator=operator))
        proposals.append(result.oversight.counts.proposed)
        if max(proposals) > 1:
            break
    assert max(proposals) > 1  # one retrieved response could only ever be proposed once


def test_openai_provider_sends_each_sample_with_its_temperature_and_keeps_server_usage():
    import math

    from task_learning.llm.openai_provider import OpenAIProvider
    from task_learning.testing.fake_server import (
        COMPLETIONS,
        FakeOpenAIServer,
        ScriptedReply,
        completion_body,
    )

    scene = load_scene("tidy_kitchen")
    state = world_state_from_metadata({"sceneName": scene.name, "objects": scene.objects})
    templates = load_templates()
    tokens = [(" The", math.log(0.9), {" The": math.log(0.9)}),
              (" goal is that the mug is in the sink", math.log(0.8), {})]
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(tokens, prompt_tokens=77)))
        provider = OpenAIProvider(base_url=server.base_url, api_key="x", completion_model="fake-instruct")
        client = LLMClient(provider, timeout_s=5.0, max_retries=0)
        mug = next(o for o in scene.task_objects if o.startswith("Mug|"))
        result = elicit_goal(scene.task, mug, state, scene, "TBP", client,
                             setup=ElicitationSetup(templates=templates))
        sent = [r.body for r in server.requests_to(COMPLETIONS)]
    # sent concurrently: every planned temperature once, in any order
    assert sorted(b["temperature"] for b in sent) == sorted(t for t, _ in templates.tbp_sampling.plan())
    assert all("sample" not in b for b in sent)  # the sample index stays on our side
    assert client.usage.prompt_tokens == 77 * len(sent)  # the server's figures, not ours
    assert len(result.candidates) == 1 and result.counts["duplicates"] == len(sent) - 1
