"""Joint trajectory tracking as ros2_control's joint_trajectory_controller does it, for the joints
of one controller (the Fetch's arm_with_torso_controller, head_controller).

A goal's points are checked (known joints, every point with a position per joint, times rising,
positions within limits) before it is accepted; while it runs the joints' position servos are
given the trajectory sampled at the current time (cubic between points that carry velocities,
linear otherwise), the path tolerances are checked every tick and the goal tolerances once the
last point's time has passed, with the goal time tolerance as the grace period. The outcome
codes are FollowJointTrajectory's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

DEFAULT_GOAL_TOLERANCE = 0.05  # rad or m, for joints whose goal gives none
DEFAULT_GOAL_TIME_TOLERANCE_S = 1.0


class TrajectoryCode(IntEnum):
    """FollowJointTrajectory's result error codes."""

    SUCCESSFUL = 0
    INVALID_GOAL = -1
    INVALID_JOINTS = -2
    OLD_HEADER_TIMESTAMP = -3
    PATH_TOLERANCE_VIOLATED = -4
    GOAL_TOLERANCE_VIOLATED = -5


class TrajectoryRefused(ValueError):
    """A goal the controller rejects, with its error code."""

    def __init__(self, code: TrajectoryCode, message: str):
        super().__init__(message)
        self.code = code


@dataclass
class Trajectory:
    """A goal: joint names, point times (s from its start), positions and optional velocities
    (one row per point), per-joint path and goal tolerances (0: unchecked / the default), and the
    goal time tolerance."""

    joints: list[str]
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None = None
    path_tolerance: dict[str, float] = field(default_factory=dict)
    goal_tolerance: dict[str, float] = field(default_factory=dict)
    goal_time_tolerance: float = 0.0


@dataclass
class TrajectoryRun:
    """A goal in flight: where it started, when, and how it ended."""

    trajectory: Trajectory
    start_positions: np.ndarray
    started_at: float
    code: TrajectoryCode | None = None
    message: str = ""
    canceled: bool = False
    desired: np.ndarray = field(default_factory=lambda: np.zeros(0))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def done(self) -> bool:
        return self.code is not None or self.canceled


def validate(trajectory: Trajectory, joints: tuple[str, ...], limits: dict[str, tuple[float, float]]) -> None:
    """Raise TrajectoryRefused unless the controller can run `trajectory`."""
    unknown = [j for j in trajectory.joints if j not in joints]
    if unknown or not trajectory.joints or len(set(trajectory.joints)) != len(trajectory.joints):
        raise TrajectoryRefused(TrajectoryCode.INVALID_JOINTS,
                                f"joints {unknown or trajectory.joints} are not this controller's {list(joints)}")
    count = len(trajectory.times)
    if count == 0 or trajectory.positions.shape != (count, len(trajectory.joints)):
        raise TrajectoryRefused(TrajectoryCode.INVALID_GOAL, "every point needs one position per joint")
    if trajectory.velocities is not None and trajectory.velocities.shape != trajectory.positions.shape:
        raise TrajectoryRefused(TrajectoryCode.INVALID_GOAL, "velocities must be given for every joint or none")
    if np.any(np.diff(trajectory.times) <= 0) or trajectory.times[0] < 0:
        raise TrajectoryRefused(TrajectoryCode.INVALID_GOAL, "point times must rise from 0")
    for column, joint in enumerate(trajectory.joints):
        low, high = limits.get(joint, (-np.inf, np.inf))
        values = trajectory.positions[:, column]
        if np.any(values < low - 1e-6) or np.any(values > high + 1e-6):
            raise TrajectoryRefused(TrajectoryCode.INVALID_GOAL, f"{joint} leaves its limits [{low:.3f}, {high:.3f}]")


def sample(run: TrajectoryRun, elapsed: float) -> np.ndarray:
    """The desired positions `elapsed` s into the run: from the start positions to the first
    point, then point to point (Hermite where velocities are given), holding the last."""
    trajectory = run.trajectory
    times = np.concatenate([[0.0], trajectory.times])
    positions = np.vstack([run.start_positions, trajectory.positions])
    velocities = None
    if trajectory.velocities is not None:
        velocities = np.vstack([np.zeros_like(run.start_positions), trajectory.velocities])
    if elapsed >= times[-1]:
        end: np.ndarray = positions[-1].copy()
        return end
    index = int(np.searchsorted(times, elapsed, side="right")) - 1
    span = times[index + 1] - times[index]
    if span <= 0:
        after: np.ndarray = positions[index + 1].copy()
        return after
    s = (elapsed - times[index]) / span
    p0, p1 = positions[index], positions[index + 1]
    if velocities is None:
        linear: np.ndarray = p0 + s * (p1 - p0)
        return linear
    v0, v1 = velocities[index] * span, velocities[index + 1] * span
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    cubic: np.ndarray = h00 * p0 + h10 * v0 + h01 * p1 + h11 * v1
    return cubic


def check(run: TrajectoryRun, actual: np.ndarray, elapsed: float) -> None:
    """Update the run's desired and error, and end it on a tolerance violation or success."""
    trajectory = run.trajectory
    run.desired = sample(run, elapsed)
    run.error = run.desired - actual
    for column, joint in enumerate(trajectory.joints):
        tolerance = trajectory.path_tolerance.get(joint, 0.0)
        if tolerance > 0 and abs(run.error[column]) > tolerance:
            run.code = TrajectoryCode.PATH_TOLERANCE_VIOLATED
            run.message = f"{joint} is {abs(run.error[column]):.3f} off its path (tolerance {tolerance:.3f})"
            return
    end = float(trajectory.times[-1])
    if elapsed < end:
        return
    final_error = trajectory.positions[-1] - actual
    within = all(abs(final_error[c]) <= (trajectory.goal_tolerance.get(j, 0.0) or DEFAULT_GOAL_TOLERANCE)
                 for c, j in enumerate(trajectory.joints))
    if within:
        run.code = TrajectoryCode.SUCCESSFUL
    elif elapsed > end + (trajectory.goal_time_tolerance or DEFAULT_GOAL_TIME_TOLERANCE_S):
        worst = int(np.argmax(np.abs(final_error)))
        run.code = TrajectoryCode.GOAL_TOLERANCE_VIOLATED
        run.message = (f"{trajectory.joints[worst]} ended {abs(final_error[worst]):.3f} from its goal "
                       f"{trajectory.goal_time_tolerance or DEFAULT_GOAL_TIME_TOLERANCE_S:.1f} s after the trajectory's end")
