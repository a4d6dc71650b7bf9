"""The simulated Fetch on ROS 2, started alone as a user starts it (`task-learning sim --robot fetch
--scene store_groceries`) and driven by a plain ROS 2 client through the standard interfaces:
NavigateToPose moves base_link in /tf, the controllers answer with their result codes, the tf
tree reaches the head camera's optical frame, the head camera and the URDF are published."""
from __future__ import annotations

import math

import pytest

pytest.importorskip("mujoco")
nav2 = pytest.importorskip("nav2_msgs.action")
control = pytest.importorskip("control_msgs.action")
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Image, JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from test.ros_testing import RosGraph, wait_future, wait_until  # noqa: E402

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
START_S = 90.0  # building the world and the first frame on a loaded 2-core machine


@pytest.fixture(scope="module")
def sim(ros_module_graph: RosGraph):
    proc = ros_module_graph.start_cli("sim", "--robot", "fetch", "--scene", "store_groceries", name="sim")
    proc.wait_for_line(r"simulated Fetch in scene store_groceries", timeout=START_S)
    client = ros_module_graph.client()
    tf = client.subscribe_collect(TFMessage, "/tf", 100)
    return proc, client, tf


def _base(message: TFMessage):
    for t in message.transforms:
        if t.header.frame_id == "odom" and t.child_frame_id == "base_link":
            q = t.transform.rotation
            return t.transform.translation.x, t.transform.translation.y, \
                math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z)), t.header.stamp
    return None


def _latest_base(tf):
    tf.wait_for(lambda m: _base(m) is not None, timeout=START_S)
    return next(_base(m) for m in reversed(tf.messages) if _base(m) is not None)


def test_a_goal_one_metre_ahead_moves_base_link_one_metre_in_tf(sim):
    _, client, tf = sim
    x0, y0, yaw0, _ = _latest_base(tf)
    goal = nav2.NavigateToPose.Goal()
    goal.pose.header.frame_id = "base_link"
    goal.pose.pose.position.x = 1.0
    goal.pose.pose.orientation.w = 1.0
    result, feedback = client.send_goal(nav2.NavigateToPose, "navigate_to_pose", goal, timeout=120)
    assert result.error_code == 0, result
    expected = (x0 + math.cos(yaw0), y0 + math.sin(yaw0))
    moved = tf.wait_for(lambda m: _base(m) is not None
                        and math.dist(_base(m)[:2], expected) < 0.03, timeout=10)
    assert abs(math.dist(_base(moved)[:2], (x0, y0)) - 1.0) < 0.03
    assert feedback and all(f.distance_remaining <= 1.05 for f in feedback)


def test_a_goal_inside_furniture_is_refused_with_navs_goal_occupied_code(sim):
    _, client, _ = sim
    goal = nav2.NavigateToPose.Goal()
    goal.pose.header.frame_id = "map"
    goal.pose.pose.position.x, goal.pose.pose.position.y = _first_piece_centre()
    goal.pose.pose.orientation.w = 1.0
    result, _ = client.send_goal(nav2.NavigateToPose, "navigate_to_pose", goal, timeout=60)
    assert result.error_code == 206 and "inside" in result.error_msg


def _first_piece_centre():
    from task_learning.world.scene import load_scene
    from task_learning_sim.scene_world import build_world  # the test reads the layout; the stack never does
    piece = next(iter(build_world(load_scene("store_groceries")).receptacles.values()))
    return piece.pose[0], piece.pose[1]


def test_an_arm_trajectory_succeeds_and_unknown_joints_are_refused(sim):
    _, client, _ = sim
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectoryPoint
    goal = control.FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = ["head_pan_joint", "head_tilt_joint"]
    goal.trajectory.points = [JointTrajectoryPoint(positions=[0.4, 0.5], time_from_start=Duration(sec=1))]
    result, _ = client.send_goal(control.FollowJointTrajectory, "head_controller/follow_joint_trajectory", goal, 60)
    assert result.error_code == 0
    goal.trajectory.joint_names = ["no_such_joint", "head_tilt_joint"]
    result, _ = client.send_goal(control.FollowJointTrajectory, "head_controller/follow_joint_trajectory", goal, 60)
    assert result.error_code == -2  # INVALID_JOINTS


