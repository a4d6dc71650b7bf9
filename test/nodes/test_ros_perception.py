"""perception_node as its own OS process on the symbolic tidy_kitchen: world_state, query_world,
execute_action and get_completion from this process; bad parameters stop it with a clear error."""
from __future__ import annotations

import signal
import sys

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from task_learning.types import ActionCall
from task_learning_interfaces.msg import WorldState
from task_learning_interfaces.srv import ExecuteAction, GetCompletion, QueryWorld
from task_learning_nodes.plumbing import convert

from ..ros_testing import ROOT

PERCEPTION = [sys.executable, "-m", "task_learning_nodes.nodes.perception", "--ros-args",
              "--params-file", str(ROOT / "config" / "nodes" / "perception.yaml")]
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


@pytest.fixture(scope="module")
def ros(ros_module_graph):
    proc = ros_module_graph.start(PERCEPTION + ["-p", "publish_rate_hz:=20.0", "-p", "scene:=tidy_kitchen"],
                                  name="perception")
    client = ros_module_graph.client()
    yield client
    client.close()
    code, output = proc.stop()
    assert code == 0, f"perception exited with {code}:\n{output}"


def execute(ros, action: str, object_id: str = "", **params) -> tuple:
    call = ActionCall(action, object_id, tuple(params.items()))
    res = ros.call(ExecuteAction, "execute_action",
                   ExecuteAction.Request(call=convert.action_call_to_msg(call), return_world=True))
    return convert.action_outcome_from_msg(res.outcome), res.world


def test_world_state_is_published_latched(ros):
    states = ros.subscribe_collect(WorldState, "world_state", LATCHED)
    state = states.wait_for(lambda s: len(s.objects) > 0, timeout=15.0)
    assert state.scene == "tidy_kitchen" and state.backend == "symbolic" and state.robot_location == "kitchen"
    ids = {o.object_id for o in state.objects}
    assert {"Mug|1", "Mug|2", "DishRack|1", "Cupboard|1"} <= ids and "Cabinet|1" not in ids
    mug = next(o for o in state.objects if o.object_id == "Mug|2")
    assert mug.pickupable and list(mug.parent_receptacles) == ["DishRack|1"]
    # periodic publishing: newer stamps keep arriving
    first = states.messages[0].header.stamp
    states.wait_for(lambda s: (s.header.stamp.sec, s.header.stamp.nanosec) > (first.sec, first.nanosec))


def test_query_by_id_type_and_place(ros):
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="Mug|1"))
    assert res.success and [o.object_id for o in res.objects] == ["Mug|1"]
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="mug"))
    assert res.success and sorted(o.object_id for o in res.objects) == ["Mug|1", "Mug|2"]
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="Mug in dish_rack"))
    assert res.success and [o.object_id for o in res.objects] == ["Mug|2"]
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="dish-rack", include_world=True))
    assert [o.object_id for o in res.objects] == ["DishRack|1"] and len(res.world.objects) >= 46
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query=""))
    assert res.success and len(res.objects) >= 46


def test_query_for_missing_object_fails_clearly(ros):
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="cabinet"))
    assert not res.success and "cabinet" in res.message and not res.objects


def test_actions_change_the_world_and_failures_do_not(ros):
    outcome, world = execute(ros, "PickupObject", "Mug|2")
    assert not outcome.success and outcome.error_message  # not near it yet
    assert list(world.held_object_ids) == []
    outcome, _ = execute(ros, "NavigateToObject", "Mug|2")
    assert outcome.success, outcome.error_message
    outcome, world = execute(ros, "PickupObject", "Mug|2")
    assert outcome.success and list(world.held_object_ids) == ["Mug|2"]
    outcome, _ = execute(ros, "NavigateToObject", "Cupboard|1")
    assert outcome.success
    outcome, world = execute(ros, "PutObject", "Cupboard|1")
    assert not outcome.success and outcome.blocking_condition  # the cupboard is closed
    assert list(world.held_object_ids) == ["Mug|2"]
    assert execute(ros, "OpenObject", "Cupboard|1")[0].success
    outcome, world = execute(ros, "PutObject", "Cupboard|1")
    assert outcome.success and list(world.held_object_ids) == []
    mug = next(o for o in world.objects if o.object_id == "Mug|2")
    assert list(mug.parent_receptacles) == ["Cupboard|1"]


