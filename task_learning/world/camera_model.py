"""A pinhole camera (what sensor_msgs/CameraInfo says): intrinsics, size, distortion.

The one camera model of the project: the Fetch head camera and the synthetic robot, the AI2-THOR
agent's camera (`from_fov`, used by the stand-in simulator's renderer, the bridge's CameraInfo and
the back-projection in world/thor/camera.py), and the perception pipeline all read it, so they
cannot disagree. Pixel centres sit at integer coordinates (ROS's CameraInfo convention): the
principal point of a W x H frame is ((W-1)/2, (H-1)/2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Fetch's head camera (a PrimeSense Carmine 1.09) at 640x480: about 58 x 45 degrees.
FETCH_FOCAL_PX_AT_640 = 554.25


@dataclass(frozen=True)
class CameraModel:
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: tuple[float, ...] = field(default=())

    @classmethod
    def fetch_head(cls, width: int = 640, height: int = 480) -> "CameraModel":
        f = FETCH_FOCAL_PX_AT_640 * width / 640.0
        return cls(width, height, f, f, (width - 1) / 2.0, (height - 1) / 2.0)

    @classmethod
    def from_fov(cls, width: int, height: int, fov_deg: float) -> "CameraModel":
        """Square pixels, `fov_deg` the vertical field of view (Unity's `fieldOfView`, as AI2-THOR
        reports it); ValueError for an empty frame or an angle outside (0, 180)."""
        if width <= 0 or height <= 0:
            raise ValueError(f"frame size must be positive, got {width}x{height}")
        if not 0.0 < fov_deg < 180.0:
            raise ValueError(f"field of view must be in (0, 180) degrees, got {fov_deg}")
        focal = (height / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
        return cls(int(width), int(height), focal, focal, (width - 1) / 2.0, (height - 1) / 2.0)

    @classmethod
    def from_k(cls, width: int, height: int, k: list[float], d: list[float] | None = None) -> "CameraModel":
        """From CameraInfo's row-major K (9 numbers) and D; ValueError if unusable."""
        if width <= 0 or height <= 0:
            raise ValueError(f"camera info has no image size ({width}x{height})")
        if len(k) != 9 or k[0] <= 0 or k[4] <= 0:
            raise ValueError("camera info has no intrinsics (K is empty or zero)")
        return cls(int(width), int(height), float(k[0]), float(k[4]), float(k[2]), float(k[5]),
                   tuple(float(v) for v in (d or ()) if v is not None))

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def D(self) -> np.ndarray:
        return np.array(self.distortion, dtype=float) if any(self.distortion) else np.zeros(5)

    def k(self) -> list[float]:
        """The row-major 3x3 camera matrix (CameraInfo.k)."""
        return [self.fx, 0.0, self.cx, 0.0, self.fy, self.cy, 0.0, 0.0, 1.0]

    def p(self) -> list[float]:
        """The row-major 3x4 projection matrix of a monocular camera (CameraInfo.p)."""
        return [self.fx, 0.0, self.cx, 0.0, 0.0, self.fy, self.cy, 0.0, 0.0, 0.0, 1.0, 0.0]

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) points in the optical frame -> (N, 2) pixels and (N,) depths (no distortion)."""
        pts = np.atleast_2d(np.asarray(points, dtype=float))
        z = pts[:, 2]
        safe = np.where(np.abs(z) < 1e-9, 1e-9, z)
        uv = np.column_stack([self.fx * pts[:, 0] / safe + self.cx, self.fy * pts[:, 1] / safe + self.cy])
        return uv, z
