"""BCR's two modes: `paper` (the BCR paper as published: all resolutions, re-send only, no loop
breaking, no heuristic fallback) and `guarded` (this project's extension); every failed trial
names its kind."""
from __future__ import annotations

import json

import pytest

from task_learning.apps.cli import main
from task_learning.bcr.agent import BCRAgent
from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import HeuristicEngine, LLMEngine
from task_learning.bcr.literals import parse_literal
from task_learning.bcr.runner import make_world, run_trial
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import LLMClient
from task_learning.offline_model.bcr import choose
from task_learning.world.scene import load_scene

DOMAIN = load_domain("household")


class Scripted:
    name = "scripted"
    model = "script"

    def __init__(self, text: str = "", error: str = "") -> None:
        self.text, self.error = text, error
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(text=self.text, error=self.error, prompt_tokens=5, completion_tokens=3)


class FirstCandidate(HeuristicEngine):
    """Always the first candidate: repeats whatever it tried, as a looping model does."""

    name = "first"

    def select(self, context):
        from task_learning.bcr.agent import Selection

        return Selection(context.candidates[0].action)


def test_paper_mode_ends_the_trial_on_answers_outside_the_list_without_a_fallback():
    provider = Scripted("$$ Dance() $$")
    result = run_trial("bcr_kitchen", "apple_in_fridge", "llm", LLMClient(provider, cache=None),
                       seed=5, mode="paper")
    assert not result.success and result.failure == "invalid_answer"
    assert len(provider.requests) == 6  # the question and 5 re-sends, then nothing else
    assert all(r.context.get("mode") == "paper" for r in provider.requests)


def test_paper_mode_ends_the_trial_on_an_llm_error():
    provider = Scripted(error="HTTP 500")
    client = LLMClient(provider, cache=None, max_retries=0)
    result = run_trial("bcr_kitchen", "apple_in_fridge", "llm", client, seed=5, mode="paper")
    assert not result.success and result.failure == "llm_error"
    assert "HTTP 500" in result.failure_detail


def test_guarded_mode_falls_back_to_the_heuristic_and_succeeds():
    provider = Scripted("$$ Dance() $$")
    result = run_trial("bcr_kitchen", "apple_in_fridge", "llm", LLMClient(provider, cache=None),
                       seed=5, mode="guarded")
    assert result.success and result.failure is None and result.failure_detail == ""
    assert "mode" not in provider.requests[0].context  # guarded requests are unchanged


def test_paper_mode_repeats_actions_and_a_loop_is_reported_as_one():
    world = make_world(load_scene("bcr_kitchen"), 5)
    agent = BCRAgent(DOMAIN, [parse_literal("inside(Apple|1, Fridge|1)")], FirstCandidate(),
                     max_actions=40, mode="paper")
    last = None
    executed = []
    while (proposal := agent.next_action(world.metadata, last)) is not None:
        action, call = proposal
        from task_learning.world.outcome import action_outcome

        last = action_outcome(call, world.step(call.action, **call.step_kwargs()))
        executed.append(str(action))
    assert agent.stats.loops_broken == 0
    if agent.status == "failure":
        assert agent.failure_kind in ("loop", "max_actions")
        if agent.failure_kind == "loop":
            assert any(executed.count(a) >= 3 for a in executed) or agent.stats.actions == 40


def test_guarded_mode_breaks_the_same_loop():
    world = make_world(load_scene("bcr_kitchen"), 5)
    agent = BCRAgent(DOMAIN, [parse_literal("inside(Apple|1, Fridge|1)")], FirstCandidate(),
                     max_actions=100, mode="guarded")
    last = None
    while (proposal := agent.next_action(world.metadata, last)) is not None:
        from task_learning.world.outcome import action_outcome

        _, call = proposal
        last = action_outcome(call, world.step(call.action, **call.step_kwargs()))
    assert agent.failure_kind != "loop"


def test_paper_mode_keeps_tried_resolutions_in_the_tree():
    """Guarded mode leaves out resolutions already tried in this state; paper mode adds all."""
    world = make_world(load_scene("bcr_kitchen"), 5)
    goals = [parse_literal("inside(Apple|1, Fridge|1)")]
    for mode, expect_all in (("paper", True), ("guarded", False)):
        agent = BCRAgent(DOMAIN, goals, FirstCandidate(), mode=mode)
        agent.next_action(world.metadata)
        assert agent._exclude({"x": "blocked"}) == (set() if expect_all else {"x"})  # type: ignore[dict-item]


