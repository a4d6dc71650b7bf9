"""The simulated Fetch on ROS 2: the interfaces a real Fetch (with Nav2) offers, served from physics.

- actions: `navigate_to_pose` (nav2_msgs/NavigateToPose), `arm_with_torso_controller/`,
  `arm_controller/`, `torso_controller/` and `head_controller/follow_joint_trajectory`
  (control_msgs/FollowJointTrajectory), `head_controller/point_head` (control_msgs/PointHead),
  `gripper_controller/gripper_action` (control_msgs/GripperCommand)
- topics: `/clock` (simulated time), `/tf` and `/tf_static` (map -> odom -> base_link -> every
  link down to head_camera_rgb_optical_frame and gripper_link), `/joint_states`,
  `/robot_description` (latched URDF), the head camera's `head_camera/rgb/image_raw` (rgb8),
  `head_camera/depth_registered/image_raw` (32FC1, metres, registered to colour),
  `head_camera/rgb/camera_info` and `head_camera/depth_registered/camera_info`, rendered by MuJoCo
- `sim/status` (std_msgs/String, JSON, latched): simulated time, real-time factor, goals per
  interface, assists, and the completion measure from the physics. For scoring a run only; the
  stack's perception never reads it.
- `sim/ground_truth` (std_msgs/String, JSON, latched, every GROUND_TRUTH_EVERY_S simulated):
  where every object, place volume, handle and door is (sim/ground_truth.py). For tests, the
  skills check and a run's diagnosis log only; a robot has no such topic.

One thread steps the physics (paced to `real_time_factor` times the wall clock; 0: as fast as it
goes) and publishes; the action callbacks start and watch goals under the same lock.
"""
from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from task_learning.world.camera_model import CameraModel
from task_learning_nodes.plumbing.camera_topics import camera_info_msg, image_msg
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param
from task_learning_nodes.plumbing.qos import latched
from task_learning_sim.completion import physics_completion
from task_learning_sim.fetch_model import ROOT_LINK
from task_learning_sim.ground_truth import ground_truth
from task_learning_sim.ros_actions import ActionServers
from task_learning_sim.ros_convert import joint_state, stamp, transform, yaw_quaternion
from task_learning_sim.simulator import Simulator
from task_learning_sim.urdf import fetch_urdf

if TYPE_CHECKING:
    from task_learning_sim.scene_world import SceneWorld

CAMERA = "head_camera_rgb"
CAMERA_FRAME = "head_camera_rgb_optical_frame"
CAMERA_FOV_DEG = 50.0  # the model's head camera (fovy)
CLOCK_EVERY_S = 0.01
STATUS_EVERY_S = 1.0
GROUND_TRUTH_EVERY_S = 0.25


class SimParameters(NodeParameters):
    scene: str = param("store_groceries", "the scene file (config/scenes/<name>.yaml, or a path) built in physics")
    robot: str = param("fetch", "the simulated robot", choices=("fetch",))
    real_time_factor: float = param(1.0, "simulated seconds per wall second at most (0: as fast as it goes)",
                                    min=0.0, max=100.0)
    state_rate_hz: float = param(50.0, "/joint_states and /tf per simulated second", min=1.0, max=200.0)
    camera_rate_hz: float = param(2.0, "head camera frames per simulated second (0: no camera)", min=0.0, max=30.0)
    camera_width: int = param(640, "head camera image width (px)", min=16, max=1920)
    camera_height: int = param(480, "head camera image height (px)", min=16, max=1080)
    grasp_weld: bool = param(False, "the grasp weld assist: what both fingers pinch is welded to the gripper")


