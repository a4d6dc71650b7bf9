"""The robot-skills layer on a node: the profile, the MotionGate, the action clients, the stop
inputs and the arm's kinematic model, composed into the core's executor.

The perception node builds one when its `robot` parameter names a profile (backends fetch and
robot_stand_in): the executor then is the world's way to act. For a robot whose arm runs
without MoveIt (`arm.mode: ik`), the URDF comes from the profile's `robot_description_topic`
(std_msgs/String, transient local, as robot_state_publisher latches it); until it arrives an arm
action fails with that reason ("no kinematic model of the arm").
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from task_learning.errors import TaskLearningError
from task_learning.robot.executor import RobotSkillExecutor, RobotView
from task_learning.robot.gate import MotionGate
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import RobotProfile, load_profile
from task_learning.robot.sequences import SkillSequencer
from task_learning_nodes.robot.runner import RosGoalRunner
from task_learning_nodes.robot.safety import RobotSafety

DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def check_distribution(profile: RobotProfile) -> None:
    """The robot's distribution must be the one whose layouts the standard types here have
    (config/ros_interfaces.yaml): Fast DDS does not refuse a mismatched layout, it misbehaves."""
    from task_learning.ros_interfaces import load_ros_interfaces

    built = load_ros_interfaces().distribution
    if built != profile.distribution:
        raise TaskLearningError(f"robot profile {profile.name} runs ROS {profile.distribution}, but the standard "
                                f"interfaces here have {built}'s layouts: set `distribution: {profile.distribution}` "
                                "in config/ros_interfaces.yaml and run make setup")


class RobotSkillsFrontend:
    def __init__(self, node: Node, profile_name: str) -> None:
        self.node = node
        self.profile: RobotProfile = load_profile(profile_name)
        check_distribution(self.profile)
        self.gate = MotionGate()
        self.runner = RosGoalRunner(node, self.profile, self.gate)
        self.safety = RobotSafety(node, self.profile, self.gate)
        self.sequencer = SkillSequencer(self.profile)
        self._loading = threading.Lock()
        if self.profile.arm.mode == "ik":
            node.create_subscription(String, self.profile.robot_description_topic, self._on_description,
                                     DESCRIPTION_QOS, callback_group=MutuallyExclusiveCallbackGroup())
        node.get_logger().info(f"robot {self.profile.name}: arm through "
                               f"{'MoveIt' if self.profile.arm.mode == 'moveit' else 'IK on ' + self.profile.robot_description_topic}"
                               f", run-stop on {self.profile.safety.runstop_topic}")

    def executor(self, view: RobotView) -> RobotSkillExecutor:
        return RobotSkillExecutor(self.sequencer, self.runner, view, self.gate)

    def make_executor(self) -> Callable[[Any], RobotSkillExecutor]:
        return self.executor

    def _on_description(self, msg: String) -> None:
        """Build the arm's chain from the URDF (a few seconds: in a thread of its own)."""
        text = str(msg.data)

        def build() -> None:
            with self._loading:
                arm = self.profile.arm
                try:
                    kinematics = ArmKinematics.for_arm(text, arm)
                except TaskLearningError as exc:
                    self.node.get_logger().error(f"{self.profile.robot_description_topic}: {exc}")
                    return
                self.sequencer.kinematics = kinematics
                self.node.get_logger().info(f"arm kinematics from {self.profile.robot_description_topic}: "
                                            f"{arm.root_link} -> {arm.tip_link}, {len(arm.joints)} joints")

        threading.Thread(target=build, daemon=True, name="robot-description").start()
