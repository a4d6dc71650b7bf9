"""BCR selection engines: the BCR paper's prompt, re-asking, the offline model, success rates."""
from __future__ import annotations

import pytest

from task_learning.bcr.agent import BCRAgent
from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import HeuristicEngine, LLMEngine, make_engine
from task_learning.bcr.literals import parse_literal
from task_learning.bcr.prompt import build_prompt, match_candidate, parse_answer
from task_learning.bcr.runner import make_world, run_trial, summarize
from task_learning.errors import ConfigError
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import LLMClient, make_client
from task_learning.offline_model.bcr import respond
from task_learning.world.scene import load_scene

TASKS = ("make_coffee", "apple_in_fridge", "wash_mug", "make_toast")
DOMAIN = load_domain("household")


class ScriptedProvider:
    """Answers from a script (then repeats the last answer); records every request."""

    name = "scripted"
    model = "script"

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self.requests.append(request)
        text = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return LLMResponse(text=text, prompt_tokens=10, completion_tokens=5)


class Capture(HeuristicEngine):
    """Keeps the first decision context with several candidates."""

    context = None

    def select(self, context):
        if self.context is None:
            self.context = context
        return super().select(context)


def first_context():
    """The first real choice of the apple task (the apple hidden in a closed cupboard)."""
    capture = Capture()
    world = make_world(load_scene("bcr_kitchen"), 5)  # seed 5: the apple is in Cupboard|2
    agent = BCRAgent(DOMAIN, [parse_literal("inside(Apple|1, Fridge|1)")], capture)
    agent.next_action(world.metadata)
    assert capture.context is not None and len(capture.context.candidates) > 1
    return capture.context


def decide(answers: list[str]):
    provider = ScriptedProvider(answers)
    engine = LLMEngine(LLMClient(provider, cache=None))
    context = first_context()
    return provider, context, engine.select(context)


def test_prompt_has_the_eight_parts_in_order():
    prompt = build_prompt([parse_literal("inside(Apple|1, Fridge|1)")],
                          [parse_literal("open(Fridge|1)")], ["PickupObject(Apple|1)",
                                                              "VisualSearch(Apple|1)"],
                          ["NavigateToObject(Fridge|1) -> ok"], ["Apple|1 is not visible"])
    markers = ["household robot", "step by step", "Previous actions", "already achieved",
               "Candidate actions", "still to achieve", "Errors and blocking conditions",
               "$$ <selected action> $$"]
    positions = [prompt.index(m) for m in markers]
    assert positions == sorted(positions)
    assert "- open(Fridge|1)" in prompt and "- VisualSearch(Apple|1)" in prompt


def test_answer_parsing():
    assert parse_answer("I think... $$ PickupObject(Apple|1) $$") == "PickupObject(Apple|1)"
    assert parse_answer("no markers") is None
    assert match_candidate("pickupobject( Apple|1 )", ["PickupObject(Apple|1)"]) == \
        "PickupObject(Apple|1)"
    assert match_candidate("GrabApple", ["PickupObject(Apple|1)"]) is None


def test_answer_outside_the_list_is_asked_again_with_a_warning():
    provider, decision, selection = decide(["Sure. $$ GrabTheApple() $$",
                                            "$$ OpenObject(Cupboard|2) $$"])
    asked = [r for r in provider.requests]
    assert len(asked) == 2
    assert all(r.prompt_type == "bcr_selection" for r in asked)
    assert all(len(r.messages) == 1 for r in asked)  # a fresh conversation per decision
    context = asked[0].context
    assert {"goal", "candidates", "history", "errors"} <= set(context)
    assert "OpenObject(Cupboard|2)" in context["candidates"]
    warning = asked[1].messages[0][1]
    assert "Your last choice 'GrabTheApple()' was not in the list" in warning
    assert "not in the list" in asked[1].context["errors"][-1]
    assert selection.reasks == 1 and selection.requests == 2
    assert str(selection.action) == "OpenObject(Cupboard|2)"
    assert not any("not in the list" in e for e in decision.errors)  # the agent's list untouched


def test_re_asked_at_most_five_times_then_heuristic():
    provider, context, selection = decide(["$$ Dance() $$"])
    assert len(provider.requests) == 6  # the question and 5 re-asks
    assert selection.reasks == 5 and selection.requests == 6
    assert "heuristic" in selection.note
    assert selection.action == HeuristicEngine().select(context).action


def test_last_failure_error_text_is_fed_back_verbatim():
    """The coffee machine is occupied: the simulator's text reaches the next prompt as is."""
    client = make_client("offline")
    seen: list[str] = []
    original = client.complete

    def spy(request):
        seen.append(request.messages[0][1])
        return original(request)

    client.complete = spy  # type: ignore[method-assign]
    result = run_trial("bcr_kitchen", "make_coffee", "llm", client, seed=0)
    assert result.success
    error = next(line for line in result.action_log if "No valid positions" in line)
    text = error.split("-> failed (", 1)[1][:-1]
    assert text.startswith("No valid positions to place object found")
    assert any(text in prompt for prompt in seen)