class SimNode(Node):
    """The simulator and its ROS interfaces (see the module docstring)."""

    executor_threads = 8  # one per action that may run at once, and the topics

    def __init__(self, world: SceneWorld | None = None) -> None:
        super().__init__("fetch_sim")
        self.params = declare_parameters(self, SimParameters)
        if world is None:
            from task_learning.world.scene import load_scene
            from task_learning_sim.scene_world import build_world
            world = build_world(load_scene(self.params.scene))
        self.sim = Simulator(world, grasp_weld=self.params.grasp_weld)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.wall_started = time.monotonic()
        self.frames = 0  # head camera frames published
        self.camera = CameraModel.from_fov(self.params.camera_width, self.params.camera_height, CAMERA_FOV_DEG)
        self._make_publishers()
        self.actions = ActionServers(self)
        self._static_tf()
        self.robot_description.publish(String(data=fetch_urdf(self.sim.model)))
        self._thread = threading.Thread(target=self._physics, name="physics", daemon=True)
        self._thread.start()
        self.get_logger().info(f"simulated Fetch in scene {world.scene.name}: {len(world.items)} objects, "
                               f"{len(world.receptacles)} pieces of furniture")

    def _make_publishers(self) -> None:
        images = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
        tf_static = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                               durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
        self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", tf_static)
        self.joint_pub = self.create_publisher(JointState, "joint_states", 10)
        self.robot_description = self.create_publisher(String, "robot_description", latched())
        self.status_pub = self.create_publisher(String, "sim/status", latched())
        self.truth_pub = self.create_publisher(String, "sim/ground_truth", latched())
        self.rgb_pub = self.create_publisher(Image, "head_camera/rgb/image_raw", images)
        self.depth_pub = self.create_publisher(Image, "head_camera/depth_registered/image_raw", images)
        self.rgb_info_pub = self.create_publisher(CameraInfo, "head_camera/rgb/camera_info", images)
        self.depth_info_pub = self.create_publisher(CameraInfo, "head_camera/depth_registered/camera_info", images)

    def _static_tf(self) -> None:
        """map -> odom (the simulated odometry does not drift) and every fixed joint of the robot."""
        when = stamp(self.sim.time)
        static = [transform("map", "odom", (0, 0, 0), (0, 0, 0, 1), when)]
        model = self.sim.model
        static += [transform(parent, child, t, q, when) for parent, child, t, q in self.sim.link_transforms()
                   if int(model.body_jntnum[model.body(child).id]) == 0]
        self.tf_static_pub.publish(TFMessage(transforms=static))

    def _dynamic_tf(self) -> TFMessage:
        when = stamp(self.sim.time)
        x, y, yaw = self.sim.base_pose()
        moving = [transform("odom", ROOT_LINK, (x, y, 0.0), yaw_quaternion(yaw), when)]
        model = self.sim.model
        moving += [transform(parent, child, t, q, when) for parent, child, t, q in self.sim.link_transforms()
                   if int(model.body_jntnum[model.body(child).id]) > 0]
        return TFMessage(transforms=moving)

    # ---- the physics thread ----------------------------------------------------------------------
    def _physics(self) -> None:
        renderer = None
        try:
            if self.params.camera_rate_hz > 0:
                renderer = mujoco.Renderer(self.sim.model, self.params.camera_height, self.params.camera_width)
            self._loop(renderer)
        except Exception as exc:  # noqa: BLE001 - said once, then the node stops serving motion
            self.get_logger().error(f"physics stopped: {exc!r}")
            self.stopping.set()
        finally:
            if renderer is not None:
                renderer.close()  # before the interpreter's exit tears EGL down

    def _loop(self, renderer: mujoco.Renderer | None) -> None:
        next_state = next_camera = next_status = next_truth = 0.0
        sim_started = self.sim.time
        steps = max(1, int(round(CLOCK_EVERY_S / self.sim.model.opt.timestep)))
        while not self.stopping.is_set():
            with self.lock:
                self.sim.step(steps)
                now = self.sim.time
                self.clock_pub.publish(Clock(clock=stamp(now)))
                if now >= next_state:
                    next_state = now + 1.0 / self.params.state_rate_hz
                    self.joint_pub.publish(joint_state(*self.sim.joint_state(), stamp(now)))
                    self.tf_pub.publish(self._dynamic_tf())
                if renderer is not None and now >= next_camera:
                    next_camera = now + 1.0 / self.params.camera_rate_hz
                    self._render(renderer, now)
                if now >= next_status:
                    next_status = now + STATUS_EVERY_S
                    self.status_pub.publish(String(data=json.dumps(self.status())))
                if now >= next_truth:
                    next_truth = now + GROUND_TRUTH_EVERY_S
                    self.truth_pub.publish(String(data=json.dumps(ground_truth(self.sim))))
            self._pace(now - sim_started)

    def _pace(self, simulated: float) -> None:
        if self.params.real_time_factor <= 0:
            return
        ahead = simulated / self.params.real_time_factor - (time.monotonic() - self.wall_started)
        if ahead > 0:
            self.stopping.wait(ahead)

    def _render(self, renderer: mujoco.Renderer, now: float) -> None:
        when = stamp(now)
        renderer.update_scene(self.sim.data, CAMERA)
        rgb = renderer.render()
        renderer.enable_depth_rendering()
        renderer.update_scene(self.sim.data, CAMERA)
        depth = renderer.render().astype(np.float32)
        renderer.disable_depth_rendering()
        info = camera_info_msg(self.camera, when, CAMERA_FRAME)
        self.rgb_pub.publish(image_msg(rgb, "rgb8", when, CAMERA_FRAME))
        self.depth_pub.publish(image_msg(depth, "32FC1", when, CAMERA_FRAME))
        self.rgb_info_pub.publish(info)
        self.depth_info_pub.publish(info)
        self.frames += 1

    def status(self) -> dict[str, Any]:
        """What a run reports of the simulation (call with the lock held)."""
        wall = time.monotonic() - self.wall_started
        return {"sim_time_s": round(self.sim.time, 3), "wall_time_s": round(wall, 3),
                "real_time_factor": round(self.sim.time / wall, 3) if wall > 0 else 0.0,
                "robot_goals": dict(self.sim.goal_counts), "assists": dict(self.sim.assists.counts),
                "camera_frames": self.frames,
                "completion": physics_completion(self.sim.world, self.sim.model, self.sim.data).to_dict()}

    def stop_work(self) -> None:
        """End the physics thread and the goals in flight (run_node calls it at shutdown)."""
        self.stopping.set()
        self._thread.join(timeout=5.0)
