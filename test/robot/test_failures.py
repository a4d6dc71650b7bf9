"""Every standard result maps to a blocking condition, worded so BCR's error-text rules match it."""
from __future__ import annotations

import pytest

from task_learning.bcr.domain import GroundAction, load_domain
from task_learning.bcr.literals import StateView
from task_learning.robot import failures as f
from task_learning.robot.goals import (
    GoalOutcome,
    GripperGoal,
    MoveGroupGoal,
    NavigateGoal,
    PointHeadGoal,
    TrajectoryGoal,
)
from task_learning.world.backend import WORLD_UNAVAILABLE

NAV = NavigateGoal("navigate_to_pose", "map", (1.0, 0.0, 0.0), 0.0, 60.0)
MOVE = MoveGroupGoal("move_action", "arm", "tool", "base_link", (0.5, 0.0, 0.8), (0, 0, 0, 1), 0.01, 0.3, 30.0)
ARM = TrajectoryGoal("arm_controller/follow_joint_trajectory", ("a",), (((0.1,), 1.0),), 30.0, "arm")
HEAD = TrajectoryGoal("head_controller/follow_joint_trajectory", ("p", "t"), (((0.1, 0.2), 1.0),), 10.0, "head")
POINT = PointHeadGoal("head_controller/point_head", "map", (1, 0, 1), "cam", (0, 0, 1), 1.0, 10.0)
GRASP = GripperGoal("gripper_controller/gripper_action", 0.0, 60.0, 10.0, grasp=True)
RELEASE = GripperGoal("gripper_controller/gripper_action", 0.1, 60.0, 10.0)


def fail(goal, outcome, **kw):
    return f.failure_of(goal, outcome, subject="Mug|1", **kw)


@pytest.mark.parametrize("code,condition", [
    (206, f.NOT_REACHABLE), (208, f.NOT_REACHABLE), (204, f.NOT_REACHABLE), (105, f.NOT_REACHABLE),
    (104, f.NOT_REACHABLE), (107, f.NOT_NEAR), (207, f.NOT_NEAR), (9000, f.NOT_NEAR), (9003, f.NOT_NEAR),
    (203, f.ROBOT_FAULT), (9002, f.ROBOT_FAULT), (9001, WORLD_UNAVAILABLE), (101, WORLD_UNAVAILABLE),
    (4242, f.NOT_NEAR)])
def test_nav2_codes(code, condition):
    failure = fail(NAV, GoalOutcome("aborted", code=code))
    assert failure is not None and failure.condition == condition
    assert failure.message.startswith("Mug|1 ") and "navigate_to_pose (NavigateToPose)" in failure.message


def test_humble_has_no_code_and_success_is_status_alone():
    failure = fail(NAV, GoalOutcome("aborted", code=206), distro="humble")
    assert failure.condition == f.NOT_NEAR and "aborted" in failure.message
    assert fail(NAV, GoalOutcome("succeeded")) is None
    assert fail(NAV, GoalOutcome("succeeded", code=0)) is None


@pytest.mark.parametrize("code,condition", [
    (-31, f.NOT_NEAR), (-1, f.NOT_NEAR), (-12, f.NOT_REACHABLE), (-3, f.NOT_REACHABLE), (-4, f.ROBOT_FAULT),
    (-6, f.ROBOT_TIMEOUT), (-15, WORLD_UNAVAILABLE), (-18, WORLD_UNAVAILABLE), (99999, f.ROBOT_FAULT)])
def test_moveit_codes(code, condition):
    assert fail(MOVE, GoalOutcome("aborted", code=code)).condition == condition
    assert fail(MOVE, GoalOutcome("succeeded", code=1)) is None


@pytest.mark.parametrize("code,arm,head", [
    (-1, f.ROBOT_FAULT, f.ROBOT_FAULT), (-2, WORLD_UNAVAILABLE, WORLD_UNAVAILABLE), (-3, f.ROBOT_FAULT, f.ROBOT_FAULT),
    (-4, f.NOT_REACHABLE, f.NOT_VISIBLE), (-5, f.NOT_REACHABLE, f.NOT_VISIBLE)])
def test_trajectory_codes_by_part(code, arm, head):
    assert fail(ARM, GoalOutcome("aborted", code=code)).condition == arm
    assert fail(HEAD, GoalOutcome("aborted", code=code)).condition == head
    assert fail(ARM, GoalOutcome("succeeded", code=0)) is None


def test_gripper_grasp_holds_or_misses():
    assert fail(GRASP, GoalOutcome("succeeded", gripper=(0.03, True, False)), holding_min=0.005) is None
    assert fail(GRASP, GoalOutcome("aborted", gripper=(0.03, True, False)), holding_min=0.005) is None
    missed = fail(GRASP, GoalOutcome("succeeded", gripper=(0.0, False, True)), holding_min=0.005)
    assert missed.condition == f.NOT_REACHABLE and "closed on nothing" in missed.message
    assert fail(RELEASE, GoalOutcome("succeeded", gripper=(0.1, False, True))) is None
    assert fail(RELEASE, GoalOutcome("aborted", gripper=(0.01, True, False))).condition == f.ROBOT_FAULT


@pytest.mark.parametrize("status,condition", [
    ("server_missing", WORLD_UNAVAILABLE), ("stopped", WORLD_UNAVAILABLE), ("timeout", f.ROBOT_TIMEOUT),
    ("canceled", f.ROBOT_FAULT)])
def test_action_level_outcomes(status, condition):
    for goal in (NAV, MOVE, ARM, HEAD, POINT, GRASP):
        assert fail(goal, GoalOutcome(status)).condition == condition


def test_rejected_by_part():
    assert fail(NAV, GoalOutcome("rejected")).condition == f.NOT_REACHABLE
    assert fail(POINT, GoalOutcome("rejected")).condition == f.NOT_VISIBLE
    assert fail(HEAD, GoalOutcome("rejected")).condition == f.NOT_VISIBLE
    assert fail(MOVE, GoalOutcome("rejected")).condition == f.NOT_NEAR
    assert fail(GRASP, GoalOutcome("rejected")).condition == f.ROBOT_FAULT


def test_bcr_reads_a_robot_obstruction_as_not_reachable():
    """BCR matches a failed action's error text against its domain's on_error words: an arm
    blocked on the way to the mug is the domain's not_reachable (re-approach, search)."""
    domain = load_domain("household")
    message = fail(ARM, GoalOutcome("aborted", code=-4)).message
    state = StateView({"objects": [{"objectId": "Mug|1", "objectType": "Mug", "pickupable": True, "visible": True}]})
    blocked = domain.check_blocking(GroundAction("PickupObject", ("Mug|1",)), state, error_text=message)
    assert blocked is not None and blocked.condition == "not_reachable"


def test_the_table_lists_every_code():
    results = " ".join(row.result for row in f.table())
    for codes in (f.NAV_CODES, f.MOVEIT_CODES, f.TRAJECTORY_CODES):
        for code, (name, _, _) in codes.items():
            assert f"{code} {name}" in results


def test_the_docs_show_the_whole_table():
    """docs/fetch.md's failure table is the code's: every row, as table() prints it."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "fetch.md").read_text()
    for row in f.table():
        assert f"| {row.goal} | {row.result} | `{row.condition}` | {row.meaning} |" in docs, row
