"""The camera of an AI2-THOR agent: its pose from the agent's metadata, and projection and
back-projection of a depth pixel. The intrinsics are the project's one pinhole model,
`camera_model.CameraModel.from_fov` (the field of view and the frame size).

One model for three users, so they cannot disagree: the stand-in simulator renders through it,
perception states it in `sensor_msgs/CameraInfo`, and the tests back-project depth through it.

Conventions (Unity's, as in AI2-THOR metadata): world frame left-handed, y up; the agent's yaw
`rotation.y` in degrees, 0 facing +z, 90 facing +x; `cameraHorizon` in degrees, positive looking
down. Unity's `fieldOfView` is the vertical one; pixels are square. Pixel centres sit at integer
coordinates (the ROS CameraInfo convention), so the principal point of a W x H frame is
((W-1)/2, (H-1)/2). Depth is planar (distance along the optical axis), as AI2-THOR's depth frame.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from task_learning.world.camera_model import CameraModel
from task_learning.world.layout import CAMERA_HEIGHT_M

NEAR_PLANE_M = 0.1
FAR_PLANE_M = 20.0

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class CameraPose:
    """Camera centre and its axes in the world frame: forward (optical axis), right and down
    (the image's +u and +v directions)."""

    position: Vec3
    forward: Vec3
    right: Vec3
    down: Vec3
    yaw_deg: float
    horizon_deg: float

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> "CameraPose":
        """The agent's camera in an event's metadata: `cameraPosition` when the simulator sends it
        (AI2-THOR does), else the agent's position raised by the standing camera height."""
        agent = metadata.get("agent") or {}
        position = agent.get("position") or {}
        rotation = agent.get("rotation") or {}
        camera = metadata.get("cameraPosition")
        x, z = float(position.get("x", 0.0)), float(position.get("z", 0.0))
        if isinstance(camera, Mapping):
            x, z = float(camera.get("x", x)), float(camera.get("z", z))
            y = float(camera.get("y", 0.0))
        else:
            standing = agent.get("isStanding", True) is not False
            y = float(position.get("y", 0.9)) + (CAMERA_HEIGHT_M if standing else 0.0)
        return cls.at((x, y, z), float(rotation.get("y", 0.0)), float(agent.get("cameraHorizon", 0.0)))

    @classmethod
    def at(cls, position: Vec3, yaw_deg: float, horizon_deg: float) -> "CameraPose":
        yaw, pitch = math.radians(yaw_deg), math.radians(horizon_deg)
        forward = (math.sin(yaw) * math.cos(pitch), -math.sin(pitch), math.cos(yaw) * math.cos(pitch))
        right = (math.cos(yaw), 0.0, -math.sin(yaw))
        up = (math.sin(yaw) * math.sin(pitch), math.cos(pitch), math.cos(yaw) * math.sin(pitch))
        down = (-up[0], -up[1], -up[2])
        return cls(position, forward, right, down, yaw_deg, horizon_deg)

    def quaternion_xyzw(self) -> tuple[float, float, float, float]:
        """The camera's rotation as Unity (and AI2-THOR) state it: yaw about +y, then the
        horizon about the camera's +x (positive: down); it turns (1,0,0), (0,1,0), (0,0,1) into
        the camera's right, up and forward. The world frame is left-handed, so no rotation maps
        the right-handed optical frame (x right, y down, z forward) into it: the images' optical
        frame is this camera frame with y flipped."""
        half_yaw, half_pitch = math.radians(self.yaw_deg) / 2, math.radians(self.horizon_deg) / 2
        a, b = math.sin(half_yaw), math.cos(half_yaw)
        c, d = math.sin(half_pitch), math.cos(half_pitch)
        return (b * c, a * d, -a * c, b * d)


def back_project(u: float, v: float, depth: float, intrinsics: CameraModel, pose: CameraPose) -> Vec3:
    """The world point seen at pixel (u, v) with planar depth `depth` (metres)."""
    xn = (u - intrinsics.cx) / intrinsics.fx
    yn = (v - intrinsics.cy) / intrinsics.fy
    return tuple(pose.position[i] + depth * (pose.forward[i] + xn * pose.right[i] + yn * pose.down[i])
                 for i in range(3))  # type: ignore[return-value]


def project(point: Vec3, intrinsics: CameraModel, pose: CameraPose) -> tuple[float, float, float] | None:
    """Pixel (u, v) and planar depth of a world point, or None behind the camera."""
    rel = tuple(point[i] - pose.position[i] for i in range(3))
    z = sum(rel[i] * pose.forward[i] for i in range(3))
    if z <= 1e-6:
        return None
    x = sum(rel[i] * pose.right[i] for i in range(3))
    y = sum(rel[i] * pose.down[i] for i in range(3))
    return (intrinsics.cx + intrinsics.fx * x / z, intrinsics.cy + intrinsics.fy * y / z, z)


def facing(from_position: Mapping[str, Any], target: Mapping[str, Any],
           camera_height: float) -> tuple[float, float]:
    """(yaw, horizon) in degrees that put `target` at the image centre from a camera at
    `from_position` raised to `camera_height` (world y)."""
    dx = float(target["x"]) - float(from_position["x"])
    dz = float(target["z"]) - float(from_position["z"])
    yaw = math.degrees(math.atan2(dx, dz)) % 360.0
    horizontal = math.hypot(dx, dz)
    horizon = math.degrees(math.atan2(camera_height - float(target.get("y", camera_height)), max(horizontal, 1e-6)))
    return yaw, horizon
