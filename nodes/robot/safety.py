"""The stop inputs of the robot-skills layer, bound to the core's MotionGate.

- the profile's run-stop topic (std_msgs/Bool, true = stopped; reliable, transient local so a
  latched state is heard at start): true stops and refuses motion, false clears that stop;
- `<stop_service>` (std_srvs/Trigger): stop everything and refuse motion until `<resume_service>`;
- `robot_skills/cancel` (std_srvs/Trigger): cancel the goals in flight (PerformTask cancelled),
  without refusing the next action.
"""
from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from task_learning.robot.gate import MotionGate
from task_learning.robot.profile import RobotProfile

CANCEL_SERVICE = "robot_skills/cancel"
RUNSTOP_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class RobotSafety:
    def __init__(self, node: Node, profile: RobotProfile, gate: MotionGate) -> None:
        self.gate = gate
        self.topic = profile.safety.runstop_topic
        group = MutuallyExclusiveCallbackGroup()  # never shared with a long callback
        node.create_subscription(Bool, self.topic, self._on_runstop, RUNSTOP_QOS, callback_group=group)
        node.create_service(Trigger, profile.safety.stop_service, self._on_stop, callback_group=group)
        node.create_service(Trigger, profile.safety.resume_service, self._on_resume, callback_group=group)
        node.create_service(Trigger, CANCEL_SERVICE, self._on_cancel, callback_group=group)
        self._log = node.get_logger()

    def _on_runstop(self, msg: Bool) -> None:
        if msg.data:
            self.gate.stop("runstop", f"run-stop engaged ({self.topic} is true)")
            self._log.warning(f"run-stop engaged ({self.topic}): goals cancelled, motion refused")
        elif self.gate.clear("runstop"):
            self._log.info(f"run-stop released ({self.topic})")

    def _on_stop(self, _request: Any, response: Any) -> Any:
        self.gate.stop("service", "stopped by the stop service")
        response.success, response.message = True, "stopped: goals cancelled, motion refused until resumed"
        return response

    def _on_resume(self, _request: Any, response: Any) -> Any:
        cleared = self.gate.clear("service")
        left = self.gate.refusal()
        response.success = not left
        response.message = ("resumed" if cleared else "was not stopped by the service") + \
            (f"; still refused: {left}" if left else "")
        return response

    def _on_cancel(self, _request: Any, response: Any) -> Any:
        self.gate.interrupt("the task was cancelled")
        response.success, response.message = True, "goals in flight cancelled"
        return response
