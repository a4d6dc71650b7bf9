"""Every abstract action produces the expected standard goals, for each robot profile."""
from __future__ import annotations

import math

import numpy as np
import pytest

from task_learning.robot.goals import GripperGoal, MoveGroupGoal, NavigateGoal, PointHeadGoal, TrajectoryGoal
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import (
    FACE_MARGIN_M,
    LEVEL_ENTRY_M,
    LEVEL_START_M,
    BasePose,
    SkillSequencer,
    Unreachable,
)
from test.robot.helpers import TEST_URDF

ORIGIN = BasePose(0.0, 0.0, 0.0)


def test_navigate_stops_short_of_the_object_facing_it():
    seq = SkillSequencer(load_profile("fetch"))
    step, look = seq.navigate((3.0, 4.0, 0.8), ORIGIN)
    assert isinstance(look.goal, PointHeadGoal) and look.goal.target == (3.0, 4.0, 0.8)  # arrives looking at it
    goal = step.goal
    assert isinstance(goal, NavigateGoal) and goal.server == "navigate_to_pose" and goal.frame == "map"
    assert math.hypot(3.0 - goal.position[0], 4.0 - goal.position[1]) == pytest.approx(0.65)
    assert goal.yaw == pytest.approx(math.atan2(4.0, 3.0))


def test_stretch_stops_with_the_object_on_its_arm_side():
    seq = SkillSequencer(load_profile("stretch"))
    goal = seq.navigate((2.0, 0.0, 0.8), ORIGIN)[0].goal
    assert goal.yaw == pytest.approx(math.pi / 2, abs=1e-3)  # object to the base's right (-y)
    base = BasePose(goal.position[0], goal.position[1], goal.yaw)
    assert base.to_base((2.0, 0.0, 0.8))[1] == pytest.approx(-0.45)


def test_look_at_uses_point_head_where_there_is_one():
    (step,) = SkillSequencer(load_profile("fetch")).look_at((2.0, 1.0, 0.5), ORIGIN)
    assert isinstance(step.goal, PointHeadGoal) and step.goal.server == "head_controller/point_head"
    assert step.goal.target == (2.0, 1.0, 0.5) and step.goal.frame == "map"


@pytest.mark.parametrize("robot,down_sign", [("tiago", -1), ("stretch", -1)])
def test_look_at_computes_pan_and_tilt_otherwise(robot, down_sign):
    profile = load_profile(robot)
    (step,) = SkillSequencer(profile).look_at((1.0, 1.0, 0.2), BasePose(0.0, 0.0, math.pi / 2))
    goal = step.goal
    assert isinstance(goal, TrajectoryGoal) and goal.purpose == "head"
    assert goal.joints == (profile.head.pan_joint, profile.head.tilt_joint)
    pan, tilt = goal.final
    assert pan < 0  # the base faces +y; the object is to its right
    assert tilt * down_sign > 0  # looking down at an object below the head


def test_look_around_sweeps_every_heading():
    profile = load_profile("fetch")
    steps = SkillSequencer(profile).look_around()
    assert [s.goal.final[0] for s in steps] == list(profile.head.look_around_pans)
    assert all(s.goal.server == "head_controller/follow_joint_trajectory" for s in steps)


def test_pick_with_moveit():
    profile = load_profile("tiago")
    steps = SkillSequencer(profile).manipulate("pick", (0.8, 0.0, 0.8), ORIGIN)
    kinds = [(s.goal.kind, getattr(s.goal, "purpose", "")) for s in steps]
    assert kinds == [("trajectory", "head"), ("trajectory", "gripper"), ("move_group", ""), ("move_group", ""),
                     ("trajectory", "gripper"), ("move_group", "")]
    grasp = steps[3].goal
    assert isinstance(grasp, MoveGroupGoal) and grasp.server == "move_action" and grasp.group == "arm_torso"
    assert grasp.frame == profile.base.base_frame and grasp.position == pytest.approx((0.8, 0.0, 0.8))
    assert steps[1].goal.final == (0.044, 0.044) and steps[4].goal.final == (0.0, 0.0)


def ik_profile():
    fetch = load_profile("fetch")
    arm = fetch.arm.model_copy(update={"joints": ("lift_joint", "shoulder_joint", "elbow_joint"),
                                       "tip_link": "tool_link", "reach_m": 0.9})
    return fetch.model_copy(update={"arm": arm})


