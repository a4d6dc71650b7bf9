"""Issue 10, the pure-Python side of request validation and the confirmation policy: action calls
checked before any backend, text made safe to echo, ReachGoal coverage by confirmed goals, and the
stop token that ends a run before its next primitive action."""
from __future__ import annotations

import math

import pytest

from task_learning.inputs.safe_text import printable
from task_learning.kb import Confirmation, LearnedGoal
from task_learning.lifecycle.cancellation import RunStopped, StoppableWorld, StopToken
from task_learning.planning.confirmation import goal_covered, requires_confirmation
from task_learning.types import ActionCall, GoalLiteral, Truth
from task_learning.world.action_check import action_call_problem


@pytest.mark.parametrize("call, problem", [
    (ActionCall("PickupObject", "Mug|1", (("forceAction", "{not json"),)), "must be true or false"),
    (ActionCall("PickupObject", "Mug|1", (("forceAction", 1),)), "must be true or false"),
    (ActionCall("OpenObject", "Fridge|1", (("openness", 7),)), "from 0 to 1"),
    (ActionCall("OpenObject", "Fridge|1", (("openness", math.nan),)), "from 0 to 1"),
    (ActionCall("RotateLeft", "", (("degrees", math.inf),)), "from 0 to 360"),
    (ActionCall("Reset", "", (("sceneName", "FloorPlan306"),)), "Reset is not a robot action"),
    (ActionCall("ChangeResolution", "", (("x", 64), ("y", 64))), "not a robot action"),
    (ActionCall("Initialize", ""), "not a robot action"),
    (ActionCall("TeleportFull", "", (("horizon", 10),)), "not a robot action"),
    (ActionCall("PickupObject", "Mug|1", (("objectId", "Egg|1"),)), "does not take it"),
    (ActionCall("PutObject", "Fridge|1", (("sceneName", "FloorPlan306"),)), "does not take it"),
    (ActionCall("", "Mug|1"), "no action given"),
    (ActionCall("Pickup\x1b[2J", "Mug|1"), "must be a word"),
    (ActionCall("PickupObject", "M" * 500), "at most 200"),
    (ActionCall("PickupObject", "Mug|1", tuple((f"p{i}", True) for i in range(40))), "at most 16"),
])
def test_malformed_action_calls_are_refused(call, problem):
    assert problem in action_call_problem(call)


def test_well_formed_action_calls_pass():
    assert action_call_problem(ActionCall("PickupObject", "Mug|1", (("forceAction", True),))) == ""
    assert action_call_problem(ActionCall("OpenObject", "Fridge|1", (("openness", 0.5),))) == ""


def test_printable_strips_escape_sequences_and_cuts():
    assert printable("mug\x1b[2J\x1b]0;title\x07 in\x00 rack") == "mug in rack"
    assert printable("a" * 10, 4) == "aaaa... (6 more characters)"


def test_reach_goal_coverage_needs_a_confirmed_goal():
    type_of = {"Cheese|1": "Cheese", "Fridge|1": "Fridge", "GarbageCan|1": "GarbageCan"}
    goal = LearnedGoal("store groceries", "cheese in bag", "Cheese", "the cheese is in the fridge",
                       [GoalLiteral("inside", ("?object", "Fridge")),
                        GoalLiteral("open", ("Fridge",), Truth.FALSE)],
                       confirmation=Confirmation.OPERATOR_YES)
    closed = GoalLiteral("open", ("Fridge|1",), Truth.FALSE)
    assert goal_covered([GoalLiteral("inside", ("Cheese|1", "Fridge|1")), closed], [goal], type_of)[0]
    assert not goal_covered([closed], [goal], type_of)[0], "the fridge alone is nobody's goal"
    fridge = [GoalLiteral("inside", ("Cheese|1", "Fridge|1"))]
    garbage = [GoalLiteral("inside", ("Cheese|1", "GarbageCan|1"))]
    assert goal_covered(fridge, [goal], type_of) == (True, "")
    covered, reason = goal_covered(garbage, [goal], type_of)
    assert not covered and "no confirmed goal covers inside(Cheese|1, GarbageCan|1)" in reason
    goal.confirmation = Confirmation.NONE
    assert not goal_covered(fridge, [goal], type_of)[0]
    goal.confirmation = Confirmation.IMPORTED_TRUSTED
    assert goal_covered(fridge, [goal], type_of)[0]
    assert not goal_covered([GoalLiteral("inside", ("Cheese|1", "Fridge|1"), Truth.FALSE)], [goal], type_of)[0]


def test_which_runs_require_confirmation():
    assert requires_confirmation("STARS+O") and requires_confirmation("tbp+o")
    assert not requires_confirmation("STARS") and requires_confirmation("STARS", True)


def test_a_stopped_world_refuses_the_next_primitive_action():
    class World:
        def __init__(self) -> None:
            self.metadata: dict = {"objects": []}
            self.steps = 0

        def step(self, action, **params):
            self.steps += 1
            return self.metadata

    token = StopToken()
    world = StoppableWorld(World(), token)
    world.step("Pass")
    token.request("canceled by the client")
    with pytest.raises(RunStopped, match="canceled by the client"):
        world.step("Pass")
    assert world.steps == 1 and world.metadata == {"objects": []}


def test_a_dead_world_ends_the_whole_run_not_one_object(tmp_path, monkeypatch):
    """The fault the faults table left: perception killed mid-task, and the planner went on with
    12 more objects (each action failing after its timeout) because BCR took the error for one
    object's. A DependencyFailed from the world now ends the run at once."""
    from task_learning.lifecycle.cancellation import DependencyFailed
    from task_learning.planning.session import RunSpec, run_in_process
    from task_learning.world import symbolic

    calls = {"n": 0}
    real_step = symbolic.SymbolicWorld.step

    def dying_step(self, action, **params):
        calls["n"] += 1
        if calls["n"] > 5:
            raise DependencyFailed("the perception node went away while the planner waited for execute_action")
        return real_step(self, action, **params)

    monkeypatch.setattr(symbolic.SymbolicWorld, "step", dying_step)
    with pytest.raises(DependencyFailed, match="perception node"):
        run_in_process(RunSpec(scene="store_groceries", condition="STARS", operator="none",
                               db=tmp_path / "kb.sqlite"))
    assert calls["n"] == 6, "not one action after the failure"
