"""A pinhole camera (what sensor_msgs/CameraInfo says): intrinsics, size, distortion."""
from __future__ import annotations

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

    def k_list(self) -> list[float]:
        return [float(v) for v in self.K.ravel()]

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) points in the optical frame -> (N, 2) pixels and (N,) depths (no distortion)."""
        pts = np.atleast_2d(np.asarray(points, dtype=float))
        z = pts[:, 2]
        safe = np.where(np.abs(z) < 1e-9, 1e-9, z)
        uv = np.column_stack([self.fx * pts[:, 0] / safe + self.cx, self.fy * pts[:, 1] / safe + self.cy])
        return uv, z
