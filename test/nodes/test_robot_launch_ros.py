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


SHORT_SCENE = Path(__file__).resolve().parents[1] / "data" / "scenes" / "sim_short.yaml"


@pytest.mark.timeout(600)
def test_sim_mujoco_starts_the_simulated_fetch_and_the_stack_reads_its_camera(ros_graph):
    """sim:=mujoco: the simulator writes its marker registry, serves the Fetch, and perception
    builds its world from the rendered head camera and /tf (robot pose from tf, on /clock): a
    look at the table from where the robot starts is not needed, the pose is what tf says."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from task_learning_interfaces.msg import WorldState

    db = ros_graph.tmp / "kb.sqlite"
    launch = ros_graph.start(robot_launch("robot:=fetch", "sim:=mujoco", f"scene:={SHORT_SCENE}", "llm:=offline",
                                          f"db:={db}"), name="ros2 launch")
    launch.wait_for_line(r"fetch bridge: 5 registered objects \(DICT_4X4_100\)", timeout=300)
    registry = ros_graph.tmp / "markers_sim_short.yaml"
    assert registry.is_file() and "CanOfBeans|1" in registry.read_text()
    client = ros_graph.client()
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    status = client.subscribe_collect(String, "sim/status", latched)
    worlds = client.subscribe_collect(WorldState, "world_state", latched)
    first = json.loads(status.wait_for(timeout=120).data)
    assert first["completion"]["completion_source"] == "mujoco" and first["completion"]["total"] == 3
    # perception used a frame of the simulator: the base's pose from its tf, at the start pose
    world = worlds.wait_for(lambda m: m.backend == "fetch" and m.robot_pose_map.header.frame_id == "map", timeout=240)
    assert abs(world.robot_pose_map.pose.position.x) < 0.05 and abs(world.robot_pose_map.pose.position.y) < 0.05
    assert "process has died" not in launch.output


def test_sim_mujoco_with_a_scene_it_cannot_build_is_one_line(ros_graph):
    result = ros_graph.run(robot_launch("robot:=fetch", "sim:=mujoco", "scene:=bcr_kitchen",
                                        f"db:={ros_graph.tmp / 'kb.sqlite'}"), timeout=200)
    assert result.returncode == 1 and "Cup|1 starts in CoffeeMachine|1" in result.output, result.output
    assert "process started" not in result.output
