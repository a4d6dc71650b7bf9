"""Every standard result a robot goal can end with, mapped to a blocking condition BCR understands.

One table (`TABLE`) from (goal type, result) to (condition, meaning): Nav2's NavigateToPose
(per distribution: humble's result has no code; jazzy's carries the failing behaviour-tree node's
code: FollowPath 100-107, ComputePathToPose 200-208; kilted adds the navigator's own 9000-9003),
MoveIt's MoveItErrorCodes, FollowJointTrajectory's error_code, GripperCommand's stalled /
reached_goal, and the action-level outcomes every type shares (rejected, aborted, timed out,
server missing, stopped). `failure_of` turns one goal's outcome into a `Failure`: its condition
is the action's `errorCode` (the world's blocking condition), its message the `errorMessage`,
worded so that the BCR domain's `on_error` strings match it ("obstructed", "not visible", "too
far away"), the same words the symbolic world uses for the same condition.

Conditions that are not BCR's: `WorldUnavailable` (a server missing, the robot's configuration not
matching the profile, a run-stop: no other action can succeed, the planner stops) and
`robot_fault` / `robot_timeout` (the action failed for a reason no resolution fixes; the reason
is the message).
"""
from __future__ import annotations

from dataclasses import dataclass

from task_learning.robot.goals import GoalOutcome, GripperGoal, RobotGoal, TrajectoryGoal
from task_learning.world.backend import WORLD_UNAVAILABLE

NOT_NEAR = "not_near"
NOT_REACHABLE = "not_reachable"
NOT_VISIBLE = "not_visible"
HAND_FULL = "hand_full"
NOT_HOLDING = "not_holding"
RECEPTACLE_CLOSED = "receptacle_closed"
ALREADY_OPEN = "already_open"
ALREADY_CLOSED = "already_closed"
ROBOT_FAULT = "robot_fault"
ROBOT_TIMEOUT = "robot_timeout"

# The words each condition's message carries, so that the BCR domain's on_error strings (and a
# reader) recognise it; the symbolic world's messages use the same.
WORDS = {
    NOT_NEAR: "is too far away to be interacted with",
    NOT_REACHABLE: "is obstructed (not interactable from here)",
    NOT_VISIBLE: "is not visible",
    HAND_FULL: "the hand is full",
    NOT_HOLDING: "the hand holds nothing",
    RECEPTACLE_CLOSED: "is closed",
    ALREADY_OPEN: "is already open",
    ALREADY_CLOSED: "is already closed",
    ROBOT_FAULT: "the robot reported a fault",
    ROBOT_TIMEOUT: "did not finish in time",
    WORLD_UNAVAILABLE: "the robot cannot act",
}


@dataclass(frozen=True)
class Row:
    goal: str        # navigate | move_group | trajectory | gripper | point_head | any
    result: str      # how the standard result reads ("error_code 206 GOAL_OCCUPIED", "status rejected")
    condition: str
    meaning: str


@dataclass(frozen=True)
class Failure:
    condition: str
    message: str


