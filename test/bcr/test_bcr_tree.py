"""The BCR candidate tree and the agent loop: roots, leaves, success, blocking, loops, the cap."""
from __future__ import annotations

import copy
from typing import Any, ClassVar

from task_learning.bcr.agent import MAX_ACTIONS, Selection
from task_learning.bcr.domain import GroundAction, load_domain
from task_learning.bcr.engines import HeuristicEngine
from task_learning.bcr.literals import StateView, parse_literal
from task_learning.bcr.runner import make_world, run_goals, run_trial
from task_learning.bcr.tree import CandidateTree
from task_learning.world.scene import load_scene

DOMAIN = load_domain("household")
SCENE = load_scene("bcr_kitchen")


def ga(text: str) -> GroundAction:
    name, args = text.rstrip(")").split("(")
    return GroundAction(name, tuple(a.strip() for a in args.split(",") if a.strip()))


def test_roots_are_the_achievers_and_candidates_the_leaves():
    tree = CandidateTree()
    goal = parse_literal("inside(Mug|1, CoffeeMachine|1)")
    node = tree.add_goal(goal, 0)
    tree.add_children(node, [ga("PutObject(Mug|1, CoffeeMachine|1)")])
    assert [c.text for c in tree.candidates()] == ["PutObject(Mug|1, CoffeeMachine|1)"]
    put = tree.candidates()[0].node
    tree.block(put, "not_holding", "not holding", [ga("PickupObject(Mug|1)")])
    assert [c.text for c in tree.candidates()] == ["PickupObject(Mug|1)"]  # the blocked one is no leaf
    pick = tree.candidates()[0].node
    tree.block(pick, "not_visible", "x", [ga("NavigateToObject(Mug|1)"), ga("VisualSearch(Mug|1)"),
                                          ga("OpenObject(Cupboard|1)")])
    assert {c.text for c in tree.candidates()} == {
        "NavigateToObject(Mug|1)", "VisualSearch(Mug|1)", "OpenObject(Cupboard|1)"}
    # success removes the action and its siblings; the blocked parent is a candidate again
    nav = next(c.node for c in tree.candidates() if c.action.schema == "NavigateToObject")
    removed = tree.succeed(nav)
    assert len(removed) == 3
    assert [c.text for c in tree.candidates()] == ["PickupObject(Mug|1)"]
    dot = tree.to_dot("t")
    assert dot.startswith('digraph "t"') and "PutObject(Mug|1, CoffeeMachine|1)" in dot
    assert "->" in dot and 'label="not_holding"' in dot


def test_blocking_condition_adds_exactly_its_resolutions():
    """Hand full while picking up the mug: the children are exactly PutObject(held, surface) for
    every surface of the kitchen, nothing else."""
    world = make_world(SCENE, 0)
    world.step("NavigateToObject", objectId="Cup|1")
    world.step("PickupObject", objectId="Cup|1")
    state = StateView(world.metadata)
    blocked = DOMAIN.check_blocking(ga("PickupObject(Mug|1)"), state)
    assert blocked is not None and blocked.condition == "hand_full"
    surfaces = sorted(o for o, r in state.objects.items()
                      if r["objectType"] in ("CounterTop", "DiningTable"))
    assert sorted(blocked.actions, key=str) == [GroundAction("PutObject", ("Cup|1", s))
                                                for s in surfaces]
    tree = CandidateTree()
    node = tree.add_goal(parse_literal("holding(Mug|1)"), 0)
    (pick,) = tree.add_children(node, [ga("PickupObject(Mug|1)")])
    tree.block(pick, blocked.condition, blocked.description, blocked.actions)
    assert sorted(str(tree.graph.nodes[c]["action"]) for c in tree.children(pick)) == \
        sorted(str(a) for a in blocked.actions)


def test_error_text_is_the_blocking_condition_verbatim():
    world = make_world(SCENE, 0)
    for action, target in (("NavigateToObject", "Mug|1"), ("PickupObject", "Mug|1"),
                           ("NavigateToObject", "CoffeeMachine|1")):
        assert world.step(action, objectId=target)["lastActionSuccess"]
    metadata = world.step("PutObject", objectId="CoffeeMachine|1")
    error = metadata["errorMessage"]
    assert "No valid positions to place object found" in error
    blocked = DOMAIN.check_blocking(ga("PutObject(Mug|1, CoffeeMachine|1)"),
                                    StateView(metadata), error_text=error)
    assert blocked.condition == "no_room" and blocked.description == error
    assert blocked.actions == [ga("PickupObject(Cup|1)")]  # the object in the way


class Scripted:
    """An engine that always names the same action when it is a candidate."""

    name = "scripted"

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite
        self.fallback = HeuristicEngine()

    def select(self, context):
        for cand in context.candidates:
            if cand.text == self.favourite:
                return Selection(cand.action)
        return self.fallback.select(context)


