"""The core's standard goals (task_learning.robot.goals) as ROS messages, and results back.

The types are the upstream packages' (nav2_msgs, control_msgs, moveit_msgs), imported where
they are used: a machine's own ROS install provides them, else `make setup` builds them with the
layouts of the declared distribution (interfaces/standard). Results are read by field name, so
NavigateToPose on humble (no error_code) and on jazzy/kilted read alike.
"""
from __future__ import annotations

import math
from typing import Any

from builtin_interfaces.msg import Duration

from task_learning.robot.goals import (
    GoalOutcome,
    GripperGoal,
    MoveGroupGoal,
    NavigateGoal,
    PointHeadGoal,
    RobotGoal,
    TrajectoryGoal,
)


def action_type(goal: RobotGoal) -> Any:
    """The action class of `goal`'s standard type."""
    if isinstance(goal, NavigateGoal):
        from nav2_msgs.action import NavigateToPose

        return NavigateToPose
    if isinstance(goal, TrajectoryGoal):
        from control_msgs.action import FollowJointTrajectory

        return FollowJointTrajectory
    if isinstance(goal, PointHeadGoal):
        from control_msgs.action import PointHead

        return PointHead
    if isinstance(goal, GripperGoal):
        from control_msgs.action import GripperCommand

        return GripperCommand
    from moveit_msgs.action import MoveGroup

    return MoveGroup


def duration(seconds: float) -> Duration:
    sec = int(math.floor(seconds))
    return Duration(sec=sec, nanosec=int(round((seconds - sec) * 1e9)) % 1_000_000_000)


def to_msg(goal: RobotGoal, stamp: Any) -> Any:
    """The ROS goal message of `goal` (header stamps from the node clock: `stamp`)."""
    kind = action_type(goal)
    msg = kind.Goal()
    if isinstance(goal, NavigateGoal):
        msg.pose.header.frame_id, msg.pose.header.stamp = goal.frame, stamp
        p = msg.pose.pose
        p.position.x, p.position.y, p.position.z = goal.position
        p.orientation.z, p.orientation.w = math.sin(goal.yaw / 2), math.cos(goal.yaw / 2)
    elif isinstance(goal, TrajectoryGoal):
        from trajectory_msgs.msg import JointTrajectoryPoint

        msg.trajectory.joint_names = list(goal.joints)
        msg.trajectory.points = [JointTrajectoryPoint(positions=[float(v) for v in positions],
                                                      time_from_start=duration(t))
                                 for positions, t in goal.points]
    elif isinstance(goal, PointHeadGoal):
        msg.target.header.frame_id, msg.target.header.stamp = goal.frame, stamp
        msg.target.point.x, msg.target.point.y, msg.target.point.z = goal.target
        msg.pointing_axis.x, msg.pointing_axis.y, msg.pointing_axis.z = goal.pointing_axis
        msg.pointing_frame = goal.pointing_frame
        msg.min_duration = duration(goal.min_duration_s)
    elif isinstance(goal, GripperGoal):
        msg.command.position, msg.command.max_effort = float(goal.position), float(goal.max_effort)
    else:
        _move_group(msg, goal, stamp)
    return msg


def _move_group(msg: Any, goal: MoveGroupGoal, stamp: Any) -> None:
    """A MoveGroup pose goal: a sphere of `tolerance_m` around the position for the link, and
    the orientation within `tolerance_rad` about each axis; plan and execute."""
    from geometry_msgs.msg import Pose
    from moveit_msgs.msg import Constraints, OrientationConstraint, PositionConstraint
    from shape_msgs.msg import SolidPrimitive

    request = msg.request
    request.group_name = goal.group
    request.num_planning_attempts = 1
    request.allowed_planning_time = min(5.0, goal.timeout_s)
    position = PositionConstraint(link_name=goal.link, weight=1.0)
    position.header.frame_id, position.header.stamp = goal.frame, stamp
    position.constraint_region.primitives = [SolidPrimitive(type=SolidPrimitive.SPHERE,
                                                            dimensions=[float(goal.tolerance_m)])]
    centre = Pose()
    centre.position.x, centre.position.y, centre.position.z = goal.position
    centre.orientation.w = 1.0
    position.constraint_region.primitive_poses = [centre]
    orientation = OrientationConstraint(link_name=goal.link, weight=1.0,
                                        absolute_x_axis_tolerance=goal.tolerance_rad,
                                        absolute_y_axis_tolerance=goal.tolerance_rad,
                                        absolute_z_axis_tolerance=goal.tolerance_rad)
    orientation.header.frame_id, orientation.header.stamp = goal.frame, stamp
    q = orientation.orientation
    q.x, q.y, q.z, q.w = goal.orientation
    request.goal_constraints = [Constraints(position_constraints=[position],
                                            orientation_constraints=[orientation])]
    msg.planning_options.plan_only = False


def goal_from_msg(kind: str, msg: Any) -> dict[str, Any]:
    """What a fake server or a test reads of a received goal, as plain data."""
    if kind == "navigate":
        p = msg.pose.pose
        yaw = 2.0 * math.atan2(p.orientation.z, p.orientation.w)
        stamp = msg.pose.header.stamp
        return {"frame": msg.pose.header.frame_id, "x": p.position.x, "y": p.position.y, "yaw": yaw,
                "stamp": stamp.sec + stamp.nanosec * 1e-9}
    if kind == "trajectory":
        return {"joints": list(msg.trajectory.joint_names),
                "final": list(msg.trajectory.points[-1].positions) if msg.trajectory.points else []}
    if kind == "point_head":
        t = msg.target.point
        return {"frame": msg.target.header.frame_id, "target": (t.x, t.y, t.z), "pointing_frame": msg.pointing_frame}
    if kind == "gripper":
        return {"position": msg.command.position, "max_effort": msg.command.max_effort}
    constraint = msg.request.goal_constraints[0].position_constraints[0]
    c = constraint.constraint_region.primitive_poses[0].position
    return {"group": msg.request.group_name, "link": constraint.link_name, "frame": constraint.header.frame_id,
            "position": (c.x, c.y, c.z)}


STATUS = {4: "succeeded", 5: "canceled", 6: "aborted"}  # action_msgs/GoalStatus


def outcome_from_result(goal: RobotGoal, status: int, result: Any) -> GoalOutcome:
    """The GoalOutcome of a finished goal: the status, and the code the result carries."""
    text = STATUS.get(status, "aborted")
    if isinstance(goal, GripperGoal):
        return GoalOutcome(text, gripper=(float(result.position), bool(result.stalled), bool(result.reached_goal)))  # type: ignore[arg-type]
    code: int | None = None
    message = ""
    if isinstance(goal, MoveGroupGoal):
        code = int(result.error_code.val)
    elif hasattr(result, "error_code"):
        code = int(result.error_code)
        message = str(getattr(result, "error_msg", "") or getattr(result, "error_string", ""))
    return GoalOutcome(text, code=code, message=message)  # type: ignore[arg-type]