# Nav2: the codes a NavigateToPose result carries (jazzy, kilted; humble: none).
NAV_CODES: dict[int, tuple[str, str, str]] = {
    100: ("FollowPath UNKNOWN", NOT_NEAR, "the controller failed"),
    101: ("FollowPath INVALID_CONTROLLER", WORLD_UNAVAILABLE, "Nav2's controller id does not exist"),
    102: ("FollowPath TF_ERROR", ROBOT_FAULT, "no transform while following the path"),
    103: ("FollowPath INVALID_PATH", NOT_REACHABLE, "the path is invalid"),
    104: ("FollowPath PATIENCE_EXCEEDED", NOT_REACHABLE, "the base waited too long at an obstacle"),
    105: ("FollowPath FAILED_TO_MAKE_PROGRESS", NOT_REACHABLE, "the base made no progress"),
    106: ("FollowPath NO_VALID_CONTROL", NOT_REACHABLE, "no collision-free command"),
    107: ("FollowPath CONTROLLER_TIMED_OUT", NOT_NEAR, "the controller timed out"),
    200: ("ComputePathToPose UNKNOWN", NOT_NEAR, "the planner failed"),
    201: ("ComputePathToPose INVALID_PLANNER", WORLD_UNAVAILABLE, "Nav2's planner id does not exist"),
    202: ("ComputePathToPose TF_ERROR", ROBOT_FAULT, "no transform for planning"),
    203: ("ComputePathToPose START_OUTSIDE_MAP", ROBOT_FAULT, "the robot is not localised in the map"),
    204: ("ComputePathToPose GOAL_OUTSIDE_MAP", NOT_REACHABLE, "the stand-off pose is outside the map"),
    205: ("ComputePathToPose START_OCCUPIED", NOT_REACHABLE, "the robot stands in an obstacle"),
    206: ("ComputePathToPose GOAL_OCCUPIED", NOT_REACHABLE, "the stand-off pose is occupied"),
    207: ("ComputePathToPose TIMEOUT", NOT_NEAR, "planning timed out"),
    208: ("ComputePathToPose NO_VALID_PATH", NOT_REACHABLE, "no path to the stand-off pose"),
    9000: ("NavigateToPose UNKNOWN", NOT_NEAR, "navigation failed"),
    9001: ("NavigateToPose FAILED_TO_LOAD_BEHAVIOR_TREE", WORLD_UNAVAILABLE, "Nav2 cannot load its behaviour tree"),
    9002: ("NavigateToPose TF_ERROR", ROBOT_FAULT, "no transform for navigation"),
    9003: ("NavigateToPose TIMEOUT", NOT_NEAR, "navigation timed out (kilted)"),
}

MOVEIT_CODES: dict[int, tuple[str, str, str]] = {
    99999: ("FAILURE", ROBOT_FAULT, "MoveIt failed"),
    -1: ("PLANNING_FAILED", NOT_NEAR, "no plan reaches the object"),
    -2: ("INVALID_MOTION_PLAN", NOT_REACHABLE, "the plan became invalid"),
    -3: ("MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE", NOT_REACHABLE, "something moved into the way"),
    -4: ("CONTROL_FAILED", ROBOT_FAULT, "the controllers failed to execute the plan"),
    -5: ("UNABLE_TO_AQUIRE_SENSOR_DATA", ROBOT_FAULT, "no sensor data"),
    -6: ("TIMED_OUT", ROBOT_TIMEOUT, "MoveIt timed out"),
    -7: ("PREEMPTED", ROBOT_FAULT, "the motion was preempted"),
    -10: ("START_STATE_IN_COLLISION", NOT_REACHABLE, "the arm starts in collision"),
    -11: ("START_STATE_VIOLATES_PATH_CONSTRAINTS", ROBOT_FAULT, "the start violates the constraints"),
    -12: ("GOAL_IN_COLLISION", NOT_REACHABLE, "the grasp pose is in collision"),
    -13: ("GOAL_VIOLATES_PATH_CONSTRAINTS", NOT_NEAR, "the goal violates the path constraints"),
    -14: ("GOAL_CONSTRAINTS_VIOLATED", NOT_NEAR, "the goal cannot be met"),
    -15: ("INVALID_GROUP_NAME", WORLD_UNAVAILABLE, "the profile's planning group is unknown to MoveIt"),
    -16: ("INVALID_GOAL_CONSTRAINTS", ROBOT_FAULT, "the goal's constraints are invalid"),
    -17: ("INVALID_ROBOT_STATE", ROBOT_FAULT, "the robot state is invalid"),
    -18: ("INVALID_LINK_NAME", WORLD_UNAVAILABLE, "the profile's tip link is unknown to MoveIt"),
    -19: ("INVALID_OBJECT_NAME", ROBOT_FAULT, "an object name is invalid"),
    -21: ("FRAME_TRANSFORM_FAILURE", ROBOT_FAULT, "a frame could not be transformed"),
    -22: ("COLLISION_CHECKING_UNAVAILABLE", ROBOT_FAULT, "no collision checking"),
    -23: ("ROBOT_STATE_STALE", ROBOT_FAULT, "the robot state is stale"),
    -24: ("SENSOR_INFO_STALE", ROBOT_FAULT, "sensor data is stale"),
    -25: ("COMMUNICATION_FAILURE", ROBOT_FAULT, "MoveIt lost a connection"),
    -26: ("START_STATE_INVALID", ROBOT_FAULT, "the start state is invalid"),
    -27: ("GOAL_STATE_INVALID", NOT_NEAR, "the goal state is invalid"),
    -28: ("UNRECOGNIZED_GOAL_TYPE", ROBOT_FAULT, "MoveIt does not know the goal type"),
    -29: ("CRASH", ROBOT_FAULT, "MoveIt crashed"),
    -30: ("ABORT", ROBOT_FAULT, "MoveIt aborted"),
    -31: ("NO_IK_SOLUTION", NOT_NEAR, "no inverse kinematics solution"),
}
MOVEIT_SUCCESS = 1