def test_unknown_object_is_a_failed_outcome_and_world_unchanged(ros):
    before = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="", include_world=True)).world
    outcome, after = execute(ros, "PickupObject", "Mug|9")
    assert not outcome.success and outcome.error_message.startswith("no object with id 'Mug|9'")
    assert "did you mean" in outcome.error_message and outcome.blocking_condition == "UnknownObject"
    assert after.objects == before.objects and list(after.held_object_ids) == list(before.held_object_ids)
    outcome, _ = execute(ros, "", "")
    assert not outcome.success and "no action" in outcome.error_message
    outcome, _ = execute(ros, "FlyToTheMoon", "Mug|1")
    assert not outcome.success and outcome.error_message


def test_completion_service(ros):
    res = ros.call(GetCompletion, "get_completion", GetCompletion.Request())
    assert res.success and res.total == 40 and 0 <= res.satisfied < 40
    assert len(res.failures) == res.total - res.satisfied


@pytest.mark.parametrize("override, expected", [
    ("backend:=fetch", "needs parameter marker_registry"),
    ("scene:=no_such_scene", "no_such_scene"),
    ("qos_reliability:=sometimes", "qos_reliability"),
    ("seed:=lots", "seed"),
])
def test_bad_parameters_stop_the_node_with_a_clear_error(ros_graph, override, expected):
    proc = ros_graph.run(PERCEPTION + ["-p", override], timeout=60.0, name="perception")
    code, output = proc.returncode, proc.output
    assert code == 2, output
    assert "cannot start" in output and expected in output and "Traceback" not in output


@pytest.mark.parametrize("override, expected", [
    ("ai2thor.local_executable_path:=/no/such/simulator", "/no/such/simulator is not an executable file"),
    ("ai2thor.width:=0", "ai2thor.width out of range. Min: 16, Max: 8192"),
    ("ai2thor.server_timeout_s:=.nan", "ai2thor.server_timeout_s out of range"),
])
def test_bad_ai2thor_settings_stop_the_node_with_a_clear_error(ros_graph, override, expected):
    proc = ros_graph.run(PERCEPTION + ["-p", "backend:=ai2thor", "-p", "scene:=tidy_floorplan1", "-p", override],
                         timeout=60.0, name="perception")
    code, output = proc.returncode, proc.output
    assert code == 2, output
    assert "cannot start" in output and expected in output and "Traceback" not in output


def test_sigterm_stops_the_node_cleanly(ros_graph):
    # a graph of its own (this file's other perception process must not answer for this one)
    proc = ros_graph.start(PERCEPTION + ["-p", "publish_rate_hz:=50.0"], name="perception")
    client = ros_graph.client("sigterm_test")
    try:
        assert client.call(QueryWorld, "query_world", QueryWorld.Request(query="fridge"), timeout=30.0).success
    finally:
        client.close()
        code, output = proc.stop(sig=signal.SIGTERM)
    assert code == 0, output
    assert "Traceback" not in output and "terminate called" not in output


def test_malformed_requests_are_refused_not_executed_nor_echoed(ros):
    """Issue 10: `forceAction: "{not json"` executed and reported success; a 50 MB query was
    echoed back; control characters came back raw."""
    from task_learning_interfaces.msg import ActionCall as ActionCallMsg
    from task_learning_interfaces.msg import KeyValue

    before = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="Mug|2")).objects[0]
    call = ActionCallMsg(action="PickupObject", object_id="Mug|2",
                         params=[KeyValue(key="forceAction", value="{not json")])
    res = ros.call(ExecuteAction, "execute_action", ExecuteAction.Request(call=call))
    assert not res.outcome.success and res.outcome.blocking_condition == "InvalidArgument"
    assert "forceAction" in res.outcome.error_message and "not executed" in res.outcome.error_message
    after = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="Mug|2")).objects[0]
    assert list(after.parent_receptacles) == list(before.parent_receptacles) and not after.is_picked_up
    # A value of the wrong type is refused too.
    outcome, _ = execute(ros, "PickupObject", "Mug|2", forceAction="yes")
    assert not outcome.success and "true or false" in outcome.error_message
    # Simulator commands are not robot actions (issue 34): answered, refused, nothing changed.
    for action, params in (("Reset", {"sceneName": "FloorPlan306"}), ("TeleportFull", {"horizon": 10})):
        outcome, world = execute(ros, action, **params)
        assert not outcome.success and "not a robot action" in outcome.error_message, outcome
        assert world.scene == "tidy_kitchen"

    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="x" * 1_000_000), timeout=60)
    assert not res.success and "query too long (1000000 characters" in res.message
    assert len(res.message) < 400
    res = ros.call(QueryWorld, "query_world", QueryWorld.Request(query="mug\x1b[2J in the \x07sink"))
    assert not res.success and "\x1b" not in res.message and "\x07" not in res.message
    outcome, _ = execute(ros, "PickupObject", "Mug|\x1b[31m9")
    assert not outcome.success and "\x1b" not in outcome.error_message