def test_offline_chooser_penalises_repeats_in_guarded_mode_only():
    base = {"goal": ["inside(Apple|1, Fridge|1)"], "completed": [],
            "candidates": ["VisualSearch(Apple|1)", "NavigateToObject(Apple|1)"],
            "history": ["NavigateToObject(Apple|1) -> ok", "PickupObject(Apple|1) -> blocked",
                        "NavigateToObject(Apple|1) -> ok", "PickupObject(Apple|1) -> blocked"],
            "errors": ["PickupObject(Apple|1): not visible (needs visible(Apple|1))"]}
    guarded, _ = choose(base)
    paper, _ = choose(dict(base, mode="paper"))
    assert guarded == "VisualSearch(Apple|1)"  # the repeated navigation is penalised
    assert paper == "NavigateToObject(Apple|1)"  # without the penalty it walks there again


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown BCR mode"):
        BCRAgent(DOMAIN, [parse_literal("inside(Apple|1, Fridge|1)")], HeuristicEngine(), mode="x")
    from task_learning.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown BCR mode"):
        LLMEngine(object(), mode="x")


def test_cli_paper_mode_gives_per_trial_success_actions_and_failure(capsys):
    code = main(["bcr", "--scene", "bcr_kitchen", "--task", "wash_mug", "--engine", "llm",
                 "--llm", "offline", "--trials", "4", "--mode", "paper", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["mode"] == "paper" and len(data["trials"]) == 4
    for trial in data["trials"]:
        assert trial["mode"] == "paper" and trial["loops_broken"] == 0
        assert isinstance(trial["actions"], int) and 0 < trial["actions"] <= 100
        if trial["success"]:
            assert trial["failure"] is None
        else:
            assert trial["failure"] in ("loop", "max_actions", "no_candidates", "llm_error",
                                        "invalid_answer")
    assert main(["bcr", "--task", "wash_mug", "--mode", "loose"]) == 2
    assert "invalid choice: 'loose'" in capsys.readouterr().err


class FarFromTheHandle:
    """A symbolic world whose first `failing` CloseObject calls fail as a robot's from where it put
    something in ("too far away": the handle out of the arm's reach there) and whose
    NavigateToObject to the piece the robot is already at changes nothing the state summary sees."""

    def __init__(self, world, failing: int) -> None:
        self.world = world
        self.failing = failing

    @property
    def metadata(self):
        return self.world.metadata

    def step(self, action, **params):
        if action == "CloseObject" and self.failing > 0:
            self.failing -= 1
            return dict(self.world.metadata, lastAction=action, lastActionSuccess=False,
                        errorMessage=f"{params['objectId']} is too far away to be interacted with: "
                                     "no inverse kinematics solution for before the handle")
        return self.world.step(action, **params)


def test_a_blocked_action_is_retried_once_after_its_resolution_succeeds_in_a_state_that_looks_the_same():
    """The butter's fridge in a MuJoCo run: CloseObject failed (too far), NavigateToObject(Fridge)
    succeeded, but the state looked as before it (the robot "at the fridge" both times), so the
    retry counted as a loop and the goal ended "no candidate action left". Now it is retried once;
    a second failure there still ends the goal (no endless retries)."""
    from task_learning.world.outcome import action_outcome

    for failing, succeeds in ((1, True), (99, False)):
        world = FarFromTheHandle(make_world(load_scene("bcr_kitchen"), 5), failing)
        for action in ("NavigateToObject", "OpenObject"):
            assert world.world.step(action, objectId="Fridge|1")["lastActionSuccess"]
        agent = BCRAgent(DOMAIN, [parse_literal("not open(Fridge|1)")], FirstCandidate(), mode="guarded")
        executed, last = [], None
        while (proposal := agent.next_action(world.metadata, last)) is not None:
            action, call = proposal
            last = action_outcome(call, world.step(call.action, **call.step_kwargs()))
            executed.append(str(action))
        assert executed[:3] == ["CloseObject(Fridge|1)", "NavigateToObject(Fridge|1)", "CloseObject(Fridge|1)"], \
            (executed, agent.failure)
        assert (agent.status == "success") is succeeds, (agent.status, agent.failure)
        if not succeeds:
            assert len(executed) == 3 and agent.failure_kind == "no_candidates"