TRAJECTORY_CODES: dict[int, tuple[str, str, str]] = {
    -1: ("INVALID_GOAL", ROBOT_FAULT, "the controller refused the trajectory"),
    -2: ("INVALID_JOINTS", WORLD_UNAVAILABLE, "the profile's joints are not the controller's"),
    -3: ("OLD_HEADER_TIMESTAMP", ROBOT_FAULT, "the trajectory's stamp is old (clocks differ: use_sim_time?)"),
    -4: ("PATH_TOLERANCE_VIOLATED", NOT_REACHABLE, "a joint left its path (blocked)"),
    -5: ("GOAL_TOLERANCE_VIOLATED", NOT_REACHABLE, "a joint did not reach its goal (blocked)"),
}

# What a failed look (head trajectory or PointHead) or torso move means, by part, where the code
# itself does not say (a blocked head means the object could not be looked at).
PART_CONDITION = {"head": NOT_VISIBLE, "point_head": NOT_VISIBLE, "arm": NOT_NEAR, "move_group": NOT_NEAR,
                  "navigate": NOT_NEAR, "torso": ROBOT_FAULT, "gripper": ROBOT_FAULT}
REJECTED_CONDITION = {"navigate": NOT_REACHABLE, "head": NOT_VISIBLE, "point_head": NOT_VISIBLE,
                      "arm": NOT_NEAR, "move_group": NOT_NEAR, "torso": ROBOT_FAULT, "gripper": ROBOT_FAULT}


def part_of(goal: RobotGoal) -> str:
    if isinstance(goal, TrajectoryGoal):
        return goal.purpose
    return goal.kind


def _say(subject: str, condition: str, detail: str) -> Failure:
    return Failure(condition, f"{subject} {WORDS[condition]}: {detail}")


def failure_of(goal: RobotGoal, outcome: GoalOutcome, *, subject: str, distro: str = "kilted",
               holding_min: float = 0.0) -> Failure | None:
    """None when `outcome` is a success of `goal`; else the blocking condition and the message
    (naming `subject`, the object acted on, and the standard result)."""
    part = part_of(goal)
    server = f"{goal.server} ({goal.type.rsplit('/', 1)[-1]})"
    status = outcome.status
    if status == "server_missing":
        return _say(subject, WORLD_UNAVAILABLE, f"no action server {server}")
    if status == "stopped":
        return _say(subject, WORLD_UNAVAILABLE, outcome.message or "motion is stopped")
    if status == "timeout":
        return _say(subject, ROBOT_TIMEOUT, f"{server} did not finish within {goal.timeout_s:g} s (cancelled)")
    if status == "rejected":
        return _say(subject, REJECTED_CONDITION[part], f"{server} rejected the goal")
    if status == "canceled":
        return _say(subject, ROBOT_FAULT, f"{server} cancelled the goal")
    table = {"navigate": NAV_CODES, "move_group": MOVEIT_CODES}.get(goal.kind, TRAJECTORY_CODES)
    code = outcome.code
    if isinstance(goal, GripperGoal):
        return _gripper_failure(goal, outcome, subject, server, holding_min)
    if isinstance(goal, TrajectoryGoal) and goal.purpose == "gripper" and status == "succeeded":
        return None  # a trajectory gripper has no stall report: a grasp's success is what the camera sees next
    if isinstance(goal, TrajectoryGoal) and goal.purpose == "gripper" and code == -5 and _closing(goal):
        return None  # fingers stopped before the closed position: they hold something
    success_code = MOVEIT_SUCCESS if goal.kind == "move_group" else 0
    if status == "succeeded" and code in (None, success_code):
        return None
    if goal.kind == "navigate" and distro == "humble":
        code = None  # humble's NavigateToPose result has no code
    if code is not None and code != success_code:
        name, condition, why = table.get(code, (f"code {code}", PART_CONDITION[part], "unlisted code"))
        if part in ("head", "point_head") and condition in (NOT_REACHABLE, NOT_NEAR):
            condition = NOT_VISIBLE
        detail = f"{server} {name}: {why}" + (f" ({outcome.message})" if outcome.message else "")
        return _say(subject, condition, detail)
    return _say(subject, PART_CONDITION[part], f"{server} {status}" + (f": {outcome.message}" if outcome.message else ""))


