"""Where things stand in a symbolic scene: simple, deterministic geometry.

The symbolic world needs positions only for distances ("is the robot near the fridge?"), so the
layout is schematic: furniture (objects resting on nothing) on a circle around the room centre,
at least ~2 m apart, so being next to one piece of furniture never means being within reach of
another; everything inside/on a piece of furniture sits in a small slot around its position.
"""
from __future__ import annotations

import math
from typing import Any

# AI2-THOR's default reach for interaction (visibilityDistance 1.5 m) plus some slack: the
# symbolic robot can act on objects within this horizontal distance.
REACH_M = 1.75
# How far from an object NavigateToObject stops the robot.
STANDOFF_M = 0.6
# AI2-THOR's camera horizon limits in degrees (positive looks down).
MIN_HORIZON = -30.0
MAX_HORIZON = 60.0
# iTHOR's default agent: the camera sits this far above the agent's position when standing.
CAMERA_HEIGHT_M = 0.675
_SPACING_M = 2.2
_MIN_RADIUS_M = 2.5
_SLOT_RADIUS_M = 0.25


def vec(x: float, y: float, z: float) -> dict[str, float]:
    return {"x": round(x, 4), "y": round(y, 4), "z": round(z, 4)}


def ring_positions(count: int) -> list[dict[str, float]]:
    """`count` furniture positions on a circle around the origin, ~2.2 m apart."""
    if count == 0:
        return []
    radius = max(_MIN_RADIUS_M, count * _SPACING_M / (2 * math.pi))
    return [
        vec(radius * math.cos(2 * math.pi * i / count), 0.0, radius * math.sin(2 * math.pi * i / count))
        for i in range(count)
    ]


def slot_position(parent: dict[str, Any], slot: int, jitter: float = 0.0) -> dict[str, float]:
    """Position of the `slot`-th thing placed in/on `parent` (a point within 0.25 m of it)."""
    base = parent.get("position") or vec(0.0, 0.0, 0.0)
    angle = slot * 2.39996 + jitter  # golden angle: slots spread without colliding
    ring = _SLOT_RADIUS_M * math.sqrt((slot % 12 + 1) / 12.0)
    return vec(float(base["x"]) + ring * math.cos(angle), float(base["y"]) + 0.1,
               float(base["z"]) + ring * math.sin(angle))


def horizontal_distance(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float:
    if not a or not b:
        return float("inf")
    return math.hypot(float(a["x"]) - float(b["x"]), float(a["z"]) - float(b["z"]))


def standing_point(target: dict[str, Any], centre: dict[str, Any]) -> dict[str, float]:
    """Where the robot stands to reach `target`: STANDOFF_M from it, towards the room centre."""
    dx = float(centre["x"]) - float(target["x"])
    dz = float(centre["z"]) - float(target["z"])
    length = math.hypot(dx, dz)
    if length < 1e-6:
        dx, dz, length = 1.0, 0.0, 1.0
    scale = min(STANDOFF_M, length) / length
    return vec(float(target["x"]) + dx * scale, float(centre.get("y", 0.9)), float(target["z"]) + dz * scale)
