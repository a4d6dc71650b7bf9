"""The Fetch as a MuJoCo model, loaded from gymnasium-robotics' files and made ROS-controllable in code.

gymnasium's Fetch moves its arm through a mocap weld and has only finger actuators; its base has
three slide joints (x, y, z) with huge damping. A robot behind ROS controllers needs joints driven
to positions, so `fetch_spec` edits the loaded model with `mujoco.MjSpec` (never a copied XML):

- names lose gymnasium's `robot0:` prefix, so bodies, joints and cameras carry the Fetch's own
  link and joint names (`base_link`, `torso_lift_joint`, `head_camera_rgb_optical_frame`, ...);
- the mocap body and its weld go; the base gets a planar joint set (x, y slides in the world, yaw)
  driven by position servos that the base controller moves along a bounded-velocity path;
- torso, head pan/tilt and the 7 arm joints get position actuators (gains below), the fingers keep
  theirs with a force limit (the grip force), and every robot body is gravity-compensated the way
  a real arm's controller compensates gravity, so the arm holds a pose;
- the head tilt's reference angle goes to 0, so joint angle 0 is the link pose the Fetch's URDF has;
- the robot's links collide with everything but each other (contype 2, conaffinity 1: a pair of
  robot geoms never matches, a robot geom and any other does). gymnasium's collision meshes touch
  each other in the Fetch's own tuck pose; like a real arm's controller, the simulator leaves
  self-collision to whoever plans the motion.
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from task_learning_sim.assets import gymnasium_robotics_assets

PREFIX = "robot0:"
TIMESTEP_S = 0.002
BASE_JOINTS = ("base_x_joint", "base_y_joint", "base_yaw_joint")  # simulator-only: the planar base
TORSO_JOINT = "torso_lift_joint"
HEAD_JOINTS = ("head_pan_joint", "head_tilt_joint")
ARM_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "upperarm_roll_joint", "elbow_flex_joint",
              "forearm_roll_joint", "wrist_flex_joint", "wrist_roll_joint")
FINGER_JOINTS = ("l_gripper_finger_joint", "r_gripper_finger_joint")
ROOT_LINK = "base_link"
ROBOT_CONTYPE = 2  # the robot's geoms: see the module docstring
# bodies of gymnasium's model that are not part of the Fetch (its task scaffolding)
NOT_THE_ROBOT = ("mocap", "external_camera_body_0")
# The Fetch's joint velocity limits (rad/s, m/s), from its published URDF (the model has none).
VELOCITY_LIMITS = {
    "torso_lift_joint": 0.1, "head_pan_joint": 1.57, "head_tilt_joint": 1.57,
    "shoulder_pan_joint": 1.256, "shoulder_lift_joint": 1.454, "upperarm_roll_joint": 1.571,
    "elbow_flex_joint": 1.521, "forearm_roll_joint": 1.571, "wrist_flex_joint": 2.268,
    "wrist_roll_joint": 2.268, "l_gripper_finger_joint": 0.05, "r_gripper_finger_joint": 0.05,
}
# The Fetch's joint effort limits (N m, N), from the same URDF: the actuators' force ranges.
EFFORT_LIMITS = {
    "torso_lift_joint": 450.0, "head_pan_joint": 0.32, "head_tilt_joint": 0.68,
    "shoulder_pan_joint": 33.82, "shoulder_lift_joint": 131.76, "upperarm_roll_joint": 76.94,
    "elbow_flex_joint": 66.18, "forearm_roll_joint": 29.35, "wrist_flex_joint": 25.7,
    "wrist_roll_joint": 7.36, "l_gripper_finger_joint": 60.0, "r_gripper_finger_joint": 60.0,
}


@dataclass(frozen=True)
class Servo:
    """A position actuator's stiffness (per rad or m), damping ratio and force limit."""

    kp: float
    dampratio: float
    force: float


# Gains: stiff enough that the gravity-compensated arm tracks a trajectory within a few mrad and
# holds a 1 kg object; the force limits are the real joints' efforts, raised where gymnasium's
# armature (1 kg m^2 a joint, which slows every joint down) needs more to follow the real speeds.
SERVOS: dict[str, Servo] = {
    "base_x_joint": Servo(2e5, 1.0, 5e3), "base_y_joint": Servo(2e5, 1.0, 5e3),
    "base_yaw_joint": Servo(5e4, 1.0, 2e3),
    "torso_lift_joint": Servo(2e5, 1.0, 5e3),
    "head_pan_joint": Servo(300.0, 1.0, 50.0), "head_tilt_joint": Servo(300.0, 1.0, 50.0),
    **{joint: Servo(2000.0, 1.0, max(150.0, 2 * EFFORT_LIMITS[joint])) for joint in ARM_JOINTS},
    # the finger servos (each finger alone: the gripper's gap is their sum); force = grip force
    "l_gripper_finger_joint": Servo(3000.0, 1.0, 60.0), "r_gripper_finger_joint": Servo(3000.0, 1.0, 60.0),
}


