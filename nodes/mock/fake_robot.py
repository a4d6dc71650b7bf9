"""fake_robot: every standard server a robot profile names, served by stand-ins (no physics).

- Nav2 stand-in: NavigateToPose on the profile's `navigate_action` drives the base in a straight
  line at `base_speed_mps` (turning on the way), publishing the base on /tf (`odom` ->
  `base_link`, with `map` -> `odom` fixed on /tf_static) and NavigateToPose feedback;
- controllers: FollowJointTrajectory for the arm, head, torso and (trajectory mode) gripper,
  GripperCommand (command mode), PointHead (when the profile has one), a MoveGroup stand-in
  (arm mode moveit); joint positions move to the goal's final point over `goal_duration_s` and
  are published on /joint_states;
- /clock (rosgraph_msgs/Clock) when `publish_clock` is true: simulated time from 0, at
  `real_time_factor` times the wall clock (start the others with use_sim_time:=true);
- every server honours cancel within one control tick (`tick_s`), and `fail` injects failures:
  comma-separated `part:result`, part one of navigate, arm, head, torso, gripper, point_head,
  move_group; result a code to return (NavigateToPose error_code, FollowJointTrajectory
  error_code, MoveItErrorCodes), `reject`, `abort` (no code), or for the gripper `miss` (closes
  on nothing) and `stall` (stops at `object_width_m`: holding, the default when closing);
- every goal received and every cancel is published as JSON on `fake_robot/events` (what the
  contract tests compare with the core's goals);
- `robot_description_file`: a URDF published on the profile's `robot_description_topic`
  (latched), for profiles whose arm runs on the stack's IK.
"""
from __future__ import annotations

import json
import math
import threading
import time
from typing import Any, Callable

from geometry_msgs.msg import TransformStamped
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from task_learning.lifecycle.signals import StopSignals
from task_learning.robot.goals import GripperGoal, MoveGroupGoal, NavigateGoal, PointHeadGoal, TrajectoryGoal
from task_learning.robot.profile import RobotProfile, load_profile
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param
from task_learning_nodes.robot.messages import action_type, goal_from_msg

PARTS = ("navigate", "arm", "head", "torso", "gripper", "point_head", "move_group")
EVENTS_QOS = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Parameters(NodeParameters):
    robot: str = param("fetch", "robot profile under config/robots/ (or a path)")
    fail: str = param("", "failures to inject: part:result[,part:result] (see the module docstring); settable "
                      "while running", read_only=False)
    goal_duration_s: float = param(0.3, "how long an arm, head, torso or gripper goal takes", min=0.0, max=3600.0)
    base_speed_mps: float = param(1.0, "the base's speed toward a NavigateToPose goal", min=0.001, max=100.0)
    tick_s: float = param(0.05, "control period: motion, feedback, tf and cancel checks", min=0.005, max=1.0)
    publish_clock: bool = param(False, "publish /clock (simulated time from 0)")
    real_time_factor: float = param(1.0, "simulated seconds per wall second on /clock", min=0.01, max=100.0)
    object_width_m: float = param(0.04, "where a closing gripper stalls on an object", min=0.0, max=1.0)
    start_x: float = param(0.0, "the base's start in map, m", min=-1000.0, max=1000.0)
    start_y: float = param(0.0, "the base's start in map, m", min=-1000.0, max=1000.0)
    start_yaw: float = param(0.0, "the base's start heading, rad", min=-7.0, max=7.0)
    robot_description_file: str = param("", "a URDF file published (latched) on the profile's robot "
                                        "description topic, as robot_state_publisher does; '' = none")


def parse_failures(text: str) -> dict[str, str]:
    """`navigate:206,arm:-4` as {part: result}; ValueError naming a bad entry."""
    out: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        part, _, result = entry.partition(":")
        if part not in PARTS or not result:
            raise ValueError(f"parameter fail: {entry!r} is not part:result with part one of {', '.join(PARTS)}")
        out[part] = result
    return out


