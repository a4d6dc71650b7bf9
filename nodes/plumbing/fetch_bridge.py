"""The ROS side of the `fetch` backend (perception node with backend:=fetch): head camera topics
in, skill goals out. The core (detection, belief, FetchWorld) is `task_learning.perception`.

- Colour, depth and camera info are synchronised by stamp (`ApproximateSync`, slop
  `sync_slop_s`; message_filters is not installable from PyPI). The base pose is the
  `base_pose_topic` message (geometry_msgs/PoseWithCovarianceStamped, e.g. AMCL's) closest to the
  images' stamp within `pose_tolerance_s` (images wait for a pose that has not come yet, as a tf
  lookup would); empty topic: the base is the world origin (a robot that does not drive).
- The camera-to-base transform is the static parameter `camera_to_base` ([x, y, z, qx, qy, qz, qw]
  of the optical frame in base_link): tf2 is not installable here; on a ROS install read it once
  from /tf with tf2_ros and pass it in.
- Skills go to the `skill_action` server (task_learning_interfaces/action/Skill); a server that is
  not there within `skill_server_wait_s`, or a goal not done within `skill_timeout_s` (then
  cancelled), is a failed action with that reason.
Every problem is one line in WorldState.status; the node keeps running.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np
from task_learning_nodes.plumbing.node_base import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from geometry_msgs.msg import PoseWithCovarianceStamped
from sensor_msgs.msg import CameraInfo, Image
from task_learning.errors import TaskLearningError
from task_learning.perception import geometry as g
from task_learning.perception.bag import closest_pose
from task_learning.perception.bridge import FetchWorld
from task_learning.camera_model import CameraModel
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.images import image_to_array, to_bgr, to_metres
from task_learning.perception.registry import load_registry
from task_learning.perception.skills import SkillRequest, SkillResult
from task_learning.perception.sync import ApproximateSync
from task_learning.world.catalog import load_object_types
from task_learning.world.scene import Scene
from task_learning_interfaces.action import Skill

from task_learning_nodes.plumbing.fetch_params import FetchParameters
from task_learning_nodes.plumbing.params import declare_parameters


def stamp_of(header: Any) -> float:
    return float(header.stamp.sec) + float(header.stamp.nanosec) * 1e-9


class RosSkillClient:
    """SkillClient over the Skill action; never raises, never reports an unconfirmed success."""

    def __init__(self, node: Node, action: str, *, server_wait_s: float, timeout_s: float) -> None:
        self._node = node
        self.action = action
        self.server_wait_s = server_wait_s
        self.timeout_s = timeout_s
        self._client = ActionClient(node, Skill, action, callback_group=ReentrantCallbackGroup())

    def execute(self, request: SkillRequest) -> SkillResult:
        what = f"{request.skill}({request.object_id}{', ' + request.target_id if request.target_id else ''})"
        if not self._client.wait_for_server(timeout_sec=self.server_wait_s):
            return SkillResult(False, f"skill server '{self.action}' is not available (no action server "
                               f"within {self.server_wait_s:g} s); {what} not sent", "skill_server_down")
        timeout = request.timeout_s if 0 < request.timeout_s < self.timeout_s else self.timeout_s
        goal = Skill.Goal(skill=request.skill, object_id=request.object_id, target_id=request.target_id,
                          timeout_s=float(timeout))
        done = threading.Event()
        box: dict[str, Any] = {}

        def on_result(future: Any) -> None:
            box["result"] = future.result()
            done.set()

        def on_goal(future: Any) -> None:
            try:
                handle = future.result()
            except Exception as exc:  # transport failure
                box["error"] = repr(exc)
                done.set()
                return
            box["handle"] = handle
            if not handle.accepted:
                box["error"] = "the skill server rejected the goal"
                done.set()
                return
            handle.get_result_async().add_done_callback(on_result)

        self._client.send_goal_async(goal).add_done_callback(on_goal)
        if not done.wait(timeout):
            handle = box.get("handle")
            if handle is not None:
                handle.cancel_goal_async()
            return SkillResult(False, f"skill {what} timed out after {timeout:g} s (goal cancelled)",
                               "skill_timeout")
        if "error" in box:
            return SkillResult(False, f"skill {what}: {box['error']}", "skill_rejected")
        wrapped = box["result"]
        result = wrapped.result
        from action_msgs.msg import GoalStatus

        if wrapped.status != GoalStatus.STATUS_SUCCEEDED and not result.error_message:
            return SkillResult(False, f"skill {what} ended with status {wrapped.status}", "skill_aborted")
        return SkillResult(bool(result.success) and wrapped.status == GoalStatus.STATUS_SUCCEEDED,
                           str(result.error_message), str(result.error_code))


class FetchFrontend:
    """Declares the fetch parameters on `node`, builds the FetchWorld, feeds it camera frames."""

    def __init__(self, node: Node, scene: Scene | None, robot: Any = None) -> None:
        """`robot`: a RobotSkillsFrontend (nodes/robot/frontend.py) to act through the robot's
        standard interfaces; None: the Skill action adapter (the synthetic robot serves it)."""
        self.node = node
        params = declare_parameters(node, FetchParameters)  # ranges and choices checked here
        try:
            self.T_base_camera = g.from_xyz_quat([float(v) for v in params.camera_to_base])
        except ValueError as exc:
            raise ValueError(f"parameter camera_to_base: {exc}") from None
        registry_path = params.marker_registry.strip()
        if registry_path:
            types = dict(load_object_types())
            if scene is not None:
                types.update(scene.types)
            registry = load_registry(registry_path, known_types=types)
        elif params.synthetic and scene is not None:
            from task_learning.perception.synthetic import SyntheticLayout

            registry = SyntheticLayout.of(scene).registry()
        else:
            raise TaskLearningError("backend fetch needs parameter marker_registry (a YAML file mapping marker "
                                    "ids to objects) or synthetic:=true")
        if params.marker_dictionary.strip():
            registry.dictionary = params.marker_dictionary.strip()
        from task_learning.perception.detect import MarkerDetector

        try:
            detector = MarkerDetector(registry)
        except ValueError as exc:
            raise ValueError(f"parameter marker_dictionary: {exc}") from None
        self.pose_tolerance_s = params.pose_tolerance_s
        self._pending: tuple[Image, Image, CameraInfo] | None = None
        self.skills: Any = None if robot is not None else RosSkillClient(
            node, params.skill_action, server_wait_s=params.skill_server_wait_s, timeout_s=params.skill_timeout_s)
        self.world = FetchWorld(registry, self.skills, scene=scene, max_age_s=params.max_frame_age_s,
                                frame_timeout_s=params.frame_timeout_s,
                                half_life_s=params.belief_half_life_s, block_after_s=params.block_after_s,
                                detector=detector)
        if robot is not None:
            from task_learning.robot.belief_view import BeliefView

            self.skills = self.world.skills = robot.executor(BeliefView(self.world))
        self.topics = {k: str(getattr(params, k)) for k in ("color_topic", "depth_topic", "camera_info_topic", "base_pose_topic")}
        self.sync = ApproximateSync(["color", "depth", "info"], slop_s=max(params.sync_slop_s, 1e-3))
        self._poses: deque[tuple[float, np.ndarray]] = deque(maxlen=200)
        self._pose_lock = threading.Lock()
        self._color_count = 0
        qos_name = params.image_qos
        # keep only the newest frames: a bridge that falls behind skips frames rather than using
        # ones that went stale in a queue
        qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.BEST_EFFORT if qos_name == "sensor_data"
                         else ReliabilityPolicy.RELIABLE)
        frames = MutuallyExclusiveCallbackGroup()
        node.create_subscription(Image, self.topics["color_topic"], lambda m: self._on("color", m), qos,
                                 callback_group=frames)
        node.create_subscription(Image, self.topics["depth_topic"], lambda m: self._on("depth", m), qos,
                                 callback_group=frames)
        node.create_subscription(CameraInfo, self.topics["camera_info_topic"], lambda m: self._on("info", m), qos,
                                 callback_group=frames)
        if self.topics["base_pose_topic"]:
            node.create_subscription(PoseWithCovarianceStamped, self.topics["base_pose_topic"], self._on_pose,
                                     QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE),
                                     callback_group=frames)
        node.create_timer(0.5, self._watch, callback_group=frames)
        node.get_logger().info(f"fetch bridge: {len(registry.markers)} registered objects ({registry.dictionary}), "
                               f"camera {self.topics['color_topic']}, "
                               + (f"robot {robot.profile.name}" if robot is not None else f"skills on '{params.skill_action}'"))

    # -- subscriptions --------------------------------------------------------------------------

    def _on_pose(self, msg: PoseWithCovarianceStamped) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        try:
            T = g.from_xyz_quat([p.x, p.y, p.z, q.x, q.y, q.z, q.w])
        except ValueError as exc:
            self.world.report_problem(f"bad base pose on {self.topics['base_pose_topic']}: {exc}", lasting=False)
            return
        stamp = stamp_of(msg.header)
        with self._pose_lock:
            self._poses.append((stamp, T))
        pending = self._pending
        if pending is not None and stamp >= stamp_of(pending[0].header) - self.pose_tolerance_s:
            self._pending = None
            self._use(*pending)

    def base_at(self, stamp: float) -> np.ndarray | None:
        """T_world_base at `stamp`: the pose closest in time within `pose_tolerance_s`."""
        if not self.topics["base_pose_topic"]:
            return np.eye(4)
        with self._pose_lock:
            return closest_pose(list(self._poses), stamp, self.pose_tolerance_s)

    def newest_pose_stamp(self) -> float:
        with self._pose_lock:
            return max((s for s, _ in self._poses), default=float("-inf"))

    def _on(self, stream: str, msg: Any) -> None:
        if stream == "color":
            self._color_count += 1
        matched = self.sync.add(stream, stamp_of(msg.header), msg)
        if matched is not None:
            self._use(matched["color"][1], matched["depth"][1], matched["info"][1])

    def _watch(self) -> None:
        """Name a stream that never arrived while colour images do (e.g. no camera info)."""
        if self._color_count >= 3:
            missing = [s for s in self.sync.missing() if s != "color"]
            if missing:
                names = {"depth": self.topics["depth_topic"], "info": self.topics["camera_info_topic"]}
                what = {"depth": "no depth images", "info": "no camera info"}
                self.world.report_problem("; ".join(f"{what[s]} on {names[s]}" for s in missing)
                                          + " (colour images arrive)")

    def _use(self, color: Image, depth: Image, info: CameraInfo) -> None:
        stamp = stamp_of(color.header)
        try:
            camera = CameraModel.from_k(int(info.width), int(info.height), list(info.k), list(info.d))
        except ValueError as exc:
            self.world.report_problem(f"unusable camera info on {self.topics['camera_info_topic']}: {exc}")
            return
        try:
            bgr = to_bgr(image_to_array(color.encoding, color.height, color.width, color.step, color.data,
                                        color.is_bigendian), color.encoding)
            metres = to_metres(image_to_array(depth.encoding, depth.height, depth.width, depth.step, depth.data,
                                              depth.is_bigendian), depth.encoding)
        except ValueError as exc:
            self.world.report_problem(f"unusable image: {exc}")
            return
        base = self.base_at(stamp)
        if base is None and self.newest_pose_stamp() < stamp:
            self._pending = (color, depth, info)  # the pose for these images may still come
            return
        T_world_camera = base @ self.T_base_camera if base is not None else None
        problem = self.world.process(RGBDFrame(bgr, metres, camera, stamp, T_world_camera), T_world_base=base)
        if problem and base is None and problem.startswith("no camera pose"):
            self.world.report_problem(f"no base pose on {self.topics['base_pose_topic']} within "
                                      f"{self.pose_tolerance_s:g} s of the images (stamp {stamp:.3f})")
        elif problem:
            self.node.get_logger().warning(problem, throttle_duration_sec=5.0)