def _load(floor: bool) -> mujoco.MjSpec:
    root = gymnasium_robotics_assets()
    floor_geom = '<geom name="floor" type="plane" size="20 20 0.1" material="floor_mat"/>' if floor else ""
    # a minimal world that includes gymnasium's own robot.xml and shared.xml (by absolute path)
    xml = (f'<mujoco model="fetch"><compiler angle="radian" meshdir="{root / "stls" / "fetch"}" '
           f'texturedir="{root / "textures"}"/><option timestep="{TIMESTEP_S}"/>'
           f'<include file="{root / "fetch" / "shared.xml"}"/><worldbody>{floor_geom}'
           f'<light name="sun" directional="true" castshadow="false" pos="0 0 5" dir="0 0 -1" diffuse="0.7 0.7 0.7" ambient="0.35 0.35 0.35"/>'
           f'<include file="{root / "fetch" / "robot.xml"}"/></worldbody></mujoco>')
    return mujoco.MjSpec.from_string(xml)


def _strip_prefix(spec: mujoco.MjSpec) -> None:
    # meshes and materials keep theirs: geoms refer to them by name
    for group in (spec.bodies, spec.joints, spec.geoms, spec.sites, spec.cameras, spec.actuators):
        for element in group:
            if element.name.startswith(PREFIX):
                element.name = element.name[len(PREFIX):]
    for exclude in spec.excludes:  # contact exclusions name their bodies
        exclude.bodyname1 = exclude.bodyname1.removeprefix(PREFIX)
        exclude.bodyname2 = exclude.bodyname2.removeprefix(PREFIX)


def _planar_base(spec: mujoco.MjSpec) -> None:
    base = spec.body(ROOT_LINK)
    for joint in list(base.joints):
        spec.delete(joint)
    base.pos = [0.0, 0.0, 0.0]
    for name, kind, axis in (("base_x_joint", mujoco.mjtJoint.mjJNT_SLIDE, (1, 0, 0)),
                             ("base_y_joint", mujoco.mjtJoint.mjJNT_SLIDE, (0, 1, 0)),
                             ("base_yaw_joint", mujoco.mjtJoint.mjJNT_HINGE, (0, 0, 1))):
        base.add_joint(name=name, type=kind, axis=list(axis), armature=1.0)
    # the base rides on its (unsimulated) wheels: its shell never touches the floor
    spec.add_exclude(bodyname1="world", bodyname2=ROOT_LINK)


def scalar_like(current: object, value: float) -> object:
    """`value` in a joint attribute's own form: MuJoCo 4 made damping and stiffness arrays (the
    first entry is the linear coefficient), MuJoCo 3 has a number."""
    if isinstance(current, np.ndarray):
        out = np.zeros_like(current)
        out[0] = value
        return out
    return value


def _drive(spec: mujoco.MjSpec) -> None:
    for joint in spec.joints:
        if joint.name in SERVOS:
            if joint.name not in FINGER_JOINTS:  # the servos' damping ratio does the damping
                joint.damping = scalar_like(joint.damping, 0.0)
            joint.stiffness = scalar_like(joint.stiffness, 0.0)
            joint.ref = 0.0
    for actuator in list(spec.actuators):
        spec.delete(actuator)
    for name, servo in SERVOS.items():
        joint = spec.joint(name)
        actuator = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=servo.kp, dampratio=servo.dampratio)
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.forcerange = [-servo.force, servo.force]
        if joint.range[0] < joint.range[1] and name not in BASE_JOINTS:
            actuator.ctrlrange = list(joint.range)
            actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    for body in spec.bodies:
        if body.name != "world":
            body.gravcomp = 1.0
    for geom in spec.geoms:
        if geom.name != "floor":
            geom.contype, geom.conaffinity = ROBOT_CONTYPE, 1


def fetch_spec(*, floor: bool = True) -> mujoco.MjSpec:
    """The Fetch on a floor (a plane at z = 0), every joint position-controlled; edit it further
    (a scene) before compiling."""
    spec = _load(floor)
    _strip_prefix(spec)
    for equality in list(spec.equalities):
        spec.delete(equality)
    for name in NOT_THE_ROBOT:
        spec.delete(spec.body(name))
    _planar_base(spec)
    _drive(spec)
    return spec


def controlled_joints() -> tuple[str, ...]:
    """Every joint with a position actuator, in actuator order."""
    return tuple(SERVOS)
