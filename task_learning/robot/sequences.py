"""Abstract actions as sequences of standard goals, for one robot profile.

navigate to an object: NavigateToPose to a stand-off pose (`base.standoff_m` from the object's
centre in `map`, on the line from the robot to it, turned so the object is at `base.facing_rad`);
look at: PointHead where the profile has a server, else head pan/tilt computed here and sent as a
FollowJointTrajectory; look around: the head through `head.look_around_pans`; pick, place, open,
close, toggle: a look, then the arm (MoveGroup pose goals, or FollowJointTrajectory goals from the
IK on the URDF) and the gripper (GripperCommand, or a trajectory of the gripper joints).

Poses are REP-103 (x forward, z up). The arm's waypoints are computed in the base frame from the
base's pose in `map` at planning time (the base does not move during a manipulation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from task_learning.robot.goals import (
    GripperGoal,
    MoveGroupGoal,
    NavigateGoal,
    PointHeadGoal,
    Step,
    TrajectoryGoal,
    Vec3,
)
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import RobotProfile

MANIPULATIONS = ("pick", "place", "open", "close", "toggle_on", "toggle_off")


@dataclass(frozen=True)
class BasePose:
    """The base in `map`: position (m) and heading (rad)."""

    x: float
    y: float
    yaw: float

    def to_base(self, point: Vec3) -> np.ndarray:
        """A `map` point in the base frame."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        dx, dy = point[0] - self.x, point[1] - self.y
        return np.array([c * dx + s * dy, -s * dx + c * dy, point[2]])


class Unreachable(Exception):
    """The arm cannot reach a waypoint from where the base stands (no IK solution, or beyond
    the profile's reach): nothing is sent, the action fails as not_near."""


def clamp(value: float, limits: tuple[float, float]) -> float:
    return min(max(value, limits[0]), limits[1])


