"""action_selector_node in its own process: SelectNextAction answered from another process, the
session carried across requests, the tree published, bad requests answered without a crash."""
from __future__ import annotations

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from task_learning.bcr.runner import make_world
from task_learning.types import ActionCall, ActionOutcome, GoalLiteral
from task_learning.world.scene import load_scene
from task_learning_interfaces import msg as msgs
from task_learning_interfaces import srv
from task_learning_nodes.plumbing import convert
from test.ros_testing import wait_until

SERVICE = "select_next_action"


@pytest.fixture(scope="module")
def node(ros_module_graph):
    proc = ros_module_graph.start_node("action_selector", "-p", "scene:=bcr_kitchen", "-p", "seed:=3",
                                       "-p", "engine:=heuristic", params_file="action_selector.yaml")
    client = ros_module_graph.client("test_bcr_client")
    yield proc, client
    client.close()
    code, out = proc.stop()
    assert code == 0, out


def request(goals, history=(), candidates=()):
    req = srv.SelectNextAction.Request()
    req.goal = [convert.goal_literal_to_msg(g) for g in goals]
    req.history = [convert.action_outcome_to_msg(o) for o in history]
    req.candidates = [convert.action_call_to_msg(c) for c in candidates]
    return req


def test_select_next_action_from_another_process(node):
    proc, client = node
    tree_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL)
    trees = client.subscribe_collect(msgs.CandidateTree, "bcr_tree", tree_qos)
    goal = GoalLiteral("inside", ("Apple|1", "Fridge|1"))
    # the node's own view of bcr_kitchen seed 3 matches this world
    world = make_world(load_scene("bcr_kitchen"), 3)
    answer = client.call(srv.SelectNextAction, SERVICE, request([goal]), timeout=30.0)
    assert answer.success, answer.message
    assert answer.action.action == "NavigateToObject" and answer.action.object_id == "Apple|1"
    tree = trees.wait_for(lambda m: m.kind == "bcr", timeout=10.0)
    labels = [n.label for n in tree.nodes]
    assert "PutObject(Apple|1, Fridge|1)" in labels and "PickupObject(Apple|1)" in labels
    assert tree.dot.startswith("digraph")

    # we run the action and publish the world as perception would; the outcome continues the
    # same session: next is the pickup
    metadata = world.step("NavigateToObject", objectId="Apple|1")
    # A marker object lets us see when the node has the new world: a goal naming it is refused
    # as unknown until then (a probe with given candidates leaves the BCR session alone).
    apple = next(o for o in metadata["objects"] if o["objectId"] == "Apple|1")
    metadata["objects"].append(dict(apple, objectId="Apple|99", name="Apple_99"))
    publisher = client.publisher_matched(msgs.WorldState, "world_state", 1)
    message = convert.world_state_msg_from_metadata(metadata, backend="symbolic")
    probe = request([GoalLiteral("holding", ("Apple|99",))], candidates=[ActionCall("PickupObject", "Apple|99")])

    def node_has_the_world() -> bool:
        publisher.publish(message)  # again each time: the node keeps the newest world it got
        return client.call(srv.SelectNextAction, SERVICE, probe, timeout=30.0).success

    wait_until(node_has_the_world, 30.0, "the node receiving the published world", interval=0.2)
    outcome = ActionOutcome(ActionCall("NavigateToObject", "Apple|1"), True)
    answer = client.call(srv.SelectNextAction, SERVICE, request([goal], [outcome]), timeout=30.0)
    assert answer.success, answer.message
    assert (answer.action.action, answer.action.object_id) == ("PickupObject", "Apple|1")


def test_bad_requests_are_answered_not_crashed(node):
    proc, client = node
    empty = client.call(srv.SelectNextAction, SERVICE, request([]), timeout=30.0)
    assert not empty.success and "no goal" in empty.message
    unknown = client.call(srv.SelectNextAction, SERVICE,
                          request([GoalLiteral("inside", ("Unicorn|1", "Fridge|1"))]), timeout=30.0)
    assert not unknown.success and "Unicorn|1" in unknown.message
    bad_predicate = client.call(srv.SelectNextAction, SERVICE,
                                request([GoalLiteral("levitating", ("Apple|1",))]), timeout=30.0)
    assert not bad_predicate.success and "levitating" in bad_predicate.message
    given = client.call(srv.SelectNextAction, SERVICE,
                        request([GoalLiteral("open", ("Fridge|1",))],
                                candidates=[ActionCall("OpenObject", "Fridge|1")]), timeout=30.0)
    assert given.success and given.action.action == "OpenObject"
    assert proc.poll() is None  # still serving
    again = client.call(srv.SelectNextAction, SERVICE, request([GoalLiteral("inside", ("Apple|1", "Fridge|1"))]),
                        timeout=30.0)
    assert again.success, again.message
