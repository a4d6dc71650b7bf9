"""The base controller behind `navigate_to_pose`: it follows the planner's path
(sim/base_planner.py) leg by leg (turn toward the leg's end, drive straight), then turns to the
goal's heading, with bounded speeds and accelerations; the planar base's servos track that motion
in physics. A goal the planner found no path to ends at once (NO_PATH). A touch between the robot
and anything but the floor aborts the goal (the base stops where it is) when the base's next
motion would push the touching point further into what it touches; motion away from a contact
(backing out of a piece it touched) goes on, as a real base's local planner drives away from an
obstacle it is against; and a goal that starts in contact first backs (or pulls) the base straight
out of it along its heading (`back_out`), as Nav2's BackUp recovery does, so that the turns of the
new path do not sweep what it touches. A base that cannot follow its path (pushed against something) or a goal
not reached in time also aborts. Cancel brakes to a stop."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from task_learning_sim.motion import Ramp

MAX_SPEED_M_S = 0.5
MAX_ACCEL_M_S2 = 0.5
MAX_TURN_RAD_S = 1.0
MAX_TURN_ACCEL_RAD_S2 = 1.5
POSITION_TOLERANCE_M = 0.02
YAW_TOLERANCE_RAD = 0.03
TRACKING_LIMIT_M = 0.08  # the base this far behind its path is stuck
TIMEOUT_MARGIN_S = 10.0
# A goal behind the base and nearer than this is reached backing up, as Nav2's controllers may
# reverse (Regulated Pure Pursuit's allow_reversing): the way out of a piece the robot drove up to.
REVERSE_WITHIN_M = 1.0
BACK_OUT_M = 0.15  # how far a goal that starts in contact first backs out of it
INTO_CONTACT_M = 1e-6  # a touching point moving this far a tick toward what it touches: a collision
# A touch: the contact point (x, y) and the horizontal normal (nx, ny) from the robot toward
# what it touches, in odom.
Contact = tuple[float, float, float, float]


class NavOutcome(Enum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    CANCELED = "canceled"
    COLLISION = "collision"
    STUCK = "stuck"
    TIMEOUT = "timeout"
    NO_PATH = "no_path"


# Nav2's result codes for the outcomes that abort a goal: FollowPath NO_VALID_CONTROL (106) and
# FAILED_TO_MAKE_PROGRESS (105), ComputePathToPose NO_VALID_PATH (208), the navigator's TIMEOUT (9003).
NAV_CODES = {NavOutcome.COLLISION: 106, NavOutcome.STUCK: 105, NavOutcome.NO_PATH: 208, NavOutcome.TIMEOUT: 9003}


def wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


@dataclass
class BaseGoal:
    """One navigation goal (x, y, yaw in `odom`), its path's waypoints after the start (the goal's
    x, y last) and its progress: each leg's turn and drive, then the turn to the goal's heading."""

    x: float
    y: float
    yaw: float
    start: tuple[float, float, float]
    started_at: float
    waypoints: list[tuple[float, float]] = field(default_factory=list)
    leg: int = 0  # the waypoint the base drives toward
    phase: int = 0  # 0 turn toward the leg's end, 1 drive, 2 turn to the goal's heading, 3 settle
    reverse: bool = False  # drive backwards (the goal is close behind)
    ramp: Ramp | None = None
    anchor: tuple[float, float, float] = (0.0, 0.0, 0.0)
    outcome: NavOutcome = NavOutcome.RUNNING
    canceling: bool = False
    deadline: float = field(default=0.0)

    def distance_left(self, pose: tuple[float, float, float]) -> float:
        """Along the path: to the current leg's end, then the legs after it."""
        if not self.waypoints:
            return math.hypot(self.x - pose[0], self.y - pose[1])
        ahead = self.waypoints[self.leg:]
        return math.dist(pose[:2], ahead[0]) + sum(math.dist(a, b) for a, b in zip(ahead, ahead[1:]))


