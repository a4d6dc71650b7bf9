"""The simulated Fetch's action servers: Nav2's NavigateToPose and the Fetch's controllers'
FollowJointTrajectory, PointHead and GripperCommand, each goal run by the simulator's controllers.

Every server accepts cancel; a cancelled goal stops its motion (the base brakes, the joints hold
where they are) and ends canceled. Results carry the standard codes: NavigateToPose's error_code
(FollowPath 106 NO_VALID_CONTROL for a contact, 105 FAILED_TO_MAKE_PROGRESS for a base that cannot
follow its path, ComputePathToPose 206 GOAL_OCCUPIED for a goal inside furniture and 208
NO_VALID_PATH for a goal the planner finds no way to, the navigator's 9002 TF_ERROR for a frame it
does not know and 9003 TIMEOUT), FollowJointTrajectory's error_code,
GripperCommand's stalled / reached_goal.
"""
from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from control_msgs.action import FollowJointTrajectory, GripperCommand, PointHead
from nav2_msgs.action import NavigateToPose
from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup

from task_learning_nodes.plumbing.qos import action_server_qos
from task_learning_sim.base_controller import NAV_CODES, NavOutcome
from task_learning_sim.fetch_model import ROOT_LINK
from task_learning_sim.ros_convert import duration, seconds_of, trajectory_of, yaw_of
from task_learning_sim.simulator import CONTROLLERS, occupied_by
from task_learning_sim.trajectory_controller import TrajectoryCode, TrajectoryRefused

if TYPE_CHECKING:
    from task_learning_sim.ros_node import SimNode

POLL_S = 0.02
GOAL_OCCUPIED = 206
TF_ERROR = 9002
WORLD_FRAMES = ("map", "odom", "")
NAV_UNKNOWN = 9000  # NavigateToPose's error_code UNKNOWN
STOPPED = "the simulator has stopped (shut down, or its physics failed: its log says which)"


class SimulatorStopping(Exception):
    """Raised inside a goal's wait when the simulator node stops: the goal ends aborted."""


def _set(message: Any, **fields: Any) -> None:
    """Set the fields the distribution's message has (humble's NavigateToPose result has none)."""
    for name, value in fields.items():
        if hasattr(message, name):
            setattr(message, name, value)


