"""ActionCall in, ActionOutcome out: the one place that reads an event's success fields.

The blocking condition is the backend's machine-readable `errorCode` (the symbolic world sets
e.g. "receptacle_closed", "not_near", "hand_full"); a backend without codes (the real AI2-THOR
sets errorCode only for invalid calls) leaves it empty and the error message says why.
"""
from __future__ import annotations

from typing import Any, Mapping

from task_learning.types import ActionCall, ActionOutcome
from task_learning.world.action_check import NOT_A_ROBOT_ACTION, action_call_problem
from task_learning.world.backend import WorldBackend


def action_outcome(call: ActionCall, metadata: Mapping[str, Any]) -> ActionOutcome:
    success = bool(metadata.get("lastActionSuccess"))
    return ActionOutcome(
        call=call,
        success=success,
        error_message="" if success else str(metadata.get("errorMessage") or "action failed"),
        blocking_condition="" if success else str(metadata.get("errorCode") or ""),
    )


def run_action(backend: WorldBackend, call: ActionCall) -> ActionOutcome:
    """Execute one primitive action on a backend and report how it went. A call that is not a
    well-formed robot action (world.action_check: a simulator command such as Reset, a parameter
    the action does not take) never reaches the backend: it fails, the world unchanged."""
    problem = action_call_problem(call)
    if problem:
        return ActionOutcome(call, False, f"not executed: {problem}", NOT_A_ROBOT_ACTION)
    return action_outcome(call, backend.step(call.action, **call.step_kwargs()))