def test_pick_with_ik_sends_joint_goals_that_reach_the_waypoints():
    profile = ik_profile()
    kin = ArmKinematics.from_urdf(TEST_URDF, "base_link", "tool_link", profile.arm.joints, tolerance_m=0.01)
    base = BasePose(1.0, 1.0, math.pi / 2)
    target = (1.0, 1.7, 0.8)  # 0.7 m ahead of the base
    steps = SkillSequencer(profile, kin).manipulate("pick", target, base)
    assert isinstance(steps[0].goal, PointHeadGoal)
    assert isinstance(steps[1].goal, GripperGoal) and steps[1].goal.position == profile.gripper.open_position
    arm_goals = [s.goal for s in steps if isinstance(s.goal, TrajectoryGoal) and s.goal.purpose == "arm"]
    assert len(arm_goals) == 3 and all(g.server == profile.arm.trajectory_action for g in arm_goals)
    assert np.linalg.norm(kin.forward(arm_goals[1].final) - np.array([0.7, 0.0, 0.8])) < 0.01
    close = steps[4].goal
    assert isinstance(close, GripperGoal) and close.grasp and close.position == 0.0


def test_an_unreachable_target_sends_nothing():
    profile = ik_profile()
    kin = ArmKinematics.from_urdf(TEST_URDF, "base_link", "tool_link", profile.arm.joints, tolerance_m=0.01)
    with pytest.raises(Unreachable, match="beyond the arm's reach"):
        SkillSequencer(profile, kin).manipulate("pick", (3.0, 0.0, 0.8), ORIGIN)
    with pytest.raises(Unreachable, match="no inverse kinematics solution"):
        SkillSequencer(profile, kin).manipulate("pick", (0.6, 0.0, 1.6), ORIGIN)
    with pytest.raises(Unreachable, match="no kinematic model"):
        SkillSequencer(profile, None).manipulate("pick", (0.6, 0.0, 0.8), ORIGIN)


@pytest.mark.parametrize("skill,grips", [("place", 1), ("open", 3), ("close", 3), ("toggle_on", 1)])
def test_other_manipulations(skill, grips):
    steps = SkillSequencer(load_profile("tiago")).manipulate(skill, (0.7, 0.1, 0.9), ORIGIN)
    assert sum(1 for s in steps if getattr(s.goal, "purpose", "") == "gripper") == grips
    assert any(isinstance(s.goal, MoveGroupGoal) for s in steps)


def test_stretch_gripper_is_a_trajectory_of_its_aperture():
    step = SkillSequencer(load_profile("stretch")).gripper(True)
    assert isinstance(step.goal, TrajectoryGoal) and step.goal.joints == ("gripper_aperture",)
    assert step.goal.server == "/stretch_controller/follow_joint_trajectory"


def test_navigate_with_a_known_front_stands_square_in_front_of_the_piece():
    """Not on the line from the robot: in front of the holding piece's front face (heading out
    along +x here), on the line through the object square to it, facing the piece."""
    seq = SkillSequencer(load_profile("fetch"))
    front = BasePose(2.0, 0.0, 0.0)  # the piece's front face at x = 2, facing +x
    goal = seq.navigate((1.8, 0.3, 0.2), BasePose(4.0, -3.0, 0.0), front)[0].goal
    assert isinstance(goal, NavigateGoal)
    assert goal.position[0] == pytest.approx(1.8 + 0.65) and goal.position[1] == pytest.approx(0.3)
    assert abs(math.remainder(goal.yaw - math.pi, 2 * math.pi)) < 1e-9
    deep = seq.navigate((1.5, 0.0, 0.2), ORIGIN, front)[0].goal  # 0.5 m behind the front
    assert isinstance(deep, NavigateGoal) and deep.position[0] == pytest.approx(2.0 + 0.4)  # kept out of it


def test_back_out_retraces_the_arm_path_sent_in_reverse_skipping_the_failed_goals_points():
    seq = SkillSequencer(load_profile("fetch"))
    seq._at = (np.zeros(3), np.eye(3), (0.0,) * 8)
    seq.begin_action()
    arm = seq.profile.arm

    def goal(*values):
        return TrajectoryGoal(arm.trajectory_action, arm.joints, tuple(((v,) * 8, 1.0) for v in values), 30.0, "arm")

    from task_learning.robot.goals import Step
    sent = [Step(goal(0.1, 0.2), "in"), Step(goal(0.3, 0.4), "further in (failed)")]
    (back,) = seq.back_out(sent)
    assert isinstance(back.goal, TrajectoryGoal)
    assert [p[0] for p, _ in back.goal.points] == [0.2, 0.1, 0.0]
    times = [t for _, t in back.goal.points]
    assert times == sorted(times) and times[0] > 0


def test_the_gripper_opens_only_as_wide_as_the_object_needs_when_its_width_is_known():
    """Not into the neighbours packed beside it: the object's width and a margin each side."""
    seq = SkillSequencer(load_profile("fetch"))
    assert seq.gripper(True).goal.position == pytest.approx(0.10)
    assert seq.gripper(True, width=0.04).goal.position == pytest.approx(0.052)
    assert seq.gripper(True, width=0.09).goal.position == pytest.approx(0.10)  # no wider than it opens


