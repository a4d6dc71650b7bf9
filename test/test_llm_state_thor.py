"""LLM-State on an AI2-THOR-speaking world (issue 17, the planner's strategy llm_state): names,
the observation, the primitives as AI2-THOR actions, goal literals as goal text, and the
strategy reaching a scene's goals through GoalExecutor (offline model: not a language model)."""
from __future__ import annotations

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import make_engine
from task_learning.llm.client import make_client
from task_learning.llm_state.calls import Call
from task_learning.llm_state.strategy import LLMStateStrategy
from task_learning.llm_state.thor_world import ThorWorld, goal_text
from task_learning.planning.executor import GoalExecutor
from task_learning.types import GoalLiteral, Truth
from task_learning.world.factory import make_backend


def _world():
    backend = make_backend("symbolic", "store_groceries")
    return backend, ThorWorld(backend, lambda _m: False)


def test_names_observation_and_primitives():
    backend, world = _world()
    assert world.room == "kitchen1"
    assert world.name_of("Fridge|1") == "fridge1" and world.ids["orangejuice1"] == "OrangeJuice|1"
    obs = world.observe()
    assert ("yogurt1", "ON", "bag2") in obs.objects and "fridge1" in obs.containers
    assert "countertop1" in obs.surfaces and obs.holding == () and obs.rooms == ("kitchen1",)
    # unknown names fail without touching the world; placing what is not held fails likewise
    assert not world.execute(Call("pickup", ("lightswitch3",))).success
    assert world.execute(Call("placein", ("yogurt1", "fridge1"))).reason == "not holding yogurt1"
    assert world.execute(Call("move", ("yogurt1",))).success
    assert world.execute(Call("pickup", ("yogurt1",))).success
    assert world.observe().holding == ("yogurt1",)
    assert world.execute(Call("move", ("fridge1",))).success
    failed = world.execute(Call("placein", ("yogurt1", "fridge1")))
    assert not failed.success and failed.reason  # AI2-THOR's error message: the fridge is closed
    assert world.execute(Call("open", ("fridge1",))).success
    assert world.execute(Call("placein", ("yogurt1", "fridge1"))).success
    assert ("yogurt1", "IN", "fridge1") in world.observe().objects
    assert "Fridge|1" in next(o for o in backend.metadata["objects"] if o["objectId"] == "Yogurt|1")["parentReceptacles"]
    assert world.execute(Call("close", ("fridge1",))).success
    # inside the closed fridge: not visible now, still listed where it was last seen (cumulative)
    assert ("yogurt1", "IN", "fridge1") in world.observe().objects
    assert world.execute(Call("wait", ())).success and world.execute(Call("move", ("kitchen1",))).success


def test_goal_text():
    names = {"Yogurt|1": "yogurt1", "Fridge|1": "fridge1"}.get
    literals = [GoalLiteral("inside", ("Yogurt|1", "Fridge|1"), Truth.TRUE),
                GoalLiteral("open", ("Fridge|1",), Truth.FALSE)]
    assert goal_text(literals, lambda i: names(i) or i) == "put the yogurt1 in the fridge1; close the fridge1"
    assert goal_text([GoalLiteral("switched_on", ("Toaster|1",))], str.lower) == "switch on the toaster|1"


def test_the_strategy_reaches_goal_literals_through_the_executor():
    backend = make_backend("symbolic", "store_groceries")
    states = []
    strategy = LLMStateStrategy(make_client("offline"), on_state=lambda s, g: states.append((g, s.to_dict())))
    executor = GoalExecutor(load_domain("household"), lambda: make_engine("heuristic"), None, max_actions=40,
                            reacher=strategy)
    for obj, box in (("Yogurt|1", "Fridge|1"), ("Chips|1", "Cupboard|1"), ("Flour|1", "Pantry|1")):
        literals = [GoalLiteral("inside", (obj, box), Truth.TRUE), GoalLiteral("open", (box,), Truth.FALSE)]
        reached = executor.reach(backend, literals)
        assert reached.success, (reached.message, strategy.last.action_log if strategy.last else None)
        assert [o.call.action for o in reached.outcomes] == [
            "NavigateToObject", "PickupObject", "NavigateToObject", "OpenObject", "PutObject", "CloseObject"]
    goal, last = states[-1]
    assert goal == "put the flour1 in the pantry1; close the pantry1"
    assert last["objects"]["pantry1"] == ["closed"] and "flour1" in last["summary"]


def test_a_goal_it_cannot_reach_fails_with_the_reason():
    backend = make_backend("symbolic", "store_groceries")
    strategy = LLMStateStrategy(make_client("offline"))
    executor = GoalExecutor(load_domain("household"), lambda: make_engine("heuristic"), None, max_actions=10,
                            reacher=strategy)
    reached = executor.reach(backend, [GoalLiteral("sliced", ("Cheese|1",), Truth.TRUE)])
    assert not reached.success and "LLM-State did not reach the goal" in reached.message
