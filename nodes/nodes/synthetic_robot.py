"""synthetic_robot_node: a simulated Fetch for tests and the demo (no robot, no simulator).

- Publishes the head camera as a real robot does: colour (bgr8), depth registered to colour
  (16UC1 millimetres, Gaussian noise `depth_noise_m`), camera info, all with one stamp, at
  `publish_rate_hz`, and tf: `map_frame` -> `base_frame` on /tf at each image's stamp, and the
  camera mount (`camera_mount`) `base_frame` -> `camera_frame` once on /tf_static. Time is the
  node clock (sim time under use_sim_time). At start it turns in
  place through `look_around_steps` headings, `look_around_hold_s` each, so the bridge sees the
  room (again and again until the first skill goal, with `scan_until_first_skill`).
- Serves the Skill action (`skill_action`) the bridge sends to: the symbolic world decides what
  happens (AI2-THOR's rules and error messages), the 3D layout follows, the camera re-renders.
  `skill_delay_s` makes every skill take that long (to test timeouts).
- `fault` injects bad input for tests: no_camera_info | depth_half_size | stale (stamps 2 s old)
  | unregistered_marker (a marker id the registry lacks) | tf_stops (/tf ends after 10 frames, as
  when a localiser dies: the base's transform goes stale).
"""
from __future__ import annotations

import threading
import time
from typing import Any

import cv2
import numpy as np
from geometry_msgs.msg import TransformStamped
from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image
from tf2_msgs.msg import TFMessage

from task_learning.lifecycle.signals import StopSignals
from task_learning.perception import geometry as g
from task_learning.perception.skills import SKILLS, SkillRequest
from task_learning.perception.synthetic import SimulatedRobot
from task_learning.world.camera_model import CameraModel
from task_learning.world.scene import load_scene
from task_learning_interfaces.action import Skill
from task_learning_nodes.plumbing.camera_topics import camera_info_msg, image_msg
from task_learning_nodes.plumbing.fetch_params import FetchRobotEndParameters
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.params import declare_parameters, param
from task_learning_nodes.plumbing.tf_listener import TF_STATIC_TOPIC, TF_TOPIC, tf_qos, tf_static_qos

FAULTS = ("", "no_camera_info", "depth_half_size", "stale", "unregistered_marker", "tf_stops")
TF_STOPS_AFTER = 10  # frames
STRAY_MARKER_ID = 99
# The head camera's optical frame in base_link: 1.2 m up, 0.1 m ahead, pitched down 25 degrees.
DEFAULT_CAMERA_MOUNT = (0.1, 0.0, 1.2, -0.596368, 0.596368, -0.379928, 0.379928)


class Parameters(FetchRobotEndParameters):
    """The synthetic_robot node's parameters (no params file: tests and the demo set them with -p)."""

    scene: str = param("store_groceries", "scene under config/scenes/ (or a path)")
    publish_rate_hz: float = param(5.0, "frames per second", min=0.1, max=100.0)
    width: int = param(640, "image width in pixels", min=16, max=4096)
    height: int = param(480, "image height in pixels", min=16, max=4096)
    depth_noise_m: float = param(0.005, "sigma of the Gaussian depth noise, m", min=0.0, max=1.0)
    look_around_steps: int = param(12, "headings of the look-around at start (0: none)", min=0, max=360)
    look_around_hold_s: float = param(2.0, "how long the robot looks in each heading", min=0.0, max=60.0)
    scan_until_first_skill: bool = param(True, "repeat the look-around until the first skill goal arrives")
    skill_delay_s: float = param(0.0, "every skill takes this long (tests of timeouts)", min=0.0, max=3600.0)
    fault: str = param("", "bad input to inject: " + " | ".join(f for f in FAULTS if f), choices=FAULTS)
    seed: int = param(0, "depth noise seed", min=0, max=2**32 - 1)
    camera_frame: str = param("head_camera_rgb_optical_frame", "frame_id of the images")
    camera_mount: tuple[float, ...] = param(DEFAULT_CAMERA_MOUNT, "camera_frame in base_frame, published on /tf_static: "
                                            "[x, y, z, qx, qy, qz, qw] (metres within 10; the quaternion "
                                            "normalised)", min=-10.0, max=10.0)
    # (the robot's end of the bridge's topics, frames and skill server: the base's fields)


class SyntheticRobotNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("synthetic_robot", **kwargs)
        params = declare_parameters(self, Parameters)
        self.fault = params.fault
        rate = params.publish_rate_hz
        width, height = params.width, params.height
        try:
            T_base_camera = g.from_xyz_quat([float(v) for v in params.camera_mount])
        except ValueError as exc:
            raise ValueError(f"parameter camera_mount: {exc}") from None
        self.robot = SimulatedRobot(load_scene(params.scene), camera=CameraModel.fetch_head(width, height),
                                    T_base_camera=T_base_camera, depth_noise_m=params.depth_noise_m,
                                    seed=params.seed)
        if self.fault == "unregistered_marker":
            self.robot.add_stray_marker(STRAY_MARKER_ID)
        self.skill_delay_s = params.skill_delay_s
        self.camera_frame = params.camera_frame
        self.map_frame, self.base_frame = params.map_frame, params.base_frame
        self._frames_sent = 0
        self._lock = threading.Lock()
        hold = max(1, int(round(params.look_around_hold_s * rate)))
        self._scan = [pose for pose in self.robot.look_around_poses(params.look_around_steps)
                      for _ in range(hold)] if params.look_around_steps > 0 else []
        self._pending_poses = list(self._scan)
        self._keep_scanning = params.scan_until_first_skill
        qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        self.color_pub = self.create_publisher(Image, params.color_topic, qos)
        self.depth_pub = self.create_publisher(Image, params.depth_topic, qos)
        self.info_pub = self.create_publisher(CameraInfo, params.camera_info_topic, qos)
        self.tf_pub = self.create_publisher(TFMessage, TF_TOPIC, tf_qos())
        self.tf_static_pub = self.create_publisher(TFMessage, TF_STATIC_TOPIC, tf_static_qos())
        self.tf_static_pub.publish(TFMessage(transforms=[
            _transform(self.base_frame, self.camera_frame, _time_msg(0.0), T_base_camera)]))
        self.create_timer(1.0 / rate, self.publish_frame, callback_group=MutuallyExclusiveCallbackGroup())
        ActionServer(self, Skill, params.skill_action, execute_callback=self.on_skill,
                     cancel_callback=lambda _goal: CancelResponse.ACCEPT, callback_group=ReentrantCallbackGroup())
        self.get_logger().info(f"synthetic robot in {self.robot.scene.name}: {width}x{height} at {rate:g} Hz, "
                               f"{len(self.robot.registry.markers)} marked objects, fault={self.fault or 'none'}")

    # -- camera ---------------------------------------------------------------------------------

    def publish_frame(self) -> None:
        now = self.get_clock().now()
        stamp = now.nanoseconds * 1e-9 - (2.0 if self.fault == "stale" else 0.0)
        with self._lock:
            if not self._pending_poses and self._keep_scanning:
                self._pending_poses = list(self._scan)
            if self._pending_poses:
                self.robot.T_world_base = self._pending_poses.pop(0)
            view = self.robot.render(stamp)
            T_base = self.robot.T_world_base.copy()
        header_stamp = _time_msg(stamp)
        # tf_stops counts only frames a listener could get (volatile /tf: what is published before
        # perception's subscription matches is gone); at load 30 the first 10 all went unheard
        # and perception never learned 'map' at all, a different fault from the one simulated
        if self.fault != "tf_stops" or self.tf_pub.get_subscription_count() > 0:
            self._frames_sent += 1
        if self.fault != "tf_stops" or self._frames_sent <= TF_STOPS_AFTER:
            self.tf_pub.publish(TFMessage(transforms=[_transform(self.map_frame, self.base_frame, header_stamp, T_base)]))
        frame = view.frame
        depth = frame.depth
        if self.fault == "depth_half_size":
            depth = cv2.resize(depth, (depth.shape[1] // 2, depth.shape[0] // 2), interpolation=cv2.INTER_NEAREST)
        self.color_pub.publish(image_msg(frame.color, "bgr8", header_stamp, self.camera_frame))
        # 16UC1 millimetres, as an OpenNI camera's depth_registered/image_raw (half the bytes of 32FC1)
        millimetres = np.clip(np.round(depth * 1000.0), 0, 65535).astype(np.uint16)
        self.depth_pub.publish(image_msg(millimetres, "16UC1", header_stamp, self.camera_frame))
        if self.fault != "no_camera_info":
            self.info_pub.publish(camera_info_msg(self.robot.camera, header_stamp, self.camera_frame))

    # -- skills ---------------------------------------------------------------------------------

    def on_skill(self, handle: ServerGoalHandle) -> Skill.Result:
        goal = handle.request
        result = Skill.Result()
        if goal.skill not in SKILLS:
            handle.abort()
            result.success, result.error_code = False, "unknown_skill"
            result.error_message = f"unknown skill {goal.skill!r} (known: {', '.join(SKILLS)})"
            return result
        deadline = time.monotonic() + self.skill_delay_s
        while time.monotonic() < deadline:
            if handle.is_cancel_requested:
                handle.canceled()
                result.success, result.error_message, result.error_code = False, "cancelled", "cancelled"
                return result
            time.sleep(0.02)
        with self._lock:
            if self._keep_scanning or self._pending_poses:  # stop looking around: there is work
                self._keep_scanning = False
                self._pending_poses = []
                if self._scan:
                    self.robot.T_world_base = self._scan[0]
            outcome = self.robot.execute(SkillRequest(goal.skill, goal.object_id, goal.target_id))
        self.get_logger().info(f"{goal.skill}({goal.object_id}): "
                               f"{'ok' if outcome.success else outcome.error_message}")
        result.success, result.error_message, result.error_code = (outcome.success, outcome.error_message,
                                                                   outcome.error_code)
        handle.succeed()
        return result


def _transform(parent: str, child: str, stamp: Any, T: np.ndarray) -> TransformStamped:
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, parent, child
    x, y, z, qx, qy, qz, qw = g.to_xyz_quat(T)
    t, q = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z, q.x, q.y, q.z, q.w = x, y, z, qx, qy, qz, qw
    return msg


def _time_msg(stamp: float) -> Any:
    from builtin_interfaces.msg import Time

    sec = int(stamp // 1)
    return Time(sec=sec, nanosec=int(round((stamp - sec) * 1e9)) % 1_000_000_000)


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(SyntheticRobotNode, args, name="synthetic_robot", num_threads=4, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
