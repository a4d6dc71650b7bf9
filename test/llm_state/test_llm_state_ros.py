"""LLM-State through the ROS graph (issue 17): the planner with `strategy: llm_state` performs a
task (goals learned by goal elicitation, each reached by LLM-State's loop acting through
perception), publishes its open state on `llm_state` (LLMState, latched), and, with a condition
that needs an operator and no oversight node, moves nothing and publishes no state."""
from __future__ import annotations

import signal

import pytest

from task_learning.planning.session import RunSpec, run_in_process

from ..readme_commands import printed, readme_ros2_commands, shell
from ..ros_testing import VENV_BIN

pytest.importorskip("rclpy")
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from task_learning_interfaces.action import PerformTask
from task_learning_interfaces.msg import LLMState, WorldState
from task_learning_nodes.plumbing import convert

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROS2 = VENV_BIN / "ros2"
SCENE = "store_groceries"
NODES = ["perception", "grounding", "goal_elicitation", "planner"]
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def test_a_task_through_the_graph_with_llm_state(ros_graph, tmp_path):
    # A test bench without an operator for the first goal (require_confirmation off, as in
    # test_planning_ros); the second goal's condition needs one, and none runs.
    bringup = ros_graph.start_cli("bringup", "--scene", SCENE, "--db", str(tmp_path / "kb.sqlite"),
                                  "--nodes", *NODES, "--param", "planner.require_confirmation:=false",
                                  "--param", "planner.strategy:=llm_state",
                                  "--param", "planner.service_timeout_s:=30.0")
    client = ros_graph.client("llm_state_test")
    try:
        states = client.subscribe_collect(LLMState, "llm_state", LATCHED)
        goal = PerformTask.Goal(task="store groceries", scene=SCENE, condition="STARS")
        result, _ = client.send_goal(PerformTask, "perform_task", goal, timeout=600)
        assert result.success, result.message
        assert len(result.objects) == 15 and all(o.success for o in result.objects), \
            [o.message for o in result.objects if not o.success]
        # Every learned goal ("in its place, the place closed") reached: the same completion as
        # BCR reaching the same goals in-process (one goal the offline STARS learns is not the
        # scene's preferred place, so both score 17 of 18).
        local, _ = run_in_process(RunSpec(scene=SCENE, condition="STARS", operator="none",
                                          db=tmp_path / "local.sqlite"))
        assert result.satisfied == local.satisfied and result.total == local.assertions, result.message

        # The state topic: key objects, objects with attributes, the summary, per goal.
        final = states.wait_for(lambda m: m.goal == "put the butter1 in the fridge1; close the fridge1" and any(
            o.name == "fridge1" and "closed" in o.attributes for o in m.objects), timeout=60)
        state = convert.llm_state_from_msg(final)
        assert final.method == "ours" and {"butter1", "fridge1"} <= set(final.key_objects)
        assert "in_fridge1" in state["objects"]["butter1"] and "butter1" in final.summary
        # A late subscriber (what `ros2 topic echo --qos-durability transient_local` does) gets it.
        late = client.subscribe_collect(LLMState, "llm_state", LATCHED).wait_for(timeout=30)
        assert late == states.messages[-1]
        if ROS2.exists():  # and the README's `ros2 topic echo` for it, exactly as printed
            echo = ros_graph.start(shell(printed(readme_ros2_commands(), "ros2 topic echo --qos-durability "
                                                 "transient_local --qos-reliability reliable /llm_state")),
                                   name="ros2 topic echo /llm_state")
            echo.wait_for_line(r"goal: put the butter1 in the fridge1; close the fridge1", timeout=120)
            echo.stop(signal.SIGINT, timeout=30)
            ros_graph.run([str(ROS2), "daemon", "stop"], timeout=60)  # if the echo started one

        # Oversight on (STARS+O) and no oversight node: refused before anything moves.
        before = len(states.messages)
        world = client.subscribe_collect(WorldState, "world_state", LATCHED).wait_for(timeout=30)
        refused, _ = client.send_goal(PerformTask, "perform_task", PerformTask.Goal(
            task="store groceries", scene=SCENE, condition="STARS+O"), timeout=120)
        assert not refused.success and "oversight" in refused.message, refused.message
        assert len(states.messages) == before
        again = client.subscribe_collect(WorldState, "world_state", LATCHED).wait_for(timeout=30)
        assert convert.metadata_from_world_state_msg(again)["objects"] == \
            convert.metadata_from_world_state_msg(world)["objects"]
    finally:
        client.close()
        code, output = bringup.stop(signal.SIGINT, timeout=60)
    assert code == 0, output[-2000:]