class FakeRobot(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("fake_robot", **kwargs)
        params = declare_parameters(self, Parameters)
        self.profile: RobotProfile = load_profile(params.robot)
        self.params = params
        failures = parse_failures(params.fail)
        self.lock = threading.Lock()
        self.base = [params.start_x, params.start_y, params.start_yaw]
        self.joints: dict[str, float] = {}
        self.sim_time = 0.0
        self.events = self.create_publisher(String, "fake_robot/events", EVENTS_QOS)
        self.tf = self.create_publisher(_tf_type(), "/tf", QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.tf_static = self.create_publisher(_tf_type(), "/tf_static", STATIC_QOS)
        self.joint_pub = self.create_publisher(JointState, "/joint_states", 10)
        if params.publish_clock:
            from rosgraph_msgs.msg import Clock

            self.clock_pub = self.create_publisher(Clock, "/clock", 10)
            self._wall0 = time.monotonic()
            # on the steady clock: a timer on the node's clock would wait, under use_sim_time, for
            # the /clock it is to publish
            from rclpy.clock import Clock as RclClock
            from rclpy.clock import ClockType

            self.create_timer(0.01, self._publish_clock, callback_group=MutuallyExclusiveCallbackGroup(),
                              clock=RclClock(clock_type=ClockType.STEADY_TIME))
        self._publish_static()
        if params.robot_description_file:
            from pathlib import Path

            self.description = self.create_publisher(String, self.profile.robot_description_topic, STATIC_QOS)
            self.description.publish(String(data=Path(params.robot_description_file).read_text()))
        self.create_timer(params.tick_s, self._publish_state, callback_group=MutuallyExclusiveCallbackGroup())
        self._servers: list[ActionServer] = []
        for goal, part in self._goals_to_serve():
            self._serve(goal, part)
        self.get_logger().info(f"fake {self.profile.name}: {len(self._servers)} servers, "
                               f"failures {failures or 'none'}")

    # -- what to serve ---------------------------------------------------------------------------

    def _goals_to_serve(self) -> list[tuple[Any, str]]:
        """One example goal per server (its type and name), with the part it moves."""
        p = self.profile
        goals: list[tuple[Any, str]] = [(NavigateGoal(p.base.navigate_action, "map", (0, 0, 0), 0, 1), "navigate")]
        trajectories = {p.head.trajectory_action: "head", p.arm.trajectory_action: "arm"}
        if p.torso is not None:
            trajectories.setdefault(p.torso.trajectory_action, "torso")
        if p.gripper.mode == "trajectory":
            trajectories.setdefault(p.gripper.action, "gripper")
        for server, part in trajectories.items():
            goals.append((TrajectoryGoal(server, (), (), 1, "arm"), part))
        if p.gripper.mode == "command":
            goals.append((GripperGoal(p.gripper.action, 0, 0, 1), "gripper"))
        if p.head.point_head_action:
            goals.append((PointHeadGoal(p.head.point_head_action, "map", (0, 0, 0), "", (0, 0, 1), 0, 1), "point_head"))
        if p.arm.mode == "moveit":
            goals.append((MoveGroupGoal(p.arm.move_group_action, "", "", "", (0, 0, 0), (0, 0, 0, 1), 0, 0, 1),
                          "move_group"))
        return goals

    def _serve(self, example: Any, part: str) -> None:
        kind = example.kind
        execute: dict[str, Callable[[ServerGoalHandle, str], Any]] = {
            "navigate": self._navigate, "trajectory": self._trajectory, "gripper": self._gripper,
            "point_head": self._point_head, "move_group": self._move_group}

        def on_goal(request: Any) -> GoalResponse:
            which = self._part_of(kind, part, request)
            self._event({"event": "goal", "server": example.server, "kind": kind, "part": which,
                         **goal_from_msg(kind, request)})
            if self._injected(which) == "reject":
                return GoalResponse.REJECT
            return GoalResponse.ACCEPT

        def on_cancel(_handle: ServerGoalHandle) -> CancelResponse:
            self._event({"event": "cancel_requested", "server": example.server})
            return CancelResponse.ACCEPT

        server: ActionServer = ActionServer(self, action_type(example), example.server,
                              execute_callback=lambda handle: execute[kind](handle, part),
                              goal_callback=on_goal, cancel_callback=on_cancel,
                              callback_group=ReentrantCallbackGroup())
        self._servers.append(server)

    def _part_of(self, kind: str, part: str, request: Any) -> str:
        """Stretch's one trajectory server moves the head, arm and gripper: the joints say which."""
        if kind != "trajectory":
            return part
        joints = set(request.trajectory.joint_names)
        p = self.profile
        if joints & {p.head.pan_joint, p.head.tilt_joint}:
            return "head"
        if joints & set(p.gripper.joints):
            return "gripper"
        if p.torso is not None and joints == {p.torso.joint}:
            return "torso"
        return "arm" if joints & set(p.arm.joints) else part

    # -- execution ------------------------------------------------------------------------------

    def _event(self, data: dict[str, Any]) -> None:
        data["t"] = time.monotonic()
        self.events.publish(String(data=json.dumps(data, default=list)))

    def _injected(self, part: str) -> str:
        """The failure injected for `part` now (`fail` may be set while the node runs)."""
        return parse_failures(str(self.get_parameter("fail").value)).get(part, "")

    def _run_for(self, handle: ServerGoalHandle, part: str, duration_s: float, step: Callable[[float], None] | None = None) -> bool:
        """Run `step(fraction)` every tick for `duration_s`; False when cancelled (then the goal
        is marked cancelled and the motion stops where it is)."""
        start = time.monotonic()
        while True:
            if handle.is_cancel_requested:
                handle.canceled()
                self._event({"event": "canceled", "part": part})
                return False
            fraction = 1.0 if duration_s <= 0 else min(1.0, (time.monotonic() - start) / duration_s)
            if step is not None:
                step(fraction)
            if fraction >= 1.0:
                return True
            time.sleep(self.params.tick_s)

    def _finish(self, handle: ServerGoalHandle, part: str, result: Any, code_field: str | None) -> Any:
        """Succeed, or fail as injected (a code in `code_field`, or an abort without one)."""
        injected = self._injected(part)
        if injected and injected not in ("reject", "miss", "stall"):
            if injected != "abort" and code_field is not None:
                _set_code(result, code_field, int(injected))
            handle.abort()
            self._event({"event": "aborted", "part": part, "result": injected})
            return result
        handle.succeed()
        self._event({"event": "succeeded", "part": part})
        return result

    def _navigate(self, handle: ServerGoalHandle, part: str) -> Any:
        goal = goal_from_msg("navigate", handle.request)
        with self.lock:
            x0, y0, yaw0 = self.base
        distance = math.hypot(goal["x"] - x0, goal["y"] - y0)
        duration = distance / self.params.base_speed_mps
        kind = action_type(NavigateGoal("", "", (0, 0, 0), 0, 1))
        feedback = kind.Feedback()
        turn = math.atan2(math.sin(goal["yaw"] - yaw0), math.cos(goal["yaw"] - yaw0))

        def step(f: float) -> None:
            with self.lock:
                self.base = [x0 + f * (goal["x"] - x0), y0 + f * (goal["y"] - y0), yaw0 + f * turn]
            feedback.distance_remaining = float((1 - f) * distance)
            handle.publish_feedback(feedback)

        result = kind.Result()
        if self._injected(part) and self._injected(part) != "reject":
            return self._finish(handle, part, result, "error_code")
        if not self._run_for(handle, part, duration, step):
            return result
        return self._finish(handle, part, result, "error_code")

    def _trajectory(self, handle: ServerGoalHandle, part: str) -> Any:
        request = handle.request
        names = list(request.trajectory.joint_names)
        final = list(request.trajectory.points[-1].positions) if request.trajectory.points else []
        which = self._part_of("trajectory", part, request)
        with self.lock:
            start = [self.joints.get(n, 0.0) for n in names]

        def step(f: float) -> None:
            with self.lock:
                for n, a, b in zip(names, start, final):
                    self.joints[n] = a + f * (b - a)

        result = action_type(TrajectoryGoal("", (), (), 1, "arm")).Result()
        if not self._run_for(handle, part, self.params.goal_duration_s, step):
            return result
        return self._finish(handle, which, result, "error_code")

    def _gripper(self, handle: ServerGoalHandle, part: str) -> Any:
        target = float(handle.request.command.position)
        g = self.profile.gripper
        with self.lock:
            start = self.joints.get("gripper", g.open_position)
        closing = target < start
        stop_at = target
        if closing and self._injected(part) != "miss":
            stop_at = max(target, min(start, self.params.object_width_m))  # the object between the fingers
        result = action_type(GripperGoal("", 0, 0, 1)).Result()

        def step(f: float) -> None:
            with self.lock:
                self.joints["gripper"] = start + f * (stop_at - start)

        if not self._run_for(handle, part, self.params.goal_duration_s, step):
            return result
        result.position = float(stop_at)
        result.stalled = bool(stop_at != target)
        result.reached_goal = bool(stop_at == target)
        return self._finish(handle, part, result, None)

    def _point_head(self, handle: ServerGoalHandle, part: str) -> Any:
        result = action_type(PointHeadGoal("", "", (0, 0, 0), "", (0, 0, 1), 0, 1)).Result()
        if not self._run_for(handle, part, self.params.goal_duration_s):
            return result
        return self._finish(handle, part, result, None)

    def _move_group(self, handle: ServerGoalHandle, part: str) -> Any:
        result = action_type(MoveGroupGoal("", "", "", "", (0, 0, 0), (0, 0, 0, 1), 0, 0, 1)).Result()
        result.error_code.val = 1
        if not self._run_for(handle, part, self.params.goal_duration_s):
            return result
        return self._finish(handle, part, result, "error_code.val")

    # -- state ----------------------------------------------------------------------------------

    def _publish_clock(self) -> None:
        from builtin_interfaces.msg import Time
        from rosgraph_msgs.msg import Clock

        t = (time.monotonic() - self._wall0) * self.params.real_time_factor
        sec = int(t)
        self.clock_pub.publish(Clock(clock=Time(sec=sec, nanosec=int((t - sec) * 1e9))))

    def _publish_static(self) -> None:
        msg = _tf_type()()
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = self.profile.base.map_frame, "odom"
        t.header.stamp = self.get_clock().now().to_msg()
        t.transform.rotation.w = 1.0
        msg.transforms = [t]
        self.tf_static.publish(msg)

    def _publish_state(self) -> None:
        stamp = self.get_clock().now().to_msg()
        with self.lock:
            x, y, yaw = self.base
            joints = dict(self.joints)
        t = TransformStamped()
        t.header.stamp, t.header.frame_id, t.child_frame_id = stamp, "odom", self.profile.base.base_frame
        t.transform.translation.x, t.transform.translation.y = x, y
        t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        msg = _tf_type()()
        msg.transforms = [t]
        self.tf.publish(msg)
        state = JointState(name=list(joints), position=[float(v) for v in joints.values()])
        state.header.stamp = stamp
        self.joint_pub.publish(state)


def _tf_type() -> Any:
    from tf2_msgs.msg import TFMessage

    return TFMessage


def _set_code(result: Any, field: str, code: int) -> None:
    target = result
    *path, last = field.split(".")
    for name in path:
        target = getattr(target, name)
    if hasattr(target, last):  # NavigateToPose on humble has no error_code
        setattr(target, last, code)


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(FakeRobot, args, name="fake_robot", num_threads=8, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