class SearchSeesNothingNew:
    """The world, but a VisualSearch that changes nothing (the door still hides the shelves)."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.name = "search-sees-nothing-new"

    @property
    def metadata(self) -> dict[str, Any]:
        return self.world.metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        if action == "VisualSearch":
            return dict(self.world.metadata, lastAction=action, lastActionSuccess=True, errorMessage="")
        return self.world.step(action, **params)


def test_an_action_the_world_refused_is_retried_once_after_a_resolution_then_a_loop_is_broken():
    """An engine that keeps choosing NavigateToObject(Fridge|1) while the open door hides the
    shelves: the put the world refused is retried once after the navigation (a resolution that
    succeeded may have changed what the state summary does not show: on a robot, where the base
    stands), not again; Navigate is not offered a third time, VisualSearch is, and the task
    finishes. Where VisualSearch changes nothing either, the next repeat in the same state is
    caught as a loop (not executed) and the task ends with nothing left to try."""
    world = make_world(SCENE, 1)
    world.door_block_p = 1.0  # the door always hides the shelves
    goal = [parse_literal("inside(Apple|1, Fridge|1)")]
    result = run_goals(world, goal, Scripted("NavigateToObject(Fridge|1)"), DOMAIN)
    assert result.success and result.loops_broken == 0, result.action_log
    log = result.action_log
    navs = [i for i, line in enumerate(log) if line.startswith("NavigateToObject(Fridge|1) -> executed")]
    assert len(navs) == 2  # to reach the fridge, then once in vain at the open door
    assert log[navs[1] + 1].startswith("PutObject(Apple|1, Fridge|1) -> failed")  # the one retry
    assert log[navs[1] + 2] == "VisualSearch(Fridge|1) -> executed"  # Navigate not offered again
    assert log[navs[1] + 3] == "PutObject(Apple|1, Fridge|1) -> executed"

    world = make_world(SCENE, 1)
    world.door_block_p = 1.0
    result = run_goals(SearchSeesNothingNew(world), goal, Scripted("NavigateToObject(Fridge|1)"), DOMAIN)
    assert not result.success and result.loops_broken == 1, result.action_log
    assert result.action_log[-1].startswith("PutObject(Apple|1, Fridge|1) -> loop"), result.action_log
    assert sum(line.startswith("PutObject(Apple|1, Fridge|1) -> failed") for line in result.action_log) == 2


def test_action_cap_ends_the_trial_as_a_failure():
    result = run_trial("bcr_kitchen", "make_toast", "heuristic", None, seed=0, max_actions=5)
    assert not result.success and result.actions == 5
    assert "5-action limit" in result.failure_detail


class RestlessWorld:
    """A world that changes on every step (dust keeps landing on the lamp) but whose lamp never
    switches on: no loop can be detected, so only the 100-action cap ends the task."""

    name = "restless"

    def __init__(self) -> None:
        lamp = {"objectId": "Lamp|1", "objectType": "Lamp", "toggleable": True,
                "isToggled": False, "receptacle": True, "receptacleObjectIds": [],
                "parentReceptacles": [], "visible": True, "distance": 0.5}
        self._meta: dict[str, Any] = {"objects": [lamp], "agent": {"location": "Lamp|1"},
                                      "inventoryObjects": [], "lastActionSuccess": True,
                                      "errorMessage": ""}
        self.steps = 0

    @property
    def metadata(self) -> dict[str, Any]:
        return copy.deepcopy(self._meta)

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        self.steps += 1
        self._meta["objects"][0]["receptacleObjectIds"].append(f"Dust|{self.steps}")
        self._meta["lastActionSuccess"] = False
        self._meta["errorMessage"] = "The power is out."
        return self.metadata


def test_hundred_action_cap_is_the_default():
    assert MAX_ACTIONS == 100
    world = RestlessWorld()
    result = run_goals(world, [parse_literal("switched_on(Lamp|1)")], HeuristicEngine(), DOMAIN)
    assert not result.success
    assert result.actions == 100 and world.steps == 100
    assert "100-action limit" in result.failure_detail


def test_single_candidate_is_executed_without_asking():
    class Counting(HeuristicEngine):
        asked_with: ClassVar[list[int]] = []

        def select(self, context):
            self.asked_with.append(len(context.candidates))
            return super().select(context)

    engine = Counting()
    result = run_trial("bcr_kitchen", "apple_in_fridge", engine, None, seed=3)
    assert result.success
    singles = sum(1 for n in result.candidate_counts if n == 1)
    assert singles >= 3  # Put -> Pickup -> Navigate at the start have one option each
    assert all(n > 1 for n in engine.asked_with)
    assert len(engine.asked_with) == result.decisions - singles


def test_peak_is_the_tree_at_its_largest_and_blocks_take_no_snapshot():
    tree = CandidateTree()
    root = tree.add_goal(parse_literal("inside(Apple|1, Fridge|1)"), 0)
    put = tree.add_children(root, [ga("PutObject(Fridge|1)")])[0]
    tree.block(put, "not_holding", "not holding Apple|1", [ga("PickupObject(Apple|1)"), ga("OpenObject(Drawer|1)")])
    assert tree._peak is None and tree.peak() is tree  # growing takes no copy
    largest = len(tree)
    pickup = tree.nodes_for(ga("PickupObject(Apple|1)"))[0]
    tree.succeed(pickup)  # the pickup and its sibling leave the tree
    assert len(tree) < largest
    assert len(tree.peak()) == largest and tree.peak() is not tree
    assert "OpenObject(Drawer|1)" in tree.peak().to_dot() and "OpenObject(Drawer|1)" not in tree.to_dot()
