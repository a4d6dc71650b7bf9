"""The arm's IK on a URDF (ikpy): solutions land on the target, the unreachable is refused."""
from __future__ import annotations

import numpy as np
import pytest

from task_learning.robot.ik import ArmKinematics, KinematicsError, chain_path
from test.robot.helpers import TEST_URDF

JOINTS = ("lift_joint", "shoulder_joint", "elbow_joint")


@pytest.fixture(scope="module")
def arm() -> ArmKinematics:
    return ArmKinematics.from_urdf(TEST_URDF, "base_link", "tool_link", JOINTS, tolerance_m=0.01)


def test_chain_path_walks_the_tree_from_root_to_tip():
    assert chain_path(TEST_URDF, "base_link", "tool_link") == [
        "base_link", "lift_joint", "lift_link", "shoulder_joint", "upper_link", "elbow_joint", "fore_link",
        "tool_joint", "tool_link"]
    with pytest.raises(KinematicsError, match="no link 'gripper_link'"):
        chain_path(TEST_URDF, "base_link", "gripper_link")
    with pytest.raises(KinematicsError, match="does not descend"):
        chain_path(TEST_URDF, "camera_link", "tool_link")


@pytest.mark.parametrize("target", [(0.7, 0.2, 0.8), (0.5, -0.3, 0.6), (0.3, 0.4, 0.95)])
def test_solutions_reach_the_target_within_limits(arm, target):
    solution = arm.solve(target)
    assert solution is not None
    assert np.linalg.norm(arm.forward(solution) - np.asarray(target)) < 0.01
    assert 0.0 <= solution[0] <= 0.5 and abs(solution[1]) <= 2.0 and abs(solution[2]) <= 2.5


@pytest.mark.parametrize("target", [(2.0, 0.0, 0.8), (0.6, 0.0, 1.3)])
def test_out_of_reach_is_no_solution(arm, target):
    assert arm.solve(target) is None


def test_a_joint_off_the_chain_is_named():
    with pytest.raises(KinematicsError, match="camera_joint are not on the chain"):
        ArmKinematics.from_urdf(TEST_URDF, "base_link", "tool_link", ("lift_joint", "camera_joint"))


def test_fetch_pick_from_its_urdf():
    """The Fetch profile's chain (torso and seven arm joints, base_link -> gripper_link) on the
    simulated Fetch's URDF: a pick 0.7 m ahead at table height is solved, joints in profile order."""
    from task_learning.robot.profile import load_profile
    from task_learning.robot.sequences import BasePose, SkillSequencer
    from test.robot.helpers import DATA

    profile = load_profile("fetch")
    kin = ArmKinematics.from_urdf((DATA / "fetch.urdf").read_text(), profile.arm.root_link, profile.arm.tip_link,
                                  profile.arm.joints, profile.arm.tolerance_m)
    steps = SkillSequencer(profile, kin).manipulate("pick", (0.7, 0.0, 0.8), BasePose(0.0, 0.0, 0.0))
    arm = [s.goal for s in steps if getattr(s.goal, "purpose", "") == "arm"]
    assert len(arm) == 3 and arm[0].joints == profile.arm.joints
    assert np.linalg.norm(kin.forward(arm[1].final) - np.array([0.7, 0.0, 0.8])) < profile.arm.tolerance_m
    assert 0.0 <= arm[1].final[0] <= 0.386  # the torso within its limits


def test_the_chain_ends_at_the_tip_link_not_at_a_leaf_beyond_it():
    """ikpy walks on past the last element it is given (on the Fetch: past gripper_link into the
    gripper camera's frames, 6.27 cm off); the chain must end at the tip. At zero joint positions
    the tip's position is the composition of the URDF's joint origins from root to tip."""
    import xml.etree.ElementTree as ET

    from scipy.spatial.transform import Rotation

    from task_learning.robot.profile import load_profile
    from test.robot.helpers import DATA

    urdf = (DATA / "fetch.urdf").read_text()
    profile = load_profile("fetch")
    kin = ArmKinematics.from_urdf(urdf, profile.arm.root_link, profile.arm.tip_link, profile.arm.joints,
                                  profile.arm.tolerance_m)
    joints = {j.get("name"): j for j in ET.fromstring(urdf).iter("joint")}
    pose = np.eye(4)
    for name in chain_path(urdf, profile.arm.root_link, profile.arm.tip_link)[1::2]:
        origin = joints[name].find("origin")
        step = np.eye(4)
        if origin is not None:
            step[:3, :3] = Rotation.from_euler("xyz", [float(v) for v in origin.get("rpy", "0 0 0").split()]).as_matrix()
            step[:3, 3] = [float(v) for v in origin.get("xyz", "0 0 0").split()]
        pose = pose @ step
    assert np.linalg.norm(kin.forward([0.0] * len(profile.arm.joints)) - pose[:3, 3]) < 1e-6


def test_a_top_down_pick_closes_the_fingers_along_the_objects_narrow_side():
    """grasp_yaw (the narrow side's heading in map) turns the gripper: its y axis (the
    fingers' closing axis) lies along that heading, either sense."""
    import math

    from task_learning.robot.goals import TrajectoryGoal
    from task_learning.robot.profile import load_profile
    from task_learning.robot.sequences import BasePose, SkillSequencer
    from test.robot.helpers import DATA

    profile = load_profile("fetch")
    kin = ArmKinematics.from_urdf((DATA / "fetch.urdf").read_text(), profile.arm.root_link, profile.arm.tip_link,
                                  profile.arm.joints, profile.arm.tolerance_m)
    base = BasePose(0.0, 0.0, 0.0)
    for narrow in (0.0, math.pi / 2, 0.6):
        steps = SkillSequencer(profile, kin).manipulate("pick", (0.7, 0.0, 0.3), base, None, narrow)
        grasp = next(s.goal for s in steps if s.why == "grasp")
        assert isinstance(grasp, TrajectoryGoal)
        frame = kin.forward_frame(grasp.final)[:3, :3]
        assert frame[2, 0] < -0.95  # pointing down
        closing = frame[:, 1]
        assert abs(abs(closing[0] * math.cos(narrow) + closing[1] * math.sin(narrow)) - 1.0) < 0.05
