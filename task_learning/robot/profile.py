"""A robot's public ROS interface as a typed profile (config/robots/<name>.yaml), validated on load.

A profile names what the stack calls on the robot (action servers, topics, services), the joints
and frames it commands, how far from an object the base stops, whether the arm goes through
MoveIt or the stack's own inverse kinematics, whether the head has a PointHead server, and how
long each kind of goal may take. Everything robot-specific is here, so that the sequences of
goals (robot.sequences) and the failure table (robot.failures) are the same for every robot.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, model_validator

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path
from task_learning.inputs.schema import PlainText, Schema, bounded, invalid, load_model

Seconds = Annotated[float, bounded(low=0.0, high=3600.0, low_open=True)]
Metres = Annotated[float, bounded(low=0.0, high=10.0)]
Radians = Annotated[float, bounded(low=-6.3, high=6.3)]
NavDistro = Literal["humble", "jazzy", "kilted"]


def _list_as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


AsTuple = BeforeValidator(_list_as_tuple)
Vec3 = Annotated[tuple[float, float, float], AsTuple]
Limits = Annotated[tuple[Radians, Radians], AsTuple]
Names = Annotated[tuple[PlainText, ...], AsTuple]


class BaseSpec(Schema):
    """The mobile base: Nav2's NavigateToPose server and the frames it plans in."""

    navigate_action: PlainText
    map_frame: PlainText = "map"
    base_frame: PlainText = "base_link"
    standoff_m: Metres = 0.7          # base_link to the object's centre when the base stops
    # A target inside a piece (behind its front face) reached level: base_link this far out of
    # the face (None: standoff_m from the target, as any other), but no further from the target
    # than level_reach_m. An arm whose shoulder is high reaches level into a compartment on one
    # IK branch only from further out; the level approach then starts in front of the face.
    level_front_m: Metres | None = None
    level_reach_m: Metres = 1.0
    facing_rad: Radians = 0.0         # bearing of the object seen from base_link when stopped
                                      # (0: straight ahead; Stretch's arm reaches to its right: -pi/2)


class HeadSpec(Schema):
    """The head: a PointHead server when the robot has one (`point_head_action`), otherwise
    pan/tilt computed by the stack and sent as a FollowJointTrajectory goal."""

    point_head_action: PlainText = ""   # '' = the robot has no PointHead server
    pointing_frame: PlainText = ""      # PointHead's pointing_frame (the camera's optical frame)
    pointing_axis: Vec3 = (0.0, 0.0, 1.0)  # an optical frame looks along z
    trajectory_action: PlainText
    pan_joint: PlainText
    tilt_joint: PlainText
    pan_limits: Limits
    tilt_limits: Limits
    tilt_down_positive: bool            # whether a positive tilt looks down (Fetch: yes)
    pan_origin: Vec3  # the head's pan axis (x, y) and tilt height (z) in base_link, m
    look_around_pans: Annotated[tuple[Radians, ...], AsTuple] = (-1.2, -0.6, 0.0, 0.6, 1.2)  # the sweep of VisualSearch
    look_around_tilt: Radians = 0.4     # how far down the sweep looks (in the looking-down sense)
    move_s: Seconds = 1.0               # time_from_start of a head trajectory point


class ArmSpec(Schema):
    """The arm: MoveIt (`mode: moveit`, MoveGroup pose goals on `move_group_action`) or the
    stack's inverse kinematics on the URDF (`mode: ik`, a FollowJointTrajectory on
    `trajectory_action` over `joints`)."""

    mode: Literal["moveit", "ik"]
    trajectory_action: PlainText
    joints: Names
    root_link: PlainText                # first link of the IK chain (base_link or the torso's)
    tip_link: PlainText                 # the end effector (MoveGroup's link_name too)
    move_group_action: PlainText = ""
    planning_group: PlainText = ""
    reach_m: Metres = 1.0               # beyond this from the root link, no IK is tried
    pregrasp_m: Metres = 0.15           # approach and retreat distance along base_link x
    place_above_m: Metres = 0.12        # how far above the receptacle's centre an object is released
    move_s: Seconds = 3.0               # time_from_start of an IK trajectory's final point
    tolerance_m: Metres = 0.02          # MoveGroup position tolerance; IK residual accepted

    @model_validator(mode="after")
    def _moveit_named(self) -> "ArmSpec":
        if self.mode == "moveit" and not (self.move_group_action and self.planning_group):
            raise invalid("mode moveit needs move_group_action and planning_group")
        if not self.joints:
            raise invalid("joints: at least one arm joint")
        return self