def test_a_target_inside_a_piece_reached_level_is_reached_from_in_front_of_its_face():
    """Level into a compartment (above TOP_DOWN_BELOW_M, behind the piece's front face) the base
    stands `level_front_m` out of the face, nearer when the target would be beyond
    `level_reach_m`; at a handle on the face, `standoff_m` from it."""
    seq = SkillSequencer(load_profile("fetch"))
    front = BasePose(2.0, 0.0, 0.0)
    inside = seq.navigate((1.8, 0.0, 0.9), ORIGIN, front)[0].goal
    deep = seq.navigate((1.6, 0.0, 0.9), ORIGIN, front)[0].goal
    handle = seq.navigate((2.02, 0.0, 0.9), ORIGIN, front)[0].goal
    assert isinstance(inside, NavigateGoal) and inside.position[0] == pytest.approx(2.0 + 0.77)
    assert isinstance(deep, NavigateGoal) and deep.position[0] == pytest.approx(1.6 + 1.02)
    assert isinstance(handle, NavigateGoal) and handle.position[0] == pytest.approx(2.02 + 0.65)


def test_a_level_place_starts_with_the_held_object_out_of_the_face_and_goes_in_no_lower_than_the_entry():
    """A carton reaching 0.27 m past the fingers: the base stands back so that the approach
    starts LEVEL_START_M ahead of it with the carton out of the face; a release low in the
    compartment is reached in at LEVEL_ENTRY_M, then straight down over the spot, and left the
    same way."""
    fetch = load_profile("fetch")
    seq = SkillSequencer(fetch.model_copy(update={"arm": fetch.arm.model_copy(update={"mode": "moveit"})}))
    front = BasePose(2.0, 0.0, 0.0)  # the face at x = 2, facing +x; the spot 0.12 m behind it
    drive = next(s.goal for s in seq.navigate((1.88, 0.0, 0.68), ORIGIN, front, reach=0.27)
                 if isinstance(s.goal, NavigateGoal))
    assert isinstance(drive, NavigateGoal) and drive.position[0] == pytest.approx(2.0 + LEVEL_START_M + 0.27 + FACE_MARGIN_M)
    base = BasePose(drive.position[0], 0.0, drive.yaw)
    steps = seq.manipulate("place", (1.88, 0.0, 0.68), base, front, reach=0.27)
    ways = {s.why: s.goal.position for s in steps if isinstance(s.goal, MoveGroupGoal)}
    assert list(ways) == ["above the receptacle, back", "over the spot", "release pose"]
    assert ways["above the receptacle, back"][0] == pytest.approx(LEVEL_START_M)  # base frame: ahead of the base
    assert ways["above the receptacle, back"][2] >= LEVEL_ENTRY_M - 0.06 - 1e-9
    assert ways["over the spot"][2] == pytest.approx(ways["above the receptacle, back"][2])
    assert ways["release pose"][2] == pytest.approx(0.68 + fetch.arm.place_above_m)
    whys = [s.why for s in steps]
    assert whys[-2:] == ["over the spot", "above the receptacle, back"]  # out the way it came


@pytest.fixture(scope="module")
def fetch_sequencer() -> SkillSequencer:
    from test.robot.helpers import DATA

    profile = load_profile("fetch")
    kin = ArmKinematics.from_urdf((DATA / "fetch.urdf").read_text(), profile.arm.root_link, profile.arm.tip_link,
                                  profile.arm.joints, profile.arm.tolerance_m)
    return SkillSequencer(profile, kin)


@pytest.mark.parametrize("height", [0.83, 0.955])  # the pantry's and the cupboard's release heights
@pytest.mark.parametrize("depth", [0.9, 1.02])  # 0.13 and 0.25 m behind the face 0.77 m ahead
def test_a_place_into_a_compartment_goes_straight_out_of_the_carry_pose_on_one_ik_branch(fetch_sequencer, height,
                                                                                      depth):
    """From the carry pose (where a drive leaves the arm) into a compartment whose face is
    `level_front_m` ahead, the approach starting in front of the face, every arm goal of the place is a straight line of IK points (more than one
    point: not the joint-space fallback) on which no joint turns more than JUMP_RAD between
    points: the elbow does not swing round through the piece on the way."""
    from task_learning.robot.sequences import JUMP_RAD

    seq = fetch_sequencer
    seq.arm_lost()
    seq.carry()
    steps = seq.manipulate("place", (depth, 0.0, height), ORIGIN, BasePose(0.77, 0.0, math.pi))
    arm = [s.goal for s in steps if isinstance(s.goal, TrajectoryGoal) and s.goal.purpose == "arm"]
    low = height + seq.profile.arm.place_above_m < LEVEL_ENTRY_M  # in at the entry height, then down and up
    assert [len(goal.points) > 1 for goal in arm] == [True] * (5 if low else 3)
    previous = np.array(seq._carry_joints())
    for goal in arm:
        for joints, _ in goal.points:
            assert float(np.max(np.abs(np.array(joints) - previous))) < JUMP_RAD
            previous = np.array(joints)
