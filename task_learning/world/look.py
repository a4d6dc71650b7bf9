"""Looking around (BCR's VisualSearch, the BCR paper): AI2-THOR's exploration macro as a plan of
primitive camera moves every backend can run.

A full turn in 90-degree steps (the views an agent gets by rotating in place), then a turn to face
the target object and a tilt (LookUp/LookDown) that puts it at the image centre. The plan ends
facing the target, so a search for an object the camera had lost leaves it in view. Backends
run the plan with their own primitives: the symbolic world turns its agent, the AI2-THOR bridge
sends RotateRight/RotateLeft/LookUp/LookDown to the simulator.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from task_learning.world import layout

SEARCH_ACTION = "VisualSearch"
TURN_STEP_DEG = 90.0


def look_around_plan(agent: Mapping[str, Any], target: Mapping[str, Any] | None = None,
                     camera_height: float | None = None) -> list[tuple[str, float]]:
    """(action, degrees) steps: four RotateRight(90), then face `target` (a position) if given."""
    steps: list[tuple[str, float]] = [("RotateRight", TURN_STEP_DEG)] * 4
    if target is None:
        return steps
    position = agent.get("position") or {}
    yaw_now = float((agent.get("rotation") or {}).get("y", 0.0))
    horizon_now = float(agent.get("cameraHorizon", 0.0))
    if camera_height is None:
        camera_height = float(position.get("y", 0.9)) + layout.CAMERA_HEIGHT_M
    dx = float(target["x"]) - float(position.get("x", 0.0))
    dz = float(target["z"]) - float(position.get("z", 0.0))
    if math.hypot(dx, dz) > 1e-6:
        yaw = math.degrees(math.atan2(dx, dz))
        turn = (yaw - yaw_now + 180.0) % 360.0 - 180.0
        if abs(turn) > 1e-3:
            steps.append(("RotateRight", round(turn, 4)) if turn > 0 else ("RotateLeft", round(-turn, 4)))
    horizontal = max(math.hypot(dx, dz), 1e-6)
    wanted = math.degrees(math.atan2(camera_height - float(target.get("y", camera_height)), horizontal))
    wanted = min(max(wanted, layout.MIN_HORIZON), layout.MAX_HORIZON)
    tilt = wanted - horizon_now
    if abs(tilt) > 1e-3:
        steps.append(("LookDown", round(tilt, 4)) if tilt > 0 else ("LookUp", round(-tilt, 4)))
    return steps
