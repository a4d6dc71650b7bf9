"""Checks on a primitive action call from outside (the perception node's execute_action), before
it reaches any backend: the action name's shape, the number of parameters, and the type and range
of AI2-THOR's parameters. A parameter that is not what AI2-THOR expects is refused rather than
interpreted: `forceAction: "{not json"` is not true, it is an error.
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
# AI2-THOR parameters the backends know, with their type and range.
BOOL_PARAMS = frozenset({"forceAction", "manualInteract", "placeStationary"})
UNIT_PARAMS = frozenset({"openness"})  # a fraction in [0, 1]


def action_call_problem(call: ActionCall) -> str:
    """Why this call must not be executed, or "" when it is well formed."""
    if not call.action.strip():
        return "no action given (e.g. PickupObject)"
    if len(call.action) > MAX_NAME_CHARS or not _NAME.match(call.action):
        return "the action name must be a word such as PickupObject"
    if len(call.object_id) > MAX_ID_CHARS:
        return f"object_id: {len(call.object_id)} characters, at most {MAX_ID_CHARS}"
    if len(call.params) > MAX_PARAMS:
        return f"{len(call.params)} parameters, at most {MAX_PARAMS}"
    for key, value in call.params:
        if len(key) > MAX_NAME_CHARS or not _NAME.match(key):
            return "parameter names must be words such as forceAction"
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
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    return ""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."
