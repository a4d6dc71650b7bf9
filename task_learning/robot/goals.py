"""The standard goals the stack sends to a robot, as plain data (no ROS types).

Each goal names the action server it goes to, the standard action type it is a goal of, and how
long it may take; the ROS layer (task_learning_nodes.robot.clients) turns one into the message
of its type and back. Poses are REP-103: x forward, y left, z up, metres and radians.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]  # x, y, z, w (geometry_msgs order)

NAVIGATE_TO_POSE = "nav2_msgs/action/NavigateToPose"
FOLLOW_JOINT_TRAJECTORY = "control_msgs/action/FollowJointTrajectory"
POINT_HEAD = "control_msgs/action/PointHead"
GRIPPER_COMMAND = "control_msgs/action/GripperCommand"
MOVE_GROUP = "moveit_msgs/action/MoveGroup"


@dataclass(frozen=True)
class NavigateGoal:
    """nav2_msgs/NavigateToPose: the base to `position` (z ignored), heading `yaw`, in `frame`."""

    server: str
    frame: str
    position: Vec3
    yaw: float
    timeout_s: float
    kind: Literal["navigate"] = "navigate"
    type: str = NAVIGATE_TO_POSE


@dataclass(frozen=True)
class PointHeadGoal:
    """control_msgs/PointHead: turn `pointing_frame`'s `pointing_axis` toward `target` in `frame`."""

    server: str
    frame: str
    target: Vec3
    pointing_frame: str
    pointing_axis: Vec3
    min_duration_s: float
    timeout_s: float
    kind: Literal["point_head"] = "point_head"
    type: str = POINT_HEAD


@dataclass(frozen=True)
class TrajectoryGoal:
    """control_msgs/FollowJointTrajectory: `joints` through `points` ((positions, time from
    start in s), ...). `purpose` says which part moves (head, arm, torso, gripper)."""

    server: str
    joints: tuple[str, ...]
    points: tuple[tuple[tuple[float, ...], float], ...]
    timeout_s: float
    purpose: Literal["head", "arm", "torso", "gripper"]
    kind: Literal["trajectory"] = "trajectory"
    type: str = FOLLOW_JOINT_TRAJECTORY

    @property
    def final(self) -> tuple[float, ...]:
        return self.points[-1][0]


@dataclass(frozen=True)
class GripperGoal:
    """control_msgs/GripperCommand: fingers to `position` with at most `max_effort`. `grasp`
    says whether the close is meant to hold an object (then a stall or a gap above the
    profile's `holding_min` is a grasp, and a close to nothing is a miss)."""

    server: str
    position: float
    max_effort: float
    timeout_s: float
    grasp: bool = False
    kind: Literal["gripper"] = "gripper"
    type: str = GRIPPER_COMMAND


@dataclass(frozen=True)
class MoveGroupGoal:
    """moveit_msgs/MoveGroup: plan and execute `group` so that `link` reaches `position` with
    `orientation` in `frame`, within `tolerance_m` (position) and `tolerance_rad` (orientation)."""

    server: str
    group: str
    link: str
    frame: str
    position: Vec3
    orientation: Quat
    tolerance_m: float
    tolerance_rad: float
    timeout_s: float
    kind: Literal["move_group"] = "move_group"
    type: str = MOVE_GROUP


RobotGoal = Union[NavigateGoal, PointHeadGoal, TrajectoryGoal, GripperGoal, MoveGroupGoal]


@dataclass(frozen=True)
class Step:
    """One goal of an abstract action's sequence, with why it is sent (for logs and feedback)."""

    goal: RobotGoal
    why: str


@dataclass
class GoalOutcome:
    """How one goal ended, in the standard result's own terms (robot.failures maps it to a
    blocking condition). `status` is one of: succeeded, aborted, canceled, rejected, timeout,
    server_missing, stopped (run-stop or stop service: never sent or cancelled). `code` is the
    result's error code where the type has one (NavigateToPose on jazzy and later, MoveIt's
    MoveItErrorCodes, FollowJointTrajectory's error_code); `gripper` the GripperCommand result
    (position, stalled, reached_goal)."""

    status: Literal["succeeded", "aborted", "canceled", "rejected", "timeout", "server_missing", "stopped"]
    code: int | None = None
    message: str = ""
    gripper: tuple[float, bool, bool] | None = None
    detail: dict[str, float] = field(default_factory=dict)