class SkillSequencer:
    def __init__(self, profile: RobotProfile, kinematics: ArmKinematics | None = None) -> None:
        self.profile = profile
        self.kinematics = kinematics

    # -- base and head --------------------------------------------------------------------------

    def standoff(self, target: Vec3, base: BasePose | None) -> tuple[Vec3, float]:
        """Where the base stops for an object at `target` (map) and its heading."""
        ox, oy = target[0], target[1]
        fx, fy = (base.x, base.y) if base is not None else (0.0, 0.0)
        bearing = math.atan2(oy - fy, ox - fx) if (ox, oy) != (fx, fy) else 0.0
        d = self.profile.base.standoff_m
        yaw = bearing - self.profile.base.facing_rad
        return (ox - d * math.cos(bearing), oy - d * math.sin(bearing), 0.0), math.atan2(math.sin(yaw), math.cos(yaw))

    def navigate(self, target: Vec3, base: BasePose | None) -> list[Step]:
        position, yaw = self.standoff(target, base)
        goal = NavigateGoal(self.profile.base.navigate_action, self.profile.base.map_frame, position, yaw,
                            self.profile.timeouts.navigate_s)
        return [Step(goal, "drive to the stand-off pose")]

    def head_angles(self, target: Vec3, base: BasePose) -> tuple[float, float]:
        """Pan and tilt (joint positions) that point the head at `target` (map)."""
        head = self.profile.head
        p = base.to_base(target) - np.asarray(head.pan_origin)
        pan = math.atan2(p[1], p[0])
        down = math.atan2(-p[2], math.hypot(p[0], p[1]))
        tilt = down if head.tilt_down_positive else -down
        return clamp(pan, head.pan_limits), clamp(tilt, head.tilt_limits)

    def head_to(self, pan: float, tilt: float, why: str) -> Step:
        head = self.profile.head
        goal = TrajectoryGoal(head.trajectory_action, (head.pan_joint, head.tilt_joint),
                              (((pan, tilt), head.move_s),), self.profile.timeouts.head_s, "head")
        return Step(goal, why)

    def look_at(self, target: Vec3, base: BasePose) -> list[Step]:
        head = self.profile.head
        if head.point_head_action:
            goal = PointHeadGoal(head.point_head_action, self.profile.base.map_frame, target,
                                 head.pointing_frame or self.profile.camera_frame, head.pointing_axis,
                                 head.move_s, self.profile.timeouts.head_s)
            return [Step(goal, "point the head at the object")]
        return [self.head_to(*self.head_angles(target, base), "turn the head toward the object")]

    def look_around(self) -> list[Step]:
        """One head goal per heading of the sweep (the caller looks for the object after each)."""
        head = self.profile.head
        tilt = head.look_around_tilt if head.tilt_down_positive else -head.look_around_tilt
        return [self.head_to(clamp(pan, head.pan_limits), clamp(tilt, head.tilt_limits),
                             f"look around ({i + 1}/{len(head.look_around_pans)})")
                for i, pan in enumerate(head.look_around_pans)]

    # -- gripper and arm ------------------------------------------------------------------------

    def gripper(self, opening: bool, *, grasp: bool = False) -> Step:
        g = self.profile.gripper
        position = g.open_position if opening else g.closed_position
        why = "open the gripper" if opening else ("close the gripper on the object" if grasp else "close the gripper")
        if g.mode == "command":
            return Step(GripperGoal(g.action, position, g.max_effort, self.profile.timeouts.gripper_s, grasp), why)
        start = g.closed_position if opening else g.open_position
        goal = TrajectoryGoal(g.action, g.joints, (((start,) * len(g.joints), 0.0),
                                                   ((position,) * len(g.joints), 1.0)),
                              self.profile.timeouts.gripper_s, "gripper")
        return Step(goal, why)

    def arm_path(self, waypoints: list[tuple[np.ndarray, str]], approach: np.ndarray) -> list[Step]:
        """Arm goals through `waypoints` (base frame) with the gripper along `approach`."""
        arm = self.profile.arm
        for point, _ in waypoints:
            if float(np.linalg.norm(point[:2])) > arm.reach_m + arm.pregrasp_m:
                raise Unreachable(f"{np.linalg.norm(point[:2]):.2f} m from the base, beyond the arm's reach "
                                  f"({arm.reach_m:g} m)")
        if arm.mode == "moveit":
            yaw = math.atan2(approach[1], approach[0])
            quat = tuple(float(v) for v in Rotation.from_euler("z", yaw).as_quat())
            return [Step(MoveGroupGoal(arm.move_group_action, arm.planning_group, arm.tip_link,
                                       self.profile.base.base_frame, _vec(point), quat,  # type: ignore[arg-type]
                                       arm.tolerance_m, 0.3, self.profile.timeouts.arm_s), why)
                    for point, why in waypoints]
        if self.kinematics is None:
            raise Unreachable("no kinematic model of the arm (no robot description received)")
        steps: list[Step] = []
        seed: tuple[float, ...] | None = None
        for point, why in waypoints:
            solution = self.kinematics.solve(_vec(point), seed)
            if solution is None:
                raise Unreachable(f"no inverse kinematics solution for {why} at "
                                  f"({point[0]:.2f}, {point[1]:.2f}, {point[2]:.2f}) in {arm.root_link}")
            seed = solution
            steps.append(Step(TrajectoryGoal(arm.trajectory_action, arm.joints, ((solution, arm.move_s),),
                                             self.profile.timeouts.arm_s, "arm"), why))
        return steps

    def manipulate(self, skill: str, target: Vec3, base: BasePose) -> list[Step]:
        """The goals of a manipulation of the object at `target` (map); Unreachable when the
        arm cannot get there from `base`."""
        arm = self.profile.arm
        p = base.to_base(target)
        approach = np.array([p[0], p[1], 0.0])
        norm = float(np.linalg.norm(approach))
        approach = approach / norm if norm > 1e-6 else np.array([1.0, 0.0, 0.0])
        back = p - approach * arm.pregrasp_m
        up = np.array([0.0, 0.0, arm.place_above_m])
        look = self.look_at(target, base)
        if skill == "pick":
            return look + [self.gripper(True)] + self.arm_path([(back, "pre-grasp"), (p, "grasp")], approach) + \
                [self.gripper(False, grasp=True)] + self.arm_path([(back + up, "lift and retreat")], approach)
        if skill == "place":
            return look + self.arm_path([(back + up, "above the receptacle, back"), (p + up, "release pose")],
                                        approach) + [self.gripper(True)] + self.arm_path([(back + up, "retreat")], approach)
        if skill in ("open", "close"):
            swing = back - approach * arm.pregrasp_m if skill == "open" else p + approach * arm.pregrasp_m / 2
            return look + [self.gripper(True)] + self.arm_path([(back, "before the handle"), (p, "the handle")],
                                                               approach) + \
                [self.gripper(False, grasp=True)] + self.arm_path([(swing, f"{skill} the door")], approach) + \
                [self.gripper(True)] + self.arm_path([(swing - approach * arm.pregrasp_m / 2, "retreat")], approach)
        if skill in ("toggle_on", "toggle_off"):
            return look + [self.gripper(False)] + self.arm_path([(back, "before the switch"), (p, "press the switch"),
                                                                 (back, "retreat")], approach)
        raise ValueError(f"not a manipulation: {skill!r} (known: {', '.join(MANIPULATIONS)})")


def _vec(point: np.ndarray) -> Vec3:
    return (float(point[0]), float(point[1]), float(point[2]))
