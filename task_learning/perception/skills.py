"""The skill contract between the bridge and a robot (what a robot integrator implements).

The bridge turns AI2-THOR actions into six typed skills and sends them, one at a time, to a skill
server (on the robot: MoveIt for the arm, move_base / Nav2 for the base). The ROS action is
`task_learning_interfaces/action/Skill` (goal: skill, object_id, target_id, timeout_s; result:
success, error_message, error_code). Error codes the stack understands as blocking conditions are
AI2-THOR-like: not_near, hand_full, not_holding, receptacle_closed, receptacle_full,
not_visible, not_openable, already_open, already_closed, not_pickupable; any other code (or none)
still fails the action with its message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

SKILLS = ("navigate", "search", "pick", "place", "open", "close", "toggle_on", "toggle_off")

# AI2-THOR action -> skill. VisualSearch (look for an object) is `search`: the robot-skills layer
# sweeps the head until it sees the object, then navigates to it (task_learning.robot.executor).
ACTION_TO_SKILL = {
    "NavigateToObject": "navigate",
    "VisualSearch": "search",
    "PickupObject": "pick",
    "PutObject": "place",
    "OpenObject": "open",
    "CloseObject": "close",
    "ToggleObjectOn": "toggle_on",
    "ToggleObjectOff": "toggle_off",
}


@dataclass(frozen=True)
class SkillRequest:
    skill: str          # one of SKILLS
    object_id: str      # the object acted on (for place: the receptacle)
    target_id: str = ""  # place: the object put down (the one held)
    timeout_s: float = 60.0


@dataclass(frozen=True)
class SkillResult:
    success: bool
    error_message: str = ""
    error_code: str = ""


class SkillClient(Protocol):
    """Something that runs a skill to completion (or failure) and says how it went. It never
    raises for a robot-side failure: a server that is down or too slow is a failed result."""

    def execute(self, request: SkillRequest) -> SkillResult:
        ...
