"""A stored policy replayed where a goal before left things otherwise than when it was learned
(planning.executor.GoalExecutor._replay)."""
from __future__ import annotations

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import make_engine
from task_learning.bcr.literals import StateView
from task_learning.bcr.runner import make_world
from task_learning.kb import KnowledgeBase
from task_learning.planning.executor import GoalExecutor, door_already_so
from task_learning.types import ActionCall, GoalLiteral, Truth
from task_learning.world.scene import load_scene

TASK = "store groceries"
CHEESE = [GoalLiteral("inside", ("Cheese|1", "Fridge|1")), GoalLiteral("open", ("Fridge|1",), Truth.FALSE)]


def _executor(kb: KnowledgeBase) -> GoalExecutor:
    return GoalExecutor(load_domain("household"), lambda: make_engine("heuristic"), kb)


def test_a_policy_that_opens_a_door_left_open_skips_the_open_and_is_reused(tmp_path):
    """The policy learned with the fridge closed begins by opening it; the goal before (a pick
    that failed, in a MuJoCo run) left it open. Before, the replay ran OpenObject anyway: the
    world refused it (already open) and the policy was counted failed; on the Fetch the hand
    swung the open door shut and the next put found the fridge closed, three goals running."""
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb:
        learned = _executor(kb).reach(make_world(load_scene("store_groceries"), None), CHEESE, task=TASK,
                                      object_id="Cheese|1")
        assert learned.success and learned.policy_learned
        assert ActionCall("OpenObject", "Fridge|1") in learned.actions

        world = make_world(load_scene("store_groceries"), None)
        world.step("NavigateToObject", objectId="Fridge|1")
        assert world.step("OpenObject", objectId="Fridge|1")["lastActionSuccess"]
        again = _executor(kb).reach(world, CHEESE, task=TASK, object_id="Cheese|1")

        assert again.success and again.policy_reused
        assert all(o.success for o in again.outcomes)
        assert ActionCall("OpenObject", "Fridge|1") not in again.actions
        assert again.actions[-1] == ActionCall("CloseObject", "Fridge|1")
        (policy,) = kb.policies()
        assert (policy.successes, policy.failures) == (2, 0)


def test_a_door_is_already_so_only_when_the_world_shows_it():
    fridge = {"objectId": "Fridge|1", "objectType": "Fridge", "openable": True, "isOpen": False}
    mug = {"objectId": "Mug|1", "objectType": "Mug", "pickupable": True}

    def state(**fields):
        return StateView({"objects": [{**fridge, **fields}, mug], "agent": {}})

    open_, close = ActionCall("OpenObject", "Fridge|1"), ActionCall("CloseObject", "Fridge|1")
    assert door_already_so(state(isOpen=True), open_) and not door_already_so(state(isOpen=True), close)
    assert door_already_so(state(), close) and not door_already_so(state(), open_)
    # a robot that has not seen the door does not know it closed
    assert not door_already_so(state(openStateKnown=False), close)
    assert not door_already_so(state(), ActionCall("CloseObject", "Mug|1"))
    assert not door_already_so(state(), ActionCall("CloseObject", "Nowhere|9"))
