"""Abstract actions as sequences of standard goals, for one robot profile.

navigate to an object: NavigateToPose to a stand-off pose (`base.standoff_m` from the object's
centre in `map`; in front of the piece of furniture that holds it, on the line through the object
square to the piece's front, when the robot knows that front; else on the line from the robot to
it), turned so the object is at `base.facing_rad`;
look at: PointHead where the profile has a server, else head pan/tilt computed here and sent as a
FollowJointTrajectory; look around: the head through `head.look_around_pans`; pick, place, open,
close, toggle: a look, then the arm (MoveGroup pose goals, or FollowJointTrajectory goals from the
IK on the URDF) and the gripper (GripperCommand, or a trajectory of the gripper joints).

Poses are REP-103 (x forward, z up). The arm's waypoints are computed in the base frame from the
base's pose in `map` at planning time (the base does not move during a manipulation). Every arm
motion is a chain of straight Cartesian segments (IK every STRAIGHT_STEP_M, the gripper's frame
turned along the way) from where the last planned motion left the gripper, through safe
waypoints: over a low piece at a clearance height first, then down; level into a compartment.
A joint-space move sweeps the elbow and the wrist wherever the joints go, and in a kitchen that
is into the furniture. When an arm goal fails, `back_out` retraces the joint path sent so far.
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
# Below this height (m above the floor) a pick or place comes from above, the gripper pointing
# down (into a bag or a low bin, whose walls a side approach would hit); above it, level, from
# the side (tables, shelves, cabinets' compartments, which a top approach cannot enter).
TOP_DOWN_BELOW_M = 0.6
# Where the gripper is carried while the base drives (base frame, m; level, pointing ahead): just
# ahead of the base, above counter height, so that neither the arm nor what it holds sweeps into
# furniture. Measured on the Fetch: from a pose so folded as (0.3, 0, 1.1) the IK along straight
# lines to level targets in front fails or jumps branches (the wrist against its limit); from this
# one, reached by a straight line back from HUB_POINT, straight lines to level targets 0.65-0.8 m
# ahead at 0.8-1.1 m and to points over a bag stay on one branch (test_sequences).
CARRY_POINT = (0.45, 0.0, 1.2)
# A level pose in front of the base whose IK solution is on the branch level manipulations use:
# the carry pose's joints are found along the straight line from it (not from the IK's own
# starting poses, which find the carry point on whichever branch they reach first).
HUB_POINT = (0.65, 0.0, 1.0)
# A target further behind its piece's front face than this is inside the piece (not a handle on
# its face): reached level, the base stands `level_front_m` out of the face, and the level
# approach starts FACE_MARGIN_M in front of the face (not inside the piece's frame).
ON_FACE_M = 0.03
FACE_MARGIN_M = 0.03
# The lowest a level place goes in (base frame z, m): lower, straight lines out of the carry pose
# leave the IK's branch (measured on the Fetch's URDF: to 0.67 m ahead at 0.9 m they jumped, and
# the joint-space fallback swept the elbow into the fridge's door; at 1.0 m every segment of a
# place 0.12-0.32 m into the fridge, 0.15 m to either side, stays within 0.35 rad between points);
# a release below it is reached straight down from over the spot.
LEVEL_ENTRY_M = 1.0
# ... and the nearest the base it starts (base frame x, m): measured from the carry pose, straight
# lines to level points at 0.93 m jump branches at 0.55-0.65 m ahead, not at 0.7 m; the deepest
# spots start 0.67 m ahead and work. A held object reaching past the fingertips moves the base back.
LEVEL_START_M = 0.67
STRAIGHT_STEP_M = 0.04
TRANSIT_STEP_M = 0.1  # ... on the way from where the arm is to a motion's first waypoint
TURN_STEP_RAD = 0.3  # ... and at most this much turn of the gripper between IK points
BACK_OUT_SPEED_RAD_S = 0.6  # the fastest joint's speed while retracing a path
JOINT_SPEED_RAD_S = 0.8  # the fastest joint's speed between IK points (Fetch's arm: ~1.2-2.3 rad/s)
FINGER_MARGIN_M = 0.006  # each side between an object and the open fingers that straddle it
JUMP_RAD = 0.5  # a joint turning more than this between IK points 4 cm apart: another branch
# The base's front edge from a piece's front (m): base_link's centre no nearer than this (the
# Fetch's base is a 0.56 m circle) when a target deep in the piece pulls it in.
FRONT_CLEARANCE_M = 0.4


def across(grasp_yaw: float, toward: np.ndarray) -> np.ndarray:
    """The horizontal `toward` vector (see tip_frame) that closes the fingers along the heading
    `grasp_yaw` (the object's narrow side, base frame; either sense), the one nearer the
    direction to the object (less wrist roll)."""
    t = np.array([math.sin(grasp_yaw), -math.cos(grasp_yaw), 0.0])
    return t if float(t @ toward) >= 0 else -t


def tip_frame(approach: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """The gripper's frame (columns x, y, z in the base frame) for an approach along `approach`,
    the object lying along the horizontal unit vector `toward` from the base: x (the fingers'
    direction) along the approach, y (the fingers' closing axis) level, across `toward`."""
    x = approach / float(np.linalg.norm(approach))
    y = np.cross([0.0, 0.0, 1.0], toward)
    y = y / float(np.linalg.norm(y))
    return np.column_stack([x, y, np.cross(x, y)])


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
        self._carry: tuple[float, ...] | None = None
        # where the planned motions leave the gripper (base frame: point, frame, joints), None
        # while unknown (the arm tucked at the start, or after a motion that failed)
        self._at: tuple[np.ndarray, np.ndarray, tuple[float, ...]] | None = None
        self._action_start: tuple[np.ndarray, np.ndarray, tuple[float, ...]] | None = None  # ... as an action began

    # -- base and head --------------------------------------------------------------------------

    def standoff(self, target: Vec3, base: BasePose | None, front: BasePose | None = None,
                 reach: float = 0.0) -> tuple[Vec3, float]:
        """Where the base stops for an object at `target` (map) and its heading: in front of
        `front` (the front face's centre of the piece holding it, heading out of it) when known,
        square to that face, at least FRONT_CLEARANCE_M out of it (`level_front_m` out of it for a
        target inside the piece that the arm reaches level, and far enough that the level approach
        starts LEVEL_START_M ahead of the base with the held object, reaching `reach` past the
        fingertips, FACE_MARGIN_M out of the face);
        else on the line from the robot."""
        d = self.profile.base.standoff_m
        if front is not None:
            out = np.array([math.cos(front.yaw), math.sin(front.yaw)])
            behind = float((np.array([front.x, front.y]) - np.array(target[:2])) @ out)
            level = self.profile.base.level_front_m
            if level is not None and target[2] >= TOP_DOWN_BELOW_M and behind > ON_FACE_M:
                d = behind + max(min(level, self.profile.base.level_reach_m - behind),
                                 LEVEL_START_M + reach + FACE_MARGIN_M if reach > 0 else 0.0)
            away = behind + max(d - behind, FRONT_CLEARANCE_M)
            yaw = front.yaw + math.pi - self.profile.base.facing_rad
            return ((target[0] + away * out[0], target[1] + away * out[1], 0.0),
                    math.atan2(math.sin(yaw), math.cos(yaw)))
        ox, oy = target[0], target[1]
        fx, fy = (base.x, base.y) if base is not None else (0.0, 0.0)
        bearing = math.atan2(oy - fy, ox - fx) if (ox, oy) != (fx, fy) else 0.0
        yaw = bearing - self.profile.base.facing_rad
        return (ox - d * math.cos(bearing), oy - d * math.sin(bearing), 0.0), math.atan2(math.sin(yaw), math.cos(yaw))

    def navigate(self, target: Vec3, base: BasePose | None, front: BasePose | None = None,
                 reach: float = 0.0) -> list[Step]:
        """The arm to its carry pose first (IK mode, with a kinematic model: a manipulation
        leaves it out in front, where driving would sweep it into furniture), then the base,
        then the head at the target: the robot arrives looking at what it came for (AI2-THOR's
        NavigateToObject leaves the object in view, and a planner asks whether it is visible)."""
        position, yaw = self.standoff(target, base, front, reach)
        self.begin_action()
        goal = NavigateGoal(self.profile.base.navigate_action, self.profile.base.map_frame, position, yaw,
                            self.profile.timeouts.navigate_s)
        arrived = BasePose(position[0], position[1], yaw)
        return self.carry() + [Step(goal, "drive to the stand-off pose")] + self.look_at(target, arrived)

    def _carry_joints(self) -> tuple[float, ...] | None:
        """The arm's joints in the carry pose (solved once): the seed of a manipulation's first
        waypoint, so that its solution stays close to the pose the arm starts from (elbow up,
        not swung down through the furniture in front)."""
        if self.kinematics is None:
            return None
        if self._carry is None:
            frame = tip_frame(np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]))
            self._carry = self._carry_from_hub(frame) or \
                self.kinematics.solve(CARRY_POINT, None, orientation=frame) or ()
        return self._carry or None

    def _carry_from_hub(self, frame: np.ndarray) -> tuple[float, ...] | None:
        """The carry pose's joints at the end of a straight line from HUB_POINT (see there);
        None when the line fails or jumps branches."""
        assert self.kinematics is not None
        hub = self._solve(np.array(HUB_POINT), None, frame)
        if hub is None:
            return None
        start = (np.array(HUB_POINT), frame, hub)
        try:
            points = self._straight(start, np.array(CARRY_POINT), frame, "carry pose", STRAIGHT_STEP_M)
        except Unreachable:
            return None
        return None if _jumps(start, points) else points[-1][0]

    def carry(self) -> list[Step]:
        """The arm to CARRY_POINT (none without a kinematic model, with MoveIt, or when the robot's
        model has no solution for that point: the robot then drives with its arm as it is, as it
        did before the carry step existed)."""
        if self.profile.arm.mode != "ik" or self.kinematics is None or self._carry_joints() is None:
            return []
        ahead = np.array([1.0, 0.0, 0.0])
        if self._at is not None and float(np.linalg.norm(self._at[0] - np.array(CARRY_POINT))) < 1e-6 \
                and np.allclose(self._at[1], tip_frame(ahead, ahead)):
            return []  # already there
        return self.arm_path([(np.array(CARRY_POINT), "carry pose")], ahead)

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

    def gripper(self, opening: bool, *, grasp: bool = False, width: float | None = None) -> Step:
        """Open (to `width` and a margin each side when given: not into an object's
        neighbours) or close the gripper."""
        g = self.profile.gripper
        position = g.open_position if opening else g.closed_position
        if opening and width is not None and g.mode == "command":
            position = min(g.open_position, width + 2 * FINGER_MARGIN_M)
        why = "open the gripper" if opening else ("close the gripper on the object" if grasp else "close the gripper")
        if g.mode == "command":
            return Step(GripperGoal(g.action, position, g.max_effort, self.profile.timeouts.gripper_s, grasp), why)
        start = g.closed_position if opening else g.open_position
        goal = TrajectoryGoal(g.action, g.joints, (((start,) * len(g.joints), 0.0),
                                                   ((position,) * len(g.joints), 1.0)),
                              self.profile.timeouts.gripper_s, "gripper")
        return Step(goal, why)

    def arm_path(self, waypoints: list[tuple[np.ndarray, str]], approach: np.ndarray,
                 toward: np.ndarray | None = None, *, transit: bool = True) -> list[Step]:
        """Arm goals through `waypoints` (base frame) with the gripper along `approach` (level
        fingers across `toward`, the horizontal direction to the object; default: the approach)."""
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
        frame = tip_frame(approach, approach if toward is None else toward)
        steps: list[Step] = []
        at = self._at
        for point, why in waypoints:
            points: list[tuple[tuple[float, ...], float]] = []
            if at is not None and (steps or not transit):  # `transit`: the first waypoint is reached through free space
                points = self._straight(at, point, frame, why, STRAIGHT_STEP_M)
            else:  # the first waypoint: a straight line from where the arm is when the IK finds
                # one (coarser: it leaves free space), else as the joints go
                try:
                    points = self._straight(at, point, frame, why, TRANSIT_STEP_M) if at is not None else []
                except Unreachable:
                    points = []
                if not points or _jumps(at, points):
                    solution = self._solve(point, at[2] if at is not None else self._carry_joints(), frame)
                    if solution is None:
                        raise self._no_solution(why, point)
                    points = self.timed(at[2], [solution], arm.move_s) if at is not None else [(solution, arm.move_s)]
            at = (point, frame, points[-1][0])
            steps.append(Step(TrajectoryGoal(arm.trajectory_action, arm.joints, tuple(points),
                                             self.profile.timeouts.arm_s, "arm"), why))
        self._at = at
        return steps

    def _straight(self, start: tuple[np.ndarray, np.ndarray, tuple[float, ...]], point: np.ndarray,
                  frame: np.ndarray, why: str, step_m: float) -> list[tuple[tuple[float, ...], float]]:
        """IK points along the straight line from `start` (point, frame, joints) to `point`, the
        gripper turning evenly from the start's frame to `frame` (spherical interpolation)."""
        from scipy.spatial.transform import Slerp

        origin, turned, seed = start
        turn = Rotation.from_matrix(frame) * Rotation.from_matrix(turned).inv()
        count = max(1, int(math.ceil(float(np.linalg.norm(point - origin)) / step_m)),
                    int(math.ceil(turn.magnitude() / TURN_STEP_RAD)))
        slerp = Slerp([0.0, 1.0], Rotation.from_matrix(np.stack([turned, frame])))
        solutions: list[tuple[float, ...]] = []
        joints: tuple[float, ...] | None = seed
        for i in range(1, count + 1):
            along = origin + (point - origin) * i / count
            joints = self._solve(along, joints, slerp([i / count]).as_matrix()[0])
            if joints is None:
                raise self._no_solution(why, along)
            solutions.append(joints)
        return self.timed(seed, solutions, self.profile.arm.move_s / count)

    @staticmethod
    def timed(start: tuple[float, ...], solutions: list[tuple[float, ...]], least_s: float
              ) -> list[tuple[tuple[float, ...], float]]:
        """Trajectory points through `solutions` from `start`: each at least `least_s` after the
        one before, and no joint faster than JOINT_SPEED_RAD_S (an IK solution that jumps, or a
        long joint-space move, gets the time a real arm needs to follow it)."""
        points: list[tuple[tuple[float, ...], float]] = []
        t, previous = 0.0, np.array(start)
        for joints in solutions:
            t += max(least_s, float(np.max(np.abs(np.array(joints) - previous))) / JOINT_SPEED_RAD_S)
            points.append((joints, round(t, 4)))
            previous = np.array(joints)
        return points

    def _no_solution(self, why: str, point: np.ndarray) -> Unreachable:
        return Unreachable(f"no inverse kinematics solution for {why} at ({point[0]:.2f}, {point[1]:.2f}, "
                           f"{point[2]:.2f}) in {self.profile.arm.root_link}")

    def arm_lost(self) -> None:
        """An arm goal failed: where the gripper is is no longer known."""
        self._at = None

    def begin_action(self) -> None:
        """An action's goals are about to be planned: where back_out returns to."""
        self._action_start = self._at

    def back_out(self, sent: list[Step]) -> list[Step]:
        """One trajectory retracing, in reverse, the joint path of the arm goals `sent` in the
        current action (the last one the goal that failed) back to where the action started: the
        way the arm came in is free. The failed goal's own points are skipped (the arm stopped
        somewhere short of them): the retrace starts at the point that goal started from. Nothing
        when there is no path to retrace."""
        arm = self.profile.arm
        start = self._action_start
        goals = [step.goal for step in sent if isinstance(step.goal, TrajectoryGoal) and step.goal.purpose == "arm"]
        path = ([start[2]] if start is not None else []) + [p for goal in goals[:-1] for p, _ in goal.points]
        if not path:
            return []
        points: list[tuple[tuple[float, ...], float]] = []
        t, previous = 0.0, np.array(goals[-1].points[-1][0]) if goals else np.array(path[-1])
        for joints in path[::-1]:
            t += max(0.05, float(np.max(np.abs(np.array(joints) - previous))) / BACK_OUT_SPEED_RAD_S)
            points.append((joints, t))
            previous = np.array(joints)
        return [Step(TrajectoryGoal(arm.trajectory_action, arm.joints, tuple(points), self.profile.timeouts.arm_s,
                                    "arm"), "back out the way the arm came")]

    def backed_out(self) -> None:
        """The back-out reached where the action started."""
        self._at = self._action_start

    def _solve(self, point: np.ndarray, seed: tuple[float, ...] | None, frame: np.ndarray) -> tuple[float, ...] | None:
        """IK for the tip at `point` turned as `frame`, from the previous waypoint's solution (a
        short, continuous motion), else from the kinematics' own starting poses."""
        assert self.kinematics is not None
        # the whole frame; an arm of fewer than six joints cannot turn its tip at will: the
        # fingers' direction, else the position only
        ways: list[dict[str, object]] = [{"orientation": frame}] if len(self.kinematics.joints) >= 6 else \
            [{"axis": frame[:, 0]}, {}]
        for turned in ways:
            for start in ([seed, None] if seed is not None else [None]):
                solution = self.kinematics.solve(_vec(point), start, **turned)  # type: ignore[arg-type]
                if solution is not None:
                    return solution
        return None

    def _reachable(self, candidates: list[np.ndarray], approach: np.ndarray, toward: np.ndarray) -> np.ndarray:
        """The first of `candidates` the arm reaches turned for `approach` (the first one when
        there is no kinematic model to ask: MoveIt plans it)."""
        if self.kinematics is None or self.profile.arm.mode != "ik":
            return candidates[0]
        frame = tip_frame(approach, toward)
        return next((c for c in candidates if self._solve(c, None, frame) is not None), candidates[0])

    def _approach_m(self, skill: str, p: np.ndarray, approach: np.ndarray, base: BasePose,
                    front: BasePose | None, from_above: bool, reach: float) -> float:
        """How far before the target the straight approach starts: `pregrasp_m`, or for a level
        pick or place inside a piece (front known), from FACE_MARGIN_M in front of its face (what
        the hand holds, reaching `reach` past the fingertips, too)."""
        pregrasp = self.profile.arm.pregrasp_m
        if from_above or front is None or skill not in ("pick", "place"):
            return pregrasp
        face = base.to_base((front.x, front.y, 0.0))
        return max(pregrasp, float((p[:2] - face[:2]) @ approach[:2]) + FACE_MARGIN_M + reach)

    def manipulate(self, skill: str, target: Vec3, base: BasePose, front: BasePose | None = None,
                   grasp_yaw: float | None = None, grasp_width: float | None = None, reach: float = 0.0
                   ) -> list[Step]:
        """The goals of a manipulation of the object at `target` (map); Unreachable when the
        arm cannot get there from `base` (nothing is planned then). Picks and places below
        TOP_DOWN_BELOW_M come from above (the fingers closing along `grasp_yaw`, the heading of
        the object's narrow side in `map`, when known); the rest, and doors and switches, level
        from the side, square into `front` (the holding piece's front face) when known. `reach`:
        how far a held object reaches past the fingertips (a level place starts with it out of the
        piece's face)."""
        self.begin_action()
        try:
            return self._manipulate(skill, target, base, front, grasp_yaw, grasp_width, reach)
        except Unreachable:
            self._at = self._action_start
            raise

    def _manipulate(self, skill: str, target: Vec3, base: BasePose, front: BasePose | None,
                    grasp_yaw: float | None, grasp_width: float | None, reach: float) -> list[Step]:
        arm = self.profile.arm
        p = base.to_base(target)
        toward = np.array([p[0], p[1], 0.0])
        if front is not None:  # square into the piece's front
            toward = -np.array([math.cos(front.yaw - base.yaw), math.sin(front.yaw - base.yaw), 0.0])
        norm = float(np.linalg.norm(toward))
        toward = toward / norm if norm > 1e-6 else np.array([1.0, 0.0, 0.0])
        from_above = skill in ("pick", "place") and target[2] < TOP_DOWN_BELOW_M
        approach = np.array([0.0, 0.0, -1.0]) if from_above else toward
        if from_above and skill == "pick" and grasp_yaw is not None:
            toward = across(grasp_yaw - base.yaw, toward)
        back = p - approach * self._approach_m(skill, p, approach, base, front, from_above, reach)
        up = np.array([0.0, 0.0, arm.place_above_m])
        look = self.look_at(target, base)
        if from_above:  # over at the carry height, down to twice the approach distance above, through once
            clear = p - 2 * approach * arm.pregrasp_m
            over = [(np.array([clear[0], clear[1], CARRY_POINT[2]]), "over the piece")] \
                if clear[2] < CARRY_POINT[2] - STRAIGHT_STEP_M else []
            ways = over + [(clear, "above, clear of the walls"), (back, "pre-grasp")]
        else:
            ways = [(back, "pre-grasp")]
        if skill == "pick":
            lift = [(back, "lift"), (clear, "lift clear")] + over[:1] if from_above \
                else [(back + up, "lift and retreat")]
            opening = self.gripper(True, width=grasp_width if from_above else None)
            return look + [opening] + self.arm_path(ways + [(p, "grasp")], approach, toward) + \
                [self.gripper(False, grasp=True)] + self.arm_path(lift, approach, toward, transit=False)
        if skill == "place":
            release = p + up
            if from_above:
                above = over[:1] + [(release + np.array([0.0, 0.0, arm.pregrasp_m]), "above the receptacle")]
            else:  # level, in at LEVEL_ENTRY_M at least (lower, the IK leaves its branch), then down
                entry = np.array([0.0, 0.0, max(0.0, LEVEL_ENTRY_M - release[2])])
                above = [(self._reachable([back + up + entry + np.array([0.0, 0.0, dz])
                                           for dz in (0.0, 0.06, 0.12, -0.06)], approach, toward),
                          "above the receptacle, back")]
                above += [(above[0][0] + (p - back), "over the spot")] if entry[2] > 0 else []
            retreat = above[::-1][:1] if from_above else above[::-1]
            return look + self.arm_path(above + [(release, "release pose")], approach, toward) + \
                [self.gripper(True)] + self.arm_path(retreat, approach, toward, transit=False)
        if skill in ("open", "close"):
            # open: pull the handle back to where the hand came from; close: push it in half the
            # approach further; then let go and back off to where the hand came from
            swing = back if skill == "open" else p + approach * arm.pregrasp_m / 2
            away = back  # reached before: a solution near the one the hand comes from
            return look + [self.gripper(True)] + self.arm_path([(back, "before the handle"), (p, "the handle")],
                                                               approach) + \
                [self.gripper(False, grasp=True)] + self.arm_path([(swing, f"{skill} the door")], approach,
                                                                  transit=False) + \
                [self.gripper(True)] + self.arm_path([(away, "retreat")], approach, transit=False)
        if skill in ("toggle_on", "toggle_off"):
            return look + [self.gripper(False)] + self.arm_path([(back, "before the switch"), (p, "press the switch"),
                                                                 (back, "retreat")], approach)
        raise ValueError(f"not a manipulation: {skill!r} (known: {', '.join(MANIPULATIONS)})")


def _jumps(start: tuple[np.ndarray, np.ndarray, tuple[float, ...]] | None,
           points: list[tuple[tuple[float, ...], float]]) -> bool:
    """Whether consecutive IK solutions along a straight line jump (the solver found another
    branch): such a "straight" line is not one for the elbow."""
    previous = np.array(start[2]) if start is not None else None
    for joints, _ in points:
        if previous is not None and float(np.max(np.abs(np.array(joints) - previous))) > JUMP_RAD:
            return True
        previous = np.array(joints)
    return False


def _vec(point: np.ndarray) -> Vec3:
    return (float(point[0]), float(point[1]), float(point[2]))
