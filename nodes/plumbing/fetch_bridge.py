"""The ROS side of the `fetch` backend (perception node with backend:=fetch): head camera topics
in, skill goals out. The core (detection, belief, FetchWorld) is `task_learning.perception`.

- Colour, depth and camera info are synchronised by stamp (`ApproximateSync`, slop
  `sync_slop_s`; message_filters is not installable from PyPI).
- Poses come from tf (task_learning.transforms, fed by plumbing/tf_listener.py): `map_frame` ->
  the colour image's frame_id (the camera's optical frame) and `map_frame` -> `base_frame`, each
  looked up at the images' stamp. A frame set whose transforms cannot be looked up yet waits up to
  `tf_wait_s` (as tf2's message filter would), then is skipped with the lookup's reason (which
  frames, the stamp, the range tf has) in the status.
- Time is the node clock (sim time under use_sim_time): FetchWorld's ages and staleness use it.
- Skills go to the `skill_action` server (task_learning_interfaces/action/Skill); a server that is
  not there within `skill_server_wait_s`, or a goal not done within `skill_timeout_s` (then
  cancelled), is a failed action with that reason.
Every problem is one line in WorldState.status; the node keeps running.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from sensor_msgs.msg import CameraInfo, Image

from task_learning.errors import TaskLearningError
from task_learning.perception.bridge import FetchWorld
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.images import image_to_array, to_bgr, to_metres
from task_learning.perception.registry import MarkerRegistry, load_registry
from task_learning.perception.skills import SkillClient, SkillRequest, SkillResult
from task_learning.perception.sync import ApproximateSync
from task_learning.transforms import TransformUnavailable
from task_learning.world.camera_model import CameraModel
from task_learning.world.catalog import load_object_types
from task_learning.world.scene import Scene
from task_learning_interfaces.action import Skill
from task_learning_nodes.plumbing.fetch_params import FetchParameters
from task_learning_nodes.plumbing.node_base import ActionClient, result_of
from task_learning_nodes.plumbing.params import declare_parameters
from task_learning_nodes.plumbing.tf_listener import TfListener, stamp_ns

if TYPE_CHECKING:
    from task_learning_nodes.robot.frontend import RobotSkillsFrontend


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

        def on_result(future: Future) -> None:
            box["result"] = result_of(future)
            done.set()

        def on_goal(future: Future) -> None:
            try:
                handle = result_of(future)
            except Exception as exc:  # noqa: BLE001 - transport failure
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

    def __init__(self, node: Node, scene: Scene | None, robot: RobotSkillsFrontend | None = None) -> None:
        """`robot`: a RobotSkillsFrontend (nodes/robot/frontend.py) to act through the robot's
        standard interfaces; None: the Skill action adapter (the synthetic robot serves it)."""
        self.node = node
        params = declare_parameters(node, FetchParameters)  # ranges and choices checked here
        registry = _registry(params, scene)
        from task_learning.perception.detect import MarkerDetector

        try:
            detector = MarkerDetector(registry)
        except ValueError as exc:
            raise ValueError(f"parameter marker_dictionary: {exc}") from None
        self.map_frame, self.base_frame = params.map_frame.strip(), params.base_frame.strip()
        self.tf_wait_s = params.tf_wait_s
        self.tf = TfListener(node)
        self._pending: tuple[Image, Image, CameraInfo, float] | None = None
        self._pending_lock = threading.Lock()
        self.skills: SkillClient | None = None if robot is not None else RosSkillClient(
            node, params.skill_action, server_wait_s=params.skill_server_wait_s, timeout_s=params.skill_timeout_s)
        object_detector = None
        if params.detector_weights.strip():
            from task_learning.perception.objects import load_onnx_detector

            object_detector = load_onnx_detector(params.detector_weights.strip(), params.detector_labels.strip())
        self.world = FetchWorld(registry, self.skills, scene=scene, max_age_s=params.max_frame_age_s,
                                frame_timeout_s=params.frame_timeout_s,
                                half_life_s=params.belief_half_life_s, block_after_s=params.block_after_s,
                                clock=self.now_s, detector=detector, frame_id=self.map_frame,
                                object_detector=object_detector, min_object_score=params.detector_min_score)
        if robot is not None:
            from task_learning.robot.belief_view import BeliefView

            self.skills = self.world.skills = robot.executor(BeliefView(self.world))
        self.topics = {k: str(getattr(params, k)) for k in ("color_topic", "depth_topic", "camera_info_topic")}
        self.sync = ApproximateSync(["color", "depth", "info"], slop_s=max(params.sync_slop_s, 1e-3))
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
        node.create_timer(0.5, self._watch, callback_group=frames)
        node.create_timer(0.05, self._retry_pending, callback_group=frames)
        node.get_logger().info(f"fetch bridge: {len(registry.markers)} registered objects ({registry.dictionary}), "
                               f"camera {self.topics['color_topic']}, poses from tf in '{self.map_frame}', "
                               + (f"robot {robot.profile.name}" if robot is not None else f"skills on '{params.skill_action}'"))

    def now_s(self) -> float:
        """The node clock in seconds (sim time under use_sim_time)."""
        return float(self.node.get_clock().now().nanoseconds) * 1e-9

    # -- subscriptions --------------------------------------------------------------------------

    def _on(self, stream: str, msg: Any) -> None:
        if stream == "color":
            self._color_count += 1
        matched = self.sync.add(stream, stamp_of(msg.header), msg)
        if matched is not None:
            self._use(matched["color"][1], matched["depth"][1], matched["info"][1], time.monotonic())

    def _watch(self) -> None:
        """Name a stream that never arrived while colour images do (e.g. no camera info)."""
        if self._color_count >= 3:
            missing = [s for s in self.sync.missing() if s != "color"]
            if missing:
                names = {"depth": self.topics["depth_topic"], "info": self.topics["camera_info_topic"]}
                what = {"depth": "no depth images", "info": "no camera info"}
                self.world.report_problem("; ".join(f"{what[s]} on {names[s]}" for s in missing)
                                          + " (colour images arrive)")

    def _retry_pending(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            self._use(*pending)

    def poses_at(self, camera_frame: str, stamp_ns: int) -> tuple[Any, Any] | str:
        """(T_map_camera, T_map_base) at `stamp_ns` from tf, or why not (one line)."""
        try:
            T_map_camera = self.tf.buffer.lookup(self.map_frame, camera_frame, stamp_ns).matrix
            T_map_base = self.tf.buffer.lookup(self.map_frame, self.base_frame, stamp_ns).matrix
        except TransformUnavailable as exc:
            return f"tf: {exc}"
        return T_map_camera, T_map_base

    def _use(self, color: Image, depth: Image, info: CameraInfo, first_tried: float) -> None:
        stamp = stamp_of(color.header)
        camera_frame = color.header.frame_id.strip().lstrip("/")
        if not camera_frame:
            self.world.report_problem(f"images on {self.topics['color_topic']} have no frame_id: the camera's "
                                      "frame in tf is unknown", lasting=True)
            return
        poses = self.poses_at(camera_frame, stamp_ns(color.header.stamp))
        if isinstance(poses, str):
            if time.monotonic() - first_tried < self.tf_wait_s:
                # tf for this stamp (or the camera's static mount, at start) may still come; a newer
                # frame set replaces this one
                with self._pending_lock:
                    self._pending = (color, depth, info, first_tried)
                return
            self.world.report_problem(f"frame at {stamp:.3f} s skipped: {poses}", lasting=False)
            return
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
        T_map_camera, T_map_base = poses
        problem = self.world.process(RGBDFrame(bgr, metres, camera, stamp, T_map_camera), T_world_base=T_map_base)
        if problem:
            self.node.get_logger().warning(problem, throttle_duration_sec=5.0)


def _registry(params: FetchParameters, scene: Scene | None) -> MarkerRegistry:
    """The marker registry: the file `marker_registry`, or the simulated robot's with synthetic."""
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
    return registry
