"""Rigid transforms as 4x4 NumPy matrices (T_a_b maps points in frame b to frame a).

Frames: `world` (map, x forward, y left, z up as in ROS), `base` (robot base_link), `camera`
(optical: x right, y down, z forward), `marker` (centre of the marker; x right, y up, z out of the
face towards a viewer, the frame solvePnP returns for the corner order OpenCV's aruco uses).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

# Optical frame axes expressed in a body frame (x forward, y left, z up).
OPTICAL_IN_BODY = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def make(rotation: np.ndarray | None = None,
         translation: Sequence[float] | np.ndarray = (0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    if rotation is not None:
        T[:3, :3] = rotation
    T[:3, 3] = np.asarray(translation, dtype=float)
    return T


def invert(T: np.ndarray) -> np.ndarray:
    R = T[:3, :3]
    out = np.eye(4)
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ T[:3, 3]
    return out


def apply(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Transform an (N, 3) array (or one 3-vector) of points."""
    pts = np.asarray(points, dtype=float)
    moved: np.ndarray = pts @ T[:3, :3].T + T[:3, 3]
    return moved


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1.0, 0], [-s, 0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def quat_to_matrix(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if n < 1e-9:
        raise ValueError("quaternion of zero length")
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quat(R: np.ndarray) -> tuple[float, float, float, float]:
    """(qx, qy, qz, qw) of a rotation matrix (Shepperd's method)."""
    m = R
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    return (float(x), float(y), float(z), float(w))


def from_xyz_quat(values: Sequence[float]) -> np.ndarray:
    """[x, y, z, qx, qy, qz, qw] -> T (ValueError naming the problem)."""
    if len(values) != 7:
        raise ValueError(f"expected 7 numbers [x, y, z, qx, qy, qz, qw], got {len(values)}")
    return make(quat_to_matrix(*values[3:]), values[:3])


def to_xyz_quat(T: np.ndarray) -> list[float]:
    return [float(v) for v in T[:3, 3]] + list(matrix_to_quat(T[:3, :3]))


def base_pose(x: float, y: float, yaw: float) -> np.ndarray:
    """A robot base on the floor at (x, y) heading `yaw` (radians)."""
    return make(rot_z(yaw), (x, y, 0.0))


def yaw_of(T: np.ndarray) -> float:
    return math.atan2(T[1, 0], T[0, 0])


def head_camera(height: float = 1.2, forward: float = 0.1, pitch_down_deg: float = 25.0) -> np.ndarray:
    """T_base_camera of a head camera `height` m above the floor pitched down (optical frame)."""
    return make(rot_y(math.radians(pitch_down_deg)) @ OPTICAL_IN_BODY, (forward, 0.0, height))


def facing(position: Sequence[float] | np.ndarray, normal: Sequence[float] | np.ndarray) -> np.ndarray:
    """T_world_marker of an upright marker at `position` whose face points along the horizontal
    `normal` (marker y axis = world up)."""
    z = np.asarray(normal, dtype=float)
    z = z / np.linalg.norm(z)
    y = np.array([0.0, 0.0, 1.0])
    x = np.cross(y, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return make(np.column_stack([x, y, z]), position)


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle in degrees between two vectors."""
    c = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))