def test_offline_bcr_model_is_deterministic_and_well_formed():
    request = LLMRequest(prompt_type="bcr_selection", messages=(("user", "x"),), context={
        "goal": ["inside(Apple|1, Fridge|1)"], "completed": [],
        "candidates": ["NavigateToObject(Apple|1)", "VisualSearch(Apple|1)",
                       "OpenObject(Fridge|1)", "OpenObject(Drawer|1)"],
        "history": ["PutObject(Apple|1, Fridge|1) -> blocked", "PickupObject(Apple|1) -> blocked"],
        "errors": ["PickupObject(Apple|1): not visible (needs visible(Apple|1))"]})
    first, second = respond(request), respond(request)
    assert first.text == second.text
    answer = parse_answer(first.text)
    assert answer in request.context["candidates"]
    assert answer in ("OpenObject(Fridge|1)", "NavigateToObject(Apple|1)")  # plausible
    assert first.completion_tokens > 0


def test_engine_names():
    assert isinstance(make_engine("heuristic"), HeuristicEngine)
    with pytest.raises(ConfigError, match="needs an LLM client"):
        make_engine("llm")
    with pytest.raises(ConfigError, match="unknown selection engine"):
        make_engine("oracle")


# The most actions any of seeds 0-19 takes with the heuristic (deterministic, measured). BCR reaches
# the goal even with an arbitrary choice among candidates, only later: a first-candidate choice
# takes up to 25 / 54 / 17 / 41 actions, so these bounds are what shows the ranking at work.
HEURISTIC_MAX_ACTIONS = {"make_coffee": 18, "apple_in_fridge": 31, "wash_mug": 10, "make_toast": 18}


@pytest.mark.parametrize("task", TASKS)
def test_heuristic_solves_every_seeded_trial(task):
    results = [run_trial("bcr_kitchen", task, "heuristic", None, seed=s) for s in range(20)]
    failed = [(r.seed, r.failure) for r in results if not r.success]
    assert not failed
    assert max(r.actions for r in results) <= HEURISTIC_MAX_ACTIONS[task], [r.actions for r in results]
    assert all(r.llm_requests == 0 for r in results)
    # deterministic: the same seed gives the same trial
    again = run_trial("bcr_kitchen", task, "heuristic", None, seed=3)
    assert again.action_log == results[3].action_log


@pytest.mark.slow  # 50 seeded trials per task
@pytest.mark.parametrize("task", TASKS)
def test_llm_engine_with_the_offline_model_solves_45_of_50(task):
    client = make_client("offline", cache=None)
    results = [run_trial("bcr_kitchen", task, "llm", client, seed=s) for s in range(50)]
    summary = summarize(results)
    assert summary["successes"] >= 45, [(r.seed, r.failure) for r in results if not r.success]
    assert summary["llm_requests"] > 0
    assert client.usage.by_type["bcr_selection"].calls == summary["llm_requests"]


class Navigator:
    """A model under the grammar that takes the first navigation it is allowed (what Gemma 3 270M
    did on apple_in_fridge, measured: NavigateToObject(Fridge|1) again and again in front of the
    fridge, each time "ok" with nothing changed)."""

    name = "navigator"
    model = "navigator"

    def __init__(self) -> None:
        self.narrowed = 0  # requests whose grammar left out some candidate of their prompt

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        assert request.constraint is not None
        choices = request.constraint.choices
        self.narrowed += len(choices) < len(request.context["candidates"])
        pick = next((c for c in choices if "NavigateToObject" in c), choices[0])
        return LLMResponse(text=pick, prompt_tokens=1, completion_tokens=1)


@pytest.mark.parametrize("seed", range(5))
def test_grounded_decoding_offers_no_candidate_whose_retry_here_changes_nothing(seed):
    """Paper mode, bounded answers, grounded: the grammar leaves out a candidate already done or
    failed in this very state (the prompt still lists it), so the navigator does the task where,
    offered every candidate, it loops to the 100-action cap (4 of these 5 seeds, as the model did)."""
    provider = Navigator()
    result = run_trial("bcr_kitchen", "apple_in_fridge", "llm", LLMClient(provider, cache=None), seed=seed,
                       mode="paper", answers="bounded", decoding="grounded")
    assert result.success, result.action_log[-4:]
    assert provider.narrowed or seed == 2  # seed 2: no retry was offered


def test_every_candidate_is_offered_when_each_retry_would_change_nothing():
    from task_learning.bcr.engines import live_choices

    context = first_context()
    assert live_choices(context) == context.texts  # nothing tried yet: every candidate
    context.__dict__["dead_here"] = {c.action for c in context.candidates}
    assert live_choices(context) == context.texts  # all dead: every one again, never none
    context.__dict__["dead_here"] = {context.candidates[0].action}
    assert live_choices(context) == context.texts[1:]
