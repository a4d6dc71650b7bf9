"""ActionSelector (the action selector node's core) in process: a whole task driven request by
request, sessions, the exploration action mapping, clear refusals."""
from __future__ import annotations

from task_learning.bcr.agent import Selection
from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import HeuristicEngine, LLMEngine
from task_learning.bcr.literals import parse_literal
from task_learning.bcr.runner import make_world
from task_learning.bcr.selector import ActionSelector
from task_learning.llm.client import make_client
from task_learning.types import ActionCall, ActionOutcome
from task_learning.world.scene import load_scene

DOMAIN = load_domain("household")
GOALS = [parse_literal("inside(Mug|1, CoffeeMachine|1)"),
         parse_literal("switched_on(CoffeeMachine|1)")]


def drive(selector: ActionSelector, world, goals, limit: int = 120):
    """Run a task as a planner would: ask, execute, report, until the selector stops."""
    history: list[ActionOutcome] = []
    for _ in range(limit):
        answer = selector.select(goals, world.metadata, history)
        if not answer.success:
            return answer, history
        call = answer.call
        metadata = world.step(call.action, **call.step_kwargs())
        ok = bool(metadata["lastActionSuccess"])
        history.append(ActionOutcome(call, ok, "" if ok else metadata["errorMessage"]))
    raise AssertionError("no end")


def test_selector_drives_make_coffee_to_the_end():
    world = make_world(load_scene("bcr_kitchen"), 2)
    selector = ActionSelector(DOMAIN, HeuristicEngine())
    answer, history = drive(selector, world, GOALS)
    assert answer.message.startswith("all goal literals hold")
    assert selector.sessions == 1  # one tree across all requests
    state = {o["objectId"]: o for o in world.metadata["objects"]}
    assert "CoffeeMachine|1" in state["Mug|1"]["parentReceptacles"]
    assert state["CoffeeMachine|1"]["isToggled"] and state["Mug|1"]["isFilledWithLiquid"]
    assert any(not o.success and "No valid positions" in o.error_message for o in history)


def test_selector_with_the_llm_engine_reports_usage():
    client = make_client("offline", cache=None)
    world = make_world(load_scene("bcr_kitchen"), 4)
    selector = ActionSelector(DOMAIN, LLMEngine(client), client)
    answer, history = drive(selector, world, [parse_literal("inside(Apple|1, Fridge|1)")])
    assert answer.message.startswith("all goal literals hold"), answer.message
    assert client.usage.by_type["bcr_selection"].calls >= 1


def test_new_goals_or_an_unknown_outcome_start_a_new_session():
    world = make_world(load_scene("bcr_kitchen"), 0)
    selector = ActionSelector(DOMAIN, HeuristicEngine())
    first = selector.select(GOALS, world.metadata)
    assert first.success and selector.sessions == 1
    # the outcome of something we did not propose: the caller started over
    stranger = ActionOutcome(ActionCall("OpenObject", "Fridge|1"), True)
    selector.select(GOALS, world.metadata, [stranger])
    assert selector.sessions == 2
    selector.select([parse_literal("open(Fridge|1)")], world.metadata)
    assert selector.sessions == 3


class Searcher(HeuristicEngine):
    """Looks around whenever it may."""

    def select(self, context):
        for cand in context.candidates:
            if cand.action.schema == "VisualSearch":
                return Selection(cand.action)
        return super().select(context)


def test_visual_search_maps_to_the_backend_exploration_action():
    world = make_world(load_scene("bcr_kitchen"), 5)  # the apple hidden in Cupboard|2
    selector = ActionSelector(DOMAIN, Searcher(), search_action="Pass")
    answer = selector.select([parse_literal("inside(Apple|1, Fridge|1)")], world.metadata)
    assert answer.success and answer.call == ActionCall("Pass", "")
    assert answer.action == "VisualSearch(Apple|1)"


def test_refusals_are_clear():
    world = make_world(load_scene("bcr_kitchen"), 0)
    selector = ActionSelector(DOMAIN, HeuristicEngine())
    assert selector.select([], world.metadata).message == "no goal literals given"
    bad = selector.select([parse_literal("inside(Ghost|1, Fridge|1)")], world.metadata)
    assert not bad.success and "no object 'Ghost|1'" in bad.message
    arity = selector.select([parse_literal("open(Fridge|1, Mug|1)")], world.metadata)
    assert not arity.success and "takes 1 argument" in arity.message