def test_the_gripper_opens_to_its_goal(sim):
    _, client, _ = sim
    goal = control.GripperCommand.Goal()
    goal.command.position, goal.command.max_effort = 0.1, 50.0
    result, _ = client.send_goal(control.GripperCommand, "gripper_controller/gripper_action", goal, 60)
    assert result.reached_goal and not result.stalled and result.position == pytest.approx(0.1, abs=0.005)


def test_tf_reaches_the_head_camera_and_the_robot_publishes_its_description_and_images(sim):
    _, client, tf = sim
    static = client.subscribe_collect(TFMessage, "/tf_static", LATCHED)
    fixed = static.wait_for(timeout=30)
    parents = {t.child_frame_id: t.header.frame_id for m in [fixed] + tf.messages[-50:] for t in m.transforms}
    chain, frame = [], "head_camera_rgb_optical_frame"
    while frame in parents:
        chain.append(frame)
        frame = parents[frame]
    assert frame == "map" and "base_link" in chain and "odom" in chain, chain
    description = client.subscribe_collect(String, "robot_description", LATCHED).wait_for(timeout=30)
    assert '<joint name="shoulder_pan_joint" type="revolute">' in description.data
    image = client.subscribe_collect(Image, "head_camera/rgb/image_raw").wait_for(timeout=60)
    assert (image.width, image.height, image.encoding) == (640, 480, "rgb8")
    assert image.header.frame_id == "head_camera_rgb_optical_frame"
    depth = client.subscribe_collect(Image, "head_camera/depth_registered/image_raw").wait_for(timeout=60)
    assert depth.encoding == "32FC1"
    joints = client.subscribe_collect(JointState, "joint_states").wait_for(timeout=30)
    assert {"torso_lift_joint", "head_pan_joint", "wrist_roll_joint", "l_gripper_finger_joint"} <= set(joints.name)


def test_stopping_the_simulator_mid_motion_ends_the_goal_and_exits_cleanly(ros_graph: RosGraph):
    """SIGINT while the base drives: the goal in flight ends (aborted, saying the simulator
    stopped) instead of waiting for physics that has ended, and the process exits 0 with no
    traceback (it exited 1 with a faulthandler dump, the goal's thread still waiting)."""
    from task_learning_nodes.plumbing.node_base import ActionClient
    from task_learning_nodes.plumbing.qos import action_client_qos

    # Slowed to a fifth of real time and no camera: the drive is still under way at the signal.
    proc = ros_graph.start_cli("sim", "--robot", "fetch", "--scene", "store_groceries",
                               "--real-time-factor", "0.2", "--camera-rate", "0", name="sim")
    proc.wait_for_line(r"simulated Fetch in scene store_groceries", timeout=START_S)
    client = ros_graph.client("stopper")
    actions = ActionClient(client.node, nav2.NavigateToPose, "navigate_to_pose", **action_client_qos())
    assert actions.wait_for_server(timeout_sec=60)
    goal = nav2.NavigateToPose.Goal()
    goal.pose.header.frame_id = "base_link"
    goal.pose.pose.position.x = 1.0
    goal.pose.pose.orientation.w = 1.0
    moving = []
    handle = wait_future(actions.send_goal_async(goal, feedback_callback=moving.append), 60, "the goal")
    assert handle.accepted
    result = handle.get_result_async()
    wait_until(lambda: moving, 60, "feedback: the base under way")
    code, out = proc.stop(timeout=30)
    assert code == 0, out[-3000:]
    assert "Traceback" not in out and "Fatal Python error" not in out, out[-3000:]
    if result.done():  # the abort reached the client before the process left the graph
        wrapped = result.result()
        assert wrapped.status == 6 and "the simulator has stopped" in wrapped.result.error_msg, wrapped
    client.close()