class BaseController:
    """Holds the base's setpoint (x, y, yaw) and moves it along the current goal's path."""

    def __init__(self, pose: tuple[float, float, float]):
        self.setpoint = pose
        self.goal: BaseGoal | None = None

    def start(self, x: float, y: float, yaw: float, pose: tuple[float, float, float], now: float,
              path: list[tuple[float, float]] | None) -> BaseGoal:
        """A new goal along `path` (the planner's waypoints from the base's position to the
        goal's; None: no path, the goal ends NO_PATH at once), replacing any goal in flight
        (which ends canceled)."""
        if self.goal is not None and self.goal.outcome is NavOutcome.RUNNING:
            self.goal.outcome = NavOutcome.CANCELED
        self.setpoint = pose
        goal = BaseGoal(x, y, yaw, pose, now, waypoints=[(float(px), float(py)) for px, py in (path or [])[1:]])
        self.goal = goal
        if path is None:
            goal.outcome = NavOutcome.NO_PATH
            return goal
        if not goal.waypoints:
            goal.waypoints = [(x, y)]
        corners = [pose[:2], *goal.waypoints]
        headings = [math.atan2(b[1] - a[1], b[0] - a[0]) for a, b in zip(corners, corners[1:])]
        turns = sum(abs(wrap(b - a)) for a, b in zip([pose[2], *headings], headings)) + math.pi
        goal.deadline = now + goal.distance_left(pose) / MAX_SPEED_M_S + turns / MAX_TURN_RAD_S + TIMEOUT_MARGIN_S
        return goal

    def cancel(self) -> None:
        if self.goal is not None and self.goal.outcome is NavOutcome.RUNNING:
            self.goal.canceling = True
            if self.goal.ramp is not None:
                self.goal.ramp.brake()

    def tick(self, pose: tuple[float, float, float], contacts: list[Contact], now: float, dt: float) -> None:
        """Advance the setpoint one tick; end the goal on arrival, motion into a contact, lag or
        its deadline."""
        goal = self.goal
        if goal is None or goal.outcome is not NavOutcome.RUNNING:
            return
        before = self.setpoint
        self._advance(goal, pose, now, dt)
        if contacts and goal.outcome is NavOutcome.RUNNING and _into(before, self.setpoint, pose, contacts):
            return self._end(goal, NavOutcome.COLLISION, pose)

    def _advance(self, goal: BaseGoal, pose: tuple[float, float, float], now: float, dt: float) -> None:
        if math.hypot(self.setpoint[0] - pose[0], self.setpoint[1] - pose[1]) > TRACKING_LIMIT_M:
            return self._end(goal, NavOutcome.STUCK, pose)
        if now > goal.deadline:
            return self._end(goal, NavOutcome.TIMEOUT, pose)
        if goal.ramp is None:
            self._next_phase(goal)
        if goal.ramp is not None:
            goal.ramp.tick(dt)
            self.setpoint = self._along(goal)
            if goal.ramp.done():
                goal.ramp = None
                if goal.canceling:
                    return self._end(goal, NavOutcome.CANCELED, pose)
                _next(goal)
        elif goal.canceling:
            return self._end(goal, NavOutcome.CANCELED, pose)
        if goal.phase >= 3 and self._arrived(goal, pose):
            goal.outcome = NavOutcome.SUCCEEDED

    def _next_phase(self, goal: BaseGoal) -> None:
        x, y, yaw = self.setpoint
        goal.anchor = self.setpoint
        to_x, to_y = goal.waypoints[goal.leg] if goal.waypoints else (goal.x, goal.y)
        distance = math.hypot(to_x - x, to_y - y)
        if goal.phase == 0 and distance > POSITION_TOLERANCE_M / 2:
            heading = math.atan2(to_y - y, to_x - x)
            goal.reverse = distance < REVERSE_WITHIN_M and abs(wrap(heading - yaw)) > math.pi / 2
            turn = wrap(heading + math.pi - yaw) if goal.reverse else wrap(heading - yaw)
            goal.ramp = Ramp(0.0, turn, MAX_TURN_RAD_S, MAX_TURN_ACCEL_RAD_S2)
        elif goal.phase == 1 and distance > POSITION_TOLERANCE_M / 2:
            goal.ramp = Ramp(0.0, -distance if goal.reverse else distance, MAX_SPEED_M_S, MAX_ACCEL_M_S2)
        elif goal.phase == 2:
            goal.ramp = Ramp(0.0, wrap(goal.yaw - yaw), MAX_TURN_RAD_S, MAX_TURN_ACCEL_RAD_S2)
        elif goal.phase < 3:
            _next(goal)

    def _along(self, goal: BaseGoal) -> tuple[float, float, float]:
        assert goal.ramp is not None
        x, y, yaw = goal.anchor
        if goal.phase == 1:
            return x + goal.ramp.value * math.cos(yaw), y + goal.ramp.value * math.sin(yaw), yaw
        return x, y, yaw + goal.ramp.value

    def _arrived(self, goal: BaseGoal, pose: tuple[float, float, float]) -> bool:
        return (goal.distance_left(pose) <= POSITION_TOLERANCE_M
                and abs(wrap(goal.yaw - pose[2])) <= YAW_TOLERANCE_RAD)

    def _end(self, goal: BaseGoal, outcome: NavOutcome, pose: tuple[float, float, float]) -> None:
        """End the goal: the base holds where it is now (no push into what it touched)."""
        goal.outcome = outcome
        self.setpoint = pose


def _next(goal: BaseGoal) -> None:
    """The next phase: after a leg's drive the next leg's turn, after the last leg's the turn to
    the goal's heading."""
    goal.phase += 1
    if goal.phase == 2 and goal.leg < len(goal.waypoints) - 1:
        goal.leg += 1
        goal.phase = 0


def back_out(pose: tuple[float, float, float], contacts: list[Contact]) -> tuple[float, float] | None:
    """Where the base goes first when a goal starts with the robot touching something: BACK_OUT_M
    straight back when what it touches is ahead of it (their normals' mean points forward),
    straight on when behind; None when not touching, or when that move would still push a
    touching point in (touched on both sides)."""
    if not contacts:
        return None
    heading = (math.cos(pose[2]), math.sin(pose[2]))
    ahead = sum(nx * heading[0] + ny * heading[1] for _, _, nx, ny in contacts)
    sign = -1.0 if ahead > 0 else 1.0
    after = (pose[0] + sign * BACK_OUT_M * heading[0], pose[1] + sign * BACK_OUT_M * heading[1], pose[2])
    return None if _into(pose, after, pose, contacts) else after[:2]


def _into(before: tuple[float, float, float], after: tuple[float, float, float], pose: tuple[float, float, float],
          contacts: list[Contact]) -> bool:
    """Whether the setpoint's step moves any touching point of the robot (a rigid body turning
    about base_link) toward what it touches."""
    dx, dy, dyaw = after[0] - before[0], after[1] - before[1], wrap(after[2] - before[2])
    for px, py, nx, ny in contacts:
        rx, ry = px - pose[0], py - pose[1]
        if (dx - dyaw * ry) * nx + (dy + dyaw * rx) * ny > INTO_CONTACT_M:
            return True
    return False