def _closing(goal: TrajectoryGoal) -> bool:
    return bool(goal.points) and goal.points[-1][0][0] <= goal.points[0][0][0]


def _gripper_failure(goal: GripperGoal, outcome: GoalOutcome, subject: str, server: str,
                     holding_min: float) -> Failure | None:
    """GripperCommand: a grasp holds when the fingers stalled or stopped wider than
    `holding_min`; a grasp that closed fully (reached_goal below it) missed. A release succeeds
    when it reached its goal or stalled at least half open."""
    if outcome.gripper is None:
        return _say(subject, ROBOT_FAULT, f"{server} {outcome.status} with no result")
    position, stalled, reached = outcome.gripper
    if goal.grasp:
        if stalled or position >= holding_min:
            return None
        return _say(subject, NOT_REACHABLE, f"{server} closed on nothing (position {position:.3f}, "
                                            f"reached_goal {reached}): the grasp missed")
    if reached or outcome.status == "succeeded":
        return None
    if stalled and position >= goal.position * 0.5:
        return None
    return _say(subject, ROBOT_FAULT, f"{server} stalled at {position:.3f} while opening")


def table() -> list[Row]:
    """The whole table, for the docs and the tests (docs/fetch.md lists every row)."""
    rows = [Row("any", "server missing", WORLD_UNAVAILABLE, "no action server of the profile's name and type"),
            Row("any", "stopped", WORLD_UNAVAILABLE, "run-stop or the stop service: nothing sent or cancelled"),
            Row("any", "timed out", ROBOT_TIMEOUT, "the profile's timeout passed: the goal is cancelled"),
            Row("any", "cancelled by the robot", ROBOT_FAULT, "the server cancelled the goal")]
    rows += [Row(part, "rejected", cond, "the server refused the goal") for part, cond in REJECTED_CONDITION.items()]
    rows += [Row(part, "aborted, no code", cond, "a result without a code (Nav2 on humble, PointHead, GripperCommand)")
             for part, cond in PART_CONDITION.items()]
    rows += [Row("navigate", f"error_code {c} {n}", cond, why) for c, (n, cond, why) in NAV_CODES.items()]
    rows += [Row("move_group", f"error_code.val {c} {n}", cond, why) for c, (n, cond, why) in MOVEIT_CODES.items()]
    rows += [Row("trajectory", f"error_code {c} {n}", cond, why + (" (a head goal: not_visible)" if cond == NOT_REACHABLE else ""))
             for c, (n, cond, why) in TRAJECTORY_CODES.items()]
    rows += [Row("gripper", "grasp: stalled, or position >= holding_min", "(success)", "the fingers hold something"),
             Row("gripper", "grasp: reached_goal below holding_min", NOT_REACHABLE, "the grasp closed on nothing"),
             Row("gripper", "release: stalled under half open", ROBOT_FAULT, "the fingers did not open"),
             Row("trajectory gripper", "succeeded, or closing with GOAL_TOLERANCE_VIOLATED", "(success)",
                 "no stall report: what the camera sees next decides")]
    return rows