class GripperSpec(Schema):
    """The gripper: a GripperCommand server (`mode: command`) or one joint sent as a
    FollowJointTrajectory (`mode: trajectory`, e.g. Stretch's `gripper_aperture`)."""

    mode: Literal["command", "trajectory"]
    action: PlainText
    joints: Names = ()  # mode trajectory: the joints commanded (each to the position)
    open_position: float
    closed_position: float
    max_effort: Annotated[float, bounded(low=0.0, high=1000.0)] = 60.0
    holding_min: float                  # a closed gripper at or beyond this (toward open) holds something

    @model_validator(mode="after")
    def _joint_named(self) -> "GripperSpec":
        if self.mode == "trajectory" and not self.joints:
            raise invalid("mode trajectory needs joints")
        return self


class TorsoSpec(Schema):
    trajectory_action: PlainText
    joint: PlainText
    limits: Annotated[tuple[Metres, Metres], AsTuple]


class SafetySpec(Schema):
    """How motion is stopped: a std_msgs/Bool run-stop topic (true = stopped) and the stack's
    own std_srvs/Trigger services."""

    runstop_topic: PlainText
    stop_service: PlainText = "robot_skills/stop"
    resume_service: PlainText = "robot_skills/resume"


class TimeoutSpec(Schema):
    server_wait_s: Seconds = 5.0
    navigate_s: Seconds = 120.0
    arm_s: Seconds = 30.0
    head_s: Seconds = 10.0
    gripper_s: Seconds = 10.0
    torso_s: Seconds = 20.0
    cancel_s: Seconds = 1.0             # a cancelled goal must be acknowledged within this


class RobotProfile(Schema):
    name: PlainText
    description: PlainText
    distribution: NavDistro = "kilted"  # the ROS distribution the robot runs: its interfaces' layouts
    robot_description_topic: PlainText = "/robot_description"
    camera_frame: PlainText
    base: BaseSpec
    head: HeadSpec
    arm: ArmSpec
    gripper: GripperSpec
    torso: TorsoSpec | None = None
    safety: SafetySpec
    timeouts: TimeoutSpec = TimeoutSpec()

    def longest_action_s(self) -> float:
        """The longest an abstract action may take on this robot (a VisualSearch's sweep and
        navigation, a pick's head, arm and gripper goals), plus the server waits: the planner's
        timeout for one action is never shorter (launch derives it from this)."""
        t = self.timeouts
        search = len(self.head.look_around_pans) * t.head_s + t.navigate_s
        pick = t.head_s + 3 * t.arm_s + 2 * t.gripper_s + (t.torso_s if self.torso else 0.0)
        return max(search, pick) + 6 * t.server_wait_s


def profiles_dir() -> Path:
    return config_path("robots")


def known_profiles() -> list[str]:
    return sorted(p.stem for p in profiles_dir().glob("*.yaml"))


def load_profile(name_or_path: str) -> RobotProfile:
    """The profile `config/robots/<name>.yaml` (or a path to a YAML file); ConfigError naming the
    known profiles for an unknown name, or the file and key for a bad one."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = profiles_dir() / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ConfigError(profiles_dir(), None, f"unknown robot profile {name_or_path!r} (known: "
                              f"{', '.join(known_profiles())})")
    profile = load_model(RobotProfile, path)
    return profile