class ActionServers:
    """The servers on `node` (a SimNode: its `sim`, `lock` and `stopping`)."""

    def __init__(self, node: SimNode) -> None:
        self.node = node
        self.group = ReentrantCallbackGroup()  # goals of different servers run at once
        self.servers = [self._server(NavigateToPose, "navigate_to_pose", self.navigate)]
        for controller in CONTROLLERS:
            self.servers.append(self._server(FollowJointTrajectory, f"{controller}/follow_joint_trajectory",
                                             self._trajectory_server(controller)))
        self.servers.append(self._server(PointHead, "head_controller/point_head", self.point_head))
        self.servers.append(self._server(GripperCommand, "gripper_controller/gripper_action", self.grip))

    def _server(self, kind: Any, name: str, execute: Callable[[ServerGoalHandle], Any]) -> ActionServer:
        def run(handle: ServerGoalHandle) -> Any:
            try:
                return execute(handle)
            except SimulatorStopping:  # no physics will end this goal: abort it, saying why
                result = kind.Result()
                _set(result, error_msg=STOPPED, error_string=STOPPED)
                if kind is NavigateToPose:
                    _set(result, error_code=NAV_UNKNOWN)
                handle.abort()
                return result

        return ActionServer(self.node, kind, name, run, callback_group=self.group,
                            cancel_callback=lambda _request: CancelResponse.ACCEPT, **action_server_qos())

    def _wait(self, handle: ServerGoalHandle, done: Callable[[], bool], cancel: Callable[[], None],
              feedback: Callable[[], Any] | None = None) -> bool:
        """Until `done()` (under the lock); a cancel request calls `cancel()` once. True when the
        goal was cancelled. The node's stop (shutdown, or the physics failed) cancels the motion
        and raises SimulatorStopping at once: the physics thread has ended or is ending, so
        `done()` might never come, and a goal waiting for it would hold the node's shutdown."""
        canceled = False
        while True:
            time.sleep(POLL_S)
            with self.node.lock:
                if self.node.stopping.is_set():
                    if not canceled:
                        cancel()
                    raise SimulatorStopping(STOPPED)
                if not canceled and handle.is_cancel_requested:
                    cancel()
                    canceled = True
                if done():
                    return canceled
                message = feedback() if feedback is not None else None
            if message is not None:
                handle.publish_feedback(message)

    # ---- navigate_to_pose ------------------------------------------------------------------------
    def _goal_in_odom(self, pose_stamped: Any) -> tuple[float, float, float] | None:
        """The goal as (x, y, yaw) in odom (= map), from map, odom or base_link; None otherwise."""
        frame = pose_stamped.header.frame_id.lstrip("/")
        p, q = pose_stamped.pose.position, pose_stamped.pose.orientation
        if frame in WORLD_FRAMES:
            return float(p.x), float(p.y), yaw_of(q)
        if frame == ROOT_LINK:
            x, y, yaw = self.node.sim.base_pose()
            c, s = math.cos(yaw), math.sin(yaw)
            return x + c * p.x - s * p.y, y + s * p.x + c * p.y, yaw + yaw_of(q)
        return None

    def navigate(self, handle: ServerGoalHandle) -> Any:
        result = NavigateToPose.Result()
        with self.node.lock:
            target = self._goal_in_odom(handle.request.pose)
            problem = (TF_ERROR, f"no transform from {handle.request.pose.header.frame_id!r} to map") \
                if target is None else None
            if target is not None and (piece := occupied_by(self.node.sim.world, target[0], target[1])):
                problem = (GOAL_OCCUPIED, f"the goal is inside {piece}")
            if problem is None and target is not None:
                goal = self.node.sim.navigate(*target)
                started = self.node.sim.time
        if problem is not None:
            _set(result, error_code=problem[0], error_msg=problem[1])
            handle.abort()
            return result

        def feedback() -> Any:
            message = NavigateToPose.Feedback()
            x, y, _ = self.node.sim.base_pose()
            message.current_pose.header.frame_id = "map"
            message.current_pose.pose.position.x, message.current_pose.pose.position.y = x, y
            message.navigation_time = duration(self.node.sim.time - started)
            message.distance_remaining = float(goal.distance_left((x, y, 0.0)))
            return message

        self._wait(handle, lambda: goal.outcome is not NavOutcome.RUNNING, self.node.sim.base.cancel, feedback)
        if goal.outcome is NavOutcome.NO_PATH:
            _set(result, error_code=NAV_CODES[goal.outcome], error_msg="no path to the goal round the obstacles")
        elif goal.outcome is NavOutcome.COLLISION:  # say what it touched: a robotics user's first question
            touched = ", ".join(sorted(set(self.node.sim.robot_touches()))) or "nothing left in contact"
            _set(result, error_code=NAV_CODES[goal.outcome], error_msg=f"the base stopped: collision ({touched})")
        elif goal.outcome not in (NavOutcome.SUCCEEDED, NavOutcome.CANCELED):
            _set(result, error_code=NAV_CODES[goal.outcome], error_msg=f"the base stopped: {goal.outcome.value}")
        _end(handle, stopped=goal.outcome is NavOutcome.CANCELED, succeeded=goal.outcome is NavOutcome.SUCCEEDED)
        return result

    # ---- follow_joint_trajectory -----------------------------------------------------------------
    def _trajectory_server(self, controller: str) -> Callable[[ServerGoalHandle], Any]:
        def execute(handle: ServerGoalHandle) -> Any:
            return self.follow(controller, handle)
        return execute

    def follow(self, controller: str, handle: ServerGoalHandle) -> Any:
        result = FollowJointTrajectory.Result()
        with self.node.lock:
            try:
                run = self.node.sim.follow(controller, trajectory_of(handle.request))
            except TrajectoryRefused as refused:
                result.error_code, result.error_string = int(refused.code), str(refused)
                handle.abort()
                return result

        def feedback() -> Any:
            message = FollowJointTrajectory.Feedback()
            message.joint_names = list(run.trajectory.joints)
            message.desired.positions = [float(v) for v in run.desired]
            message.actual.positions = [float(v) for v in self.node.sim.positions(run.trajectory.joints)]
            message.error.positions = [float(v) for v in run.error]
            return message

        self._wait(handle, lambda: run.done, lambda: self.node.sim.cancel_trajectory(run), feedback)
        _end(handle, stopped=run.canceled, succeeded=run.code is TrajectoryCode.SUCCESSFUL)
        result.error_code = int(run.code) if run.code is not None else 0
        result.error_string = run.message
        return result

    # ---- point_head ------------------------------------------------------------------------------
    def point_head(self, handle: ServerGoalHandle) -> Any:
        goal = handle.request
        with self.node.lock:
            target = self._goal_in_odom_point(goal.target)
            if target is None:
                handle.abort()
                return PointHead.Result()
            run = self.node.sim.point_head(np.array(target), seconds_of(goal.min_duration),
                                           float(goal.max_velocity) or 1.0)

        def feedback() -> Any:
            return PointHead.Feedback(pointing_angle_error=float(np.max(np.abs(run.error))) if run.error.size else 0.0)

        self._wait(handle, lambda: run.done, lambda: self.node.sim.cancel_trajectory(run), feedback)
        _end(handle, stopped=run.canceled, succeeded=run.code is TrajectoryCode.SUCCESSFUL)
        return PointHead.Result()

    def _goal_in_odom_point(self, point_stamped: Any) -> tuple[float, float, float] | None:
        frame = point_stamped.header.frame_id.lstrip("/")
        p = point_stamped.point
        if frame in WORLD_FRAMES:
            return float(p.x), float(p.y), float(p.z)
        if frame in {self.node.sim.model.body(b).name for b in self.node.sim.robot}:
            body = self.node.sim.data.body(frame)
            world = body.xpos + body.xmat.reshape(3, 3) @ np.array([p.x, p.y, p.z])
            return float(world[0]), float(world[1]), float(world[2])
        return None

    # ---- gripper_action --------------------------------------------------------------------------
    def grip(self, handle: ServerGoalHandle) -> Any:
        command = handle.request.command
        with self.node.lock:
            run = self.node.sim.grip(float(command.position), float(command.max_effort))

        def cancel() -> None:
            run.done = run.canceled = True

        def feedback() -> Any:
            return GripperCommand.Feedback(position=run.position, effort=run.force, stalled=run.stalled,
                                           reached_goal=run.reached_goal)

        self._wait(handle, lambda: run.done, cancel, feedback)
        result = GripperCommand.Result(position=run.position, effort=run.force, stalled=run.stalled,
                                       reached_goal=run.reached_goal)
        _end(handle, stopped=run.canceled, succeeded=run.reached_goal or run.stalled)
        return result


def _end(handle: ServerGoalHandle, *, stopped: bool, succeeded: bool) -> None:
    """End a goal: succeeded, aborted, or (stopped before its end) canceled when its client asked
    to cancel it; otherwise (a newer goal on the same joints or base preempted it, or the
    simulator is shutting down) aborted, as the action protocol allows no CANCELED without a
    cancel request (rclpy refuses the transition EXECUTING -> CANCELED)."""
    if stopped and handle.is_cancel_requested:
        handle.canceled()
    elif succeeded and not stopped:
        handle.succeed()
    else:
        handle.abort()
