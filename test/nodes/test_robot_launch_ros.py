"""`ros2 launch task_learning robot.launch.py`: the stack on a robot profile.

The issue's end-to-end test: robot:=fetch with use_sim_time against the fake standard servers
(nodes/mock, fakes:=true: /clock, /tf, Nav2, controllers, PointHead; the arm through the stack's
IK on the simulated Fetch's URDF) and the stand-in world (object positions from the scene's
layout: no camera), STARS+O with the offline stand-in model (not a language model) and the
simulated operator learns store_groceries. And the one-line refusals: an unknown profile, a
missing required input, an action timeout shorter than the robot's actions.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from std_msgs.msg import String

from task_learning_interfaces.action import PerformTask

from .test_ros_launch import ROS2

DATA = Path(__file__).resolve().parents[1] / "data" / "robot"
pytestmark = pytest.mark.skipif(not ROS2.exists(), reason="the ROS 2 tools are not installed")


def robot_launch(*arguments: str) -> list[str]:
    return [str(ROS2), "launch", "task_learning", "robot.launch.py", *arguments]


@pytest.mark.parametrize("arguments,line", [
    (("robot:=pr2",), "unknown robot profile 'pr2' (known: fetch, stretch, tiago)"),
    ((), "robot:= is required (a profile: fetch, stretch, tiago)"),
    (("robot:=fetch",), "world:=camera needs marker_registry:=FILE"),
    (("robot:=fetch", "world:=stand_in"), "world:=stand_in needs scene:=NAME"),
    (("robot:=fetch", "world:=stand_in", "scene:=store_groceries", "action_timeout_s:=10"),
     "action_timeout_s:=10 is shorter than the fetch profile's longest action"),
])
def test_bad_input_is_one_line_and_starts_nothing(ros_graph, arguments, line):
    result = ros_graph.run(robot_launch(*arguments), timeout=100)
    assert result.returncode == 1 and line in result.output, result.output
    assert "process started" not in result.output
    assert sum(1 for text in result.output.splitlines() if "[ERROR]" in text) == 1


@pytest.mark.timeout(1500)
def test_fetch_with_sim_time_learns_store_groceries_against_the_fakes(ros_graph):
    db = ros_graph.tmp / "kb.sqlite"
    launch = ros_graph.start(robot_launch("robot:=fetch", "use_sim_time:=true", "fakes:=true", "world:=stand_in",
                                          "scene:=store_groceries", "llm:=offline", f"db:={db}",
                                          f"robot_description_file:={DATA / 'fetch.urdf'}"), name="ros2 launch")
    launch.wait_for_line(r"arm kinematics from /robot_description", timeout=240)
    operator = ros_graph.start_cli("operator", "--simulated", "store_groceries", "--db", str(db), "--wait", "120",
                                   name="simulated operator")
    client = ros_graph.client()
    events = client.subscribe_collect(String, "fake_robot/events", 1000)
    result, _ = client.send_goal(PerformTask, "perform_task",
                                 PerformTask.Goal(task="store groceries", scene="store_groceries", condition="STARS+O"),
                                 timeout=1200)
    assert result.success and result.completion == 1.0, (result.message, result.completion)
    kinds = {json.loads(m.data).get("kind") for m in events.messages}
    assert {"navigate", "point_head", "trajectory", "gripper"} <= kinds
    assert "process has died" not in launch.output and operator.poll() is None
