"""The simulated Fetch's model: the Fetch's own joints position-controlled, a pose held under
gravity, and a URDF whose kinematics are the physics model's."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

mujoco = pytest.importorskip("mujoco")
from task_learning_sim.fetch_model import ARM_JOINTS, FINGER_JOINTS, HEAD_JOINTS, TORSO_JOINT, fetch_spec  # noqa: E402
from task_learning_sim.urdf import fetch_urdf  # noqa: E402

URDF_FILE = Path(__file__).resolve().parents[2] / "sim" / "fetch.urdf"


@pytest.fixture(scope="module")
def model():
    return fetch_spec().compile()


def test_every_fetch_joint_has_a_position_actuator(model):
    actuated = {model.joint(int(model.actuator_trnid[i][0])).name for i in range(model.nu)}
    assert {TORSO_JOINT, *HEAD_JOINTS, *ARM_JOINTS, *FINGER_JOINTS} <= actuated
    assert model.body("head_camera_rgb_optical_frame").id > 0 and model.camera("head_camera_rgb").id >= 0


def test_the_arm_holds_a_commanded_pose_under_gravity(model):
    data = mujoco.MjData(model)
    pose = {TORSO_JOINT: 0.3, "shoulder_pan_joint": 0.8, "shoulder_lift_joint": -0.5, "elbow_flex_joint": 1.2,
            "wrist_flex_joint": -0.7, "head_tilt_joint": 0.6}
    for joint, value in pose.items():
        data.actuator(joint).ctrl[0] = value
    for _ in range(1500):  # 3 s
        mujoco.mj_step(model, data)
    for joint, value in pose.items():
        assert data.joint(joint).qpos[0] == pytest.approx(value, abs=2e-3), joint


def test_the_checked_in_urdf_is_the_generated_one(model):
    assert URDF_FILE.read_text() == fetch_urdf(model), "regenerate: python -m task_learning_sim.urdf > sim/fetch.urdf"


def _urdf_pose(root: ET.Element, link: str, q: dict[str, float]) -> np.ndarray:
    """4x4 pose of `link` in base_link by composing the URDF's joints (the test's own FK)."""
    by_child = {j.find("child").get("link"): j for j in root.iter("joint")}
    pose = np.eye(4)
    while link in by_child:
        joint = by_child[link]
        origin = joint.find("origin")
        step = np.eye(4)
        step[:3, :3] = Rotation.from_euler("xyz", [float(v) for v in origin.get("rpy").split()]).as_matrix()
        step[:3, 3] = [float(v) for v in origin.get("xyz").split()]
        motion = np.eye(4)
        if joint.get("type") != "fixed":
            axis = np.array([float(v) for v in joint.find("axis").get("xyz").split()])
            value = q.get(joint.get("name"), 0.0)
            if joint.get("type") == "prismatic":
                motion[:3, 3] = axis * value
            else:
                motion[:3, :3] = Rotation.from_rotvec(axis * value).as_matrix()
        pose = step @ motion @ pose
        link = joint.find("parent").get("link")
    return pose


@pytest.mark.parametrize("frame", ["gripper_link", "head_camera_rgb_optical_frame", "r_gripper_finger_link"])
def test_urdf_forward_kinematics_match_the_physics_model(model, frame):
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    q = {TORSO_JOINT: 0.25, "head_pan_joint": 0.4, "head_tilt_joint": 0.3, "r_gripper_finger_joint": 0.03}
    q.update({joint: float(rng.uniform(-1.0, 1.0)) for joint in ARM_JOINTS})
    for joint, value in q.items():
        data.joint(joint).qpos[0] = value
    mujoco.mj_kinematics(model, data)
    expected = np.eye(4)
    expected[:3, :3] = data.body(frame).xmat.reshape(3, 3)
    expected[:3, 3] = data.body(frame).xpos  # the base stands at the origin, unrotated
    got = _urdf_pose(ET.fromstring(URDF_FILE.read_text()), frame, q)
    np.testing.assert_allclose(got, expected, atol=1e-4)
