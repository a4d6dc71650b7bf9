"""Issue 34, build item 3: perception executes robot actions only. An anonymous ExecuteAction
`Reset {sceneName: FloorPlan306}` swapped the 77-object AI2-THOR kitchen for a 29-object bedroom
while world_state still named the kitchen; `ChangeResolution` went through too: the action check
validated the name's shape only. Now every call is checked against the robot's actions
(world.action_check.ROBOT_ACTIONS) on every path that reaches a backend: the ROS service and, in
process, `run_action` and the AI2-THOR bridge itself. Each simulator command is answered (a
failed outcome naming it) and the world is unchanged."""
from __future__ import annotations

import pytest

from task_learning.perception.evaluate import synthetic_world  # loads cv2 (and its library path) once
from task_learning.types import ActionCall
from task_learning.world.outcome import run_action
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld

from ..thor_helpers import settings, state_of, thor_env  # noqa: F401  (thor_env: a fixture)

SIMULATOR_COMMANDS = [
    ActionCall("Reset", "", (("sceneName", "FloorPlan306"),)),
    ActionCall("Initialize", "", (("gridSize", 0.5),)),
    ActionCall("ChangeResolution", "", (("x", 64), ("y", 64))),
    ActionCall("TeleportFull", "", (("position", {"x": 0.0, "y": 0.9, "z": 0.0}),
                                    ("rotation", {"x": 0, "y": 0, "z": 0}), ("horizon", 0), ("standing", True))),
    ActionCall("SetObjectPoses", "", (("objectPoses", []),)),
    # a robot action smuggling a simulator parameter
    ActionCall("NavigateToObject", "Fridge|1", (("sceneName", "FloorPlan306"),)),
]
THOR_SCENE = "tidy_floorplan1"


def _refused(outcome) -> bool:
    return (not outcome.success and "not executed" in outcome.error_message
            and ("not a robot action" in outcome.error_message or "does not take it" in outcome.error_message))


@pytest.mark.parametrize("call", SIMULATOR_COMMANDS, ids=lambda c: c.action)
def test_in_process_run_action_refuses_simulator_commands_on_the_symbolic_world(call):
    world = SymbolicWorld(load_scene("store_groceries"))
    before = world.metadata
    outcome = run_action(world, call)
    assert _refused(outcome), outcome
    assert world.metadata is before, "the backend was never called"


def test_in_process_run_action_refuses_simulator_commands_on_the_fetch_world():
    world, _robot, _clock = synthetic_world(load_scene("store_groceries"))
    version = world.belief.version
    for call in SIMULATOR_COMMANDS:
        outcome = run_action(world, call)
        assert _refused(outcome), outcome
    assert world.belief.version == version, "the backend was never called"
    # and the bridge itself refuses what is not one of its skills (a direct step)
    assert not world.step("Reset", sceneName="FloorPlan306")["lastActionSuccess"]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("thor_env")
def test_the_ai2thor_bridge_refuses_simulator_commands_in_process():
    pytest.importorskip("ai2thor")
    from task_learning.world.thor.bridge import Ai2ThorWorld

    with Ai2ThorWorld(load_scene(THOR_SCENE), settings()) as world:
        before = state_of(world.metadata)
        scene = world.metadata.get("sceneName")
        for call in SIMULATOR_COMMANDS:
            assert _refused(run_action(world, call)), call
            # the bridge refuses a direct step too: it is the one door to the Controller
            direct = world.step(call.action, **call.step_kwargs())
            assert not direct["lastActionSuccess"] and "not executed" in direct["errorMessage"], direct
        sent = world.steps
        assert world.metadata.get("sceneName") == scene
        after = state_of(world.metadata)
        assert after["objects"] == before["objects"] and len(after["objects"]) == len(before["objects"])
        # the simulator still answers robot actions, in the same kitchen
        apple = next(o["objectId"] for o in world.metadata["objects"] if o["objectType"] == "Apple")
        assert world.step("NavigateToObject", objectId=apple)["lastActionSuccess"]
        assert world.steps == sent + 1


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("thor_env")
def test_execute_action_over_ros_refuses_simulator_commands_on_the_ai2thor_backend(ros_graph, tmp_path):
    """The real graph: bringup's perception node on the ai2thor backend, driving the real ai2thor
    Controller against the stand-in simulator; an anonymous client sends the simulator commands."""
    pytest.importorskip("ai2thor")
    from task_learning_interfaces.srv import ExecuteAction, QueryWorld
    from task_learning_nodes.plumbing import convert
    from test.ros_testing import CLI

    proc = ros_graph.start([CLI, "bringup", "--backend", "ai2thor", "--scene", THOR_SCENE,
                            "--db", str(tmp_path / "kb.sqlite"), "--nodes", "perception"], name="bringup")
    client = ros_graph.client("simulator_commands")
    try:
        before = client.call(QueryWorld, "query_world", QueryWorld.Request(query=""), timeout=120)
        assert before.success and len(before.objects) > 30
        ids = sorted(o.object_id for o in before.objects)
        answered = executed = 0
        scenes = set()
        for call in SIMULATOR_COMMANDS:
            reply = client.call(ExecuteAction, "execute_action",
                                ExecuteAction.Request(call=convert.action_call_to_msg(call), return_world=True),
                                timeout=60)
            assert reply is not None, f"{call.action}: no answer"
            answered += 1
            executed += int(reply.outcome.success)
            outcome = convert.action_outcome_from_msg(reply.outcome)
            assert _refused(outcome), (call.action, outcome)
            scenes.add(reply.world.scene)
        assert (answered, executed) == (len(SIMULATOR_COMMANDS), 0)
        assert len(scenes) == 1 and "306" not in scenes.pop()
        after = client.call(QueryWorld, "query_world", QueryWorld.Request(query=""), timeout=60)
        assert sorted(o.object_id for o in after.objects) == ids, "the kitchen is still the kitchen"
        apple = next(i for i in ids if i.startswith("Apple|"))
        reply = client.call(ExecuteAction, "execute_action", ExecuteAction.Request(
            call=convert.action_call_to_msg(ActionCall("NavigateToObject", apple))), timeout=60)
        assert reply.outcome.success, reply.outcome.error_message
    finally:
        client.close()
        code, output = proc.stop()
    assert code == 0, output[-3000:]
    assert "Traceback" not in output
