"""Point-head: the pan and tilt that turn the Fetch's head toward a point.

Pan turns about the torso's z axis through the pan joint; tilt (positive looks down) about the
pan link's y axis through the tilt joint, 0.1425 m ahead of and 0.058 m above the pan joint. The
camera's own few centimetres off the tilt axis are left out (under 2 degrees at a metre).
"""
from __future__ import annotations

import math

import numpy as np

TILT_OFFSET = np.array([0.1425, 0.0, 0.058])  # tilt joint in the pan link's frame (the model's)


def pan_tilt_toward(target: np.ndarray, pan_origin: np.ndarray, torso_rotation: np.ndarray) -> tuple[float, float]:
    """(pan, tilt) in rad that point the head at `target` (world); `pan_origin` is the pan
    joint's position and `torso_rotation` the torso link's 3x3 rotation, both in the world."""
    v = torso_rotation.T @ (np.asarray(target, dtype=float) - pan_origin)
    pan = math.atan2(v[1], v[0])
    c, s = math.cos(pan), math.sin(pan)
    in_pan = np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1], v[2]]) - TILT_OFFSET
    tilt = math.atan2(-in_pan[2], in_pan[0])
    return pan, tilt
