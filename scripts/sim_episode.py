"""An episode of the simulated Fetch driven through its ROS 2 interfaces, recorded as a rosbag2
(MCAP) with the head camera, /tf, /tf_static and /joint_states, and a strip of its head camera
frames (docs/sim.md).

Start the robot first (`task-learning sim --robot fetch --scene store_groceries`), then:

    .venv/bin/python scripts/sim_episode.py --out artifacts/sim/episode --strip artifacts/sim/frame_strip.png

The goals are a plain ROS 2 client's, relative to the robot (no knowledge of the world): drive
1 m ahead, turn left a quarter, look at the floor 1.2 m ahead, open and close the gripper, turn
back. The bag opens in Foxglove (the head camera, the tf tree).
"""
from __future__ import annotations

import argparse
import math
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from control_msgs.action import GripperCommand, PointHead
from nav2_msgs.action import NavigateToPose
from PIL import Image as PILImage
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage

from task_learning.perception.bag import BagWriter

TOPICS = {  # topic: (type, ROS type name, QoS)
    "/head_camera/rgb/image_raw": (Image, "sensor_msgs/msg/Image", 5),
    "/head_camera/depth_registered/image_raw": (Image, "sensor_msgs/msg/Image", 5),
    "/head_camera/rgb/camera_info": (CameraInfo, "sensor_msgs/msg/CameraInfo", 5),
    "/tf": (TFMessage, "tf2_msgs/msg/TFMessage", 100),
    "/tf_static": (TFMessage, "tf2_msgs/msg/TFMessage",
                   QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)),
    "/joint_states": (JointState, "sensor_msgs/msg/JointState", 10),
}
GOAL_TIMEOUT_S = 120.0


def send(node: Node, kind: type, name: str, goal: object) -> object:
    client = ActionClient(node, kind, name)
    if not client.wait_for_server(timeout_sec=30.0):
        raise SystemExit(f"sim_episode: no action server {name} (is task-learning sim running?)")
    handle = client.send_goal_async(goal)
    deadline = time.monotonic() + GOAL_TIMEOUT_S
    while not handle.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    result = handle.result().get_result_async()
    while not result.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not result.done():
        raise SystemExit(f"sim_episode: {name} did not finish in {GOAL_TIMEOUT_S:.0f} s")
    return result.result().result


def navigate(node: Node, x: float, y: float, yaw: float) -> None:
    goal = NavigateToPose.Goal()
    goal.pose.header.frame_id = "base_link"
    goal.pose.pose.position.x, goal.pose.pose.position.y = x, y
    goal.pose.pose.orientation.z, goal.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    result = send(node, NavigateToPose, "navigate_to_pose", goal)
    print(f"navigate_to_pose ({x}, {y}, {yaw:.2f}) in base_link: error_code {result.error_code}")


def episode(node: Node) -> None:
    navigate(node, 1.0, 0.0, 0.0)
    navigate(node, 0.0, 0.0, math.pi / 2)
    look = PointHead.Goal()
    look.target.header.frame_id = "base_link"
    look.target.point.x, look.target.point.z = 1.2, 0.0
    send(node, PointHead, "head_controller/point_head", look)
    print("point_head at the floor 1.2 m ahead: done")
    for gap in (0.1, 0.0):
        grip = GripperCommand.Goal()
        grip.command.position, grip.command.max_effort = gap, 50.0
        result = send(node, GripperCommand, "gripper_controller/gripper_action", grip)
        print(f"gripper to {gap} m: position {result.position:.3f}, reached_goal {result.reached_goal}")
    navigate(node, 0.0, 0.0, -math.pi / 2)


def strip(frames: list[bytes], path: Path, count: int = 6) -> None:
    """`count` head camera frames, evenly spaced over the episode, side by side at half size."""
    picked = [deserialize_message(frames[int(i)], Image) for i in np.linspace(0, len(frames) - 1, count)]
    tiles = [np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width, 3)[::2, ::2] for m in picked]
    path.parent.mkdir(parents=True, exist_ok=True)
    PILImage.fromarray(np.hstack(tiles)).save(path)
    print(f"frame strip: {path} ({count} of {len(frames)} frames)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the rosbag2 directory to create")
    parser.add_argument("--strip", type=Path, default=None, help="PNG of head camera frames")
    args = parser.parse_args()
    rclpy.init()
    node = Node("sim_episode")
    bag = BagWriter(args.out)
    lock = threading.Lock()
    frames: list[bytes] = []
    closed = threading.Event()

    def record(topic: str, type_name: str):
        def store(raw: bytes) -> None:
            with lock:
                if closed.is_set():  # a message still delivered after the bag was closed
                    return
                bag.write(topic, type_name, time.time_ns(), raw)
                if topic.endswith("rgb/image_raw"):
                    frames.append(raw)
        return store

    for topic, (kind, type_name, qos) in TOPICS.items():
        node.create_subscription(kind, topic, record(topic, type_name), qos, raw=True)
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    try:
        episode(node)
        time.sleep(1.0)  # the last frames in flight
    finally:
        with lock:
            closed.set()
            bag.close()
        executor.shutdown()
        rclpy.shutdown()
    print(f"episode: {args.out} ({', '.join(f'{t} {n}' for t, n in bag.counts.items())})")
    if args.strip and frames:
        strip(frames, args.strip)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
