"""Between the simulator's numbers and ROS messages: stamps, transforms, joint states, goals."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import TransformStamped
from sensor_msgs.msg import JointState

from task_learning_sim.trajectory_controller import Trajectory


def stamp(seconds: float) -> Time:
    whole = int(math.floor(seconds))
    return Time(sec=whole, nanosec=int(round((seconds - whole) * 1e9)) % 1_000_000_000)


def seconds_of(duration: Any) -> float:
    """A builtin_interfaces Duration (or Time) in seconds."""
    return float(duration.sec) + float(duration.nanosec) * 1e-9


def duration(seconds: float) -> Duration:
    whole = int(math.floor(seconds))
    return Duration(sec=whole, nanosec=int(round((seconds - whole) * 1e9)) % 1_000_000_000)


def transform(parent: str, child: str, translation: Any, quaternion_xyzw: Any, when: Time) -> TransformStamped:
    msg = TransformStamped()
    msg.header.stamp = when
    msg.header.frame_id = parent
    msg.child_frame_id = child
    msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z = (
        float(v) for v in translation)
    (msg.transform.rotation.x, msg.transform.rotation.y, msg.transform.rotation.z,
     msg.transform.rotation.w) = (float(v) for v in quaternion_xyzw)
    return msg


def yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a turn about z."""
    return 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)


def yaw_of(q: Any) -> float:
    """The heading of a geometry_msgs Quaternion (its rotation about z)."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def joint_state(names: tuple[str, ...], positions: np.ndarray, velocities: np.ndarray, efforts: np.ndarray,
                when: Time) -> JointState:
    msg = JointState()
    msg.header.stamp = when
    msg.name = list(names)
    msg.position = [float(v) for v in positions]
    msg.velocity = [float(v) for v in velocities]
    msg.effort = [float(v) for v in efforts]
    return msg


def trajectory_of(goal: Any) -> Trajectory:
    """A FollowJointTrajectory goal as the controller's Trajectory (tolerances per joint)."""
    points = goal.trajectory.points
    joints = list(goal.trajectory.joint_names)
    positions = np.array([list(p.positions) for p in points], dtype=float) if points else np.zeros((0, len(joints)))
    with_velocities = bool(points) and all(len(p.velocities) == len(joints) for p in points)
    velocities = np.array([list(p.velocities) for p in points], dtype=float) if with_velocities else None
    if points and any(len(p.positions) != len(joints) for p in points):
        positions = np.zeros((len(points), len(joints) + 1))  # refused by validate: one position per joint
    return Trajectory(
        joints=joints,
        times=np.array([seconds_of(p.time_from_start) for p in points], dtype=float),
        positions=positions,
        velocities=velocities,
        path_tolerance={t.name: float(t.position) for t in goal.path_tolerance if t.position > 0},
        goal_tolerance={t.name: float(t.position) for t in goal.goal_tolerance if t.position > 0},
        goal_time_tolerance=seconds_of(goal.goal_time_tolerance),
    )
