"""Checks on a primitive action call from outside (the perception node's execute_action) and from
inside (`world.outcome.run_action`, which every in-process caller uses), before it reaches any
backend: the action must be one a robot performs, with the parameters that action takes, of
AI2-THOR's type and range. A parameter that is not what AI2-THOR expects is refused rather than
interpreted: `forceAction: "{not json"` is not true, it is an error.

Why an allow-list: the AI2-THOR Controller obeys whatever it is sent, and most of its commands
drive the simulator, not a robot (`Reset` loads another scene under the robot's feet,
`ChangeResolution`, `Initialize`, teleports). A robot can do what the planner, BCR, the
productions and LLM-State ask of it, and nothing else; the bridge's own use of the Controller
(NavigateToObject's GetReachablePositions and TeleportFull, set-up's SetObjectPoses) never comes
through here.
"""
from __future__ import annotations

import math
import re
from typing import Any

from task_learning.types import ActionCall

MAX_PARAMS = 16
MAX_NAME_CHARS = 64
MAX_ID_CHARS = 200
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# The actions a robot performs, each with the parameters it takes besides its object (AI2-THOR's
# names). Object actions and the hand: the BCR domain (config/domains/household.yaml), the
# productions' motor actions and LLM-State's; VisualSearch is BCR's look-around; the turns and
# tilts are what VisualSearch is made of (a robot turns its base and tilts its head); Pass and
# Done are AI2-THOR's no-ops.
ROBOT_ACTIONS: dict[str, frozenset[str]] = {
    "NavigateToObject": frozenset(),
    "VisualSearch": frozenset(),
    "PickupObject": frozenset({"forceAction", "manualInteract"}),
    "PutObject": frozenset({"forceAction", "placeStationary"}),
    "DropHandObject": frozenset({"forceAction"}),
    "OpenObject": frozenset({"forceAction", "openness"}),
    "CloseObject": frozenset({"forceAction"}),
    "ToggleObjectOn": frozenset({"forceAction"}),
    "ToggleObjectOff": frozenset({"forceAction"}),
    "SliceObject": frozenset({"forceAction"}),
    "RotateLeft": frozenset({"degrees"}),
    "RotateRight": frozenset({"degrees"}),
    "LookUp": frozenset({"degrees"}),
    "LookDown": frozenset({"degrees"}),
    "Pass": frozenset(),
    "Done": frozenset(),
}
# AI2-THOR parameters the backends know, with their type and range.
BOOL_PARAMS = frozenset({"forceAction", "manualInteract", "placeStationary"})
UNIT_PARAMS = frozenset({"openness"})  # a fraction in [0, 1]
ANGLE_PARAMS = frozenset({"degrees"})  # a turn or tilt in [0, 360]
NOT_A_ROBOT_ACTION = "InvalidAction"  # the blocking condition of a refused action


def action_call_problem(call: ActionCall) -> str:
    """Why this call must not be executed, or "" when it is a robot action, well formed."""
    if not call.action.strip():
        return "no action given (e.g. PickupObject)"
    if len(call.action) > MAX_NAME_CHARS or not _NAME.match(call.action):
        return "the action name must be a word such as PickupObject"
    if call.action not in ROBOT_ACTIONS:
        return (f"{call.action} is not a robot action (simulator commands are refused; robot actions: "
                f"{', '.join(ROBOT_ACTIONS)})")
    if len(call.object_id) > MAX_ID_CHARS:
        return f"object_id: {len(call.object_id)} characters, at most {MAX_ID_CHARS}"
    if len(call.params) > MAX_PARAMS:
        return f"{len(call.params)} parameters, at most {MAX_PARAMS}"
    allowed = ROBOT_ACTIONS[call.action]
    for key, value in call.params:
        if len(key) > MAX_NAME_CHARS or not _NAME.match(key):
            return "parameter names must be words such as forceAction"
        if key not in allowed:
            takes = ", ".join(sorted(allowed)) or "none"
            return f"parameter {key}: {call.action} does not take it (its parameters: {takes})"
        problem = _value_problem(key, value)
        if problem:
            return f"parameter {key}: {problem}"
    return ""


def _value_problem(key: str, value: Any) -> str:
    if key in BOOL_PARAMS and not isinstance(value, bool):
        return f"must be true or false, got {_show(value)}"
    if key in UNIT_PARAMS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            return f"must be a number from 0 to 1, got {_show(value)}"
    if key in ANGLE_PARAMS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 360:
            return f"must be a number of degrees from 0 to 360, got {_show(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    return ""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."
