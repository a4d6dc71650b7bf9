"""One RGB-D frame set (colour, depth, camera info, where the camera was) and its sanity checks.

A frame set that fails a check is not used: the reason becomes the world state's status, so an
operator sees "no camera info" rather than a silently frozen world.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from task_learning.world.camera_model import CameraModel


@dataclass
class RGBDFrame:
    color: np.ndarray                # H x W x 3 uint8, BGR (OpenCV order)
    depth: np.ndarray                # H x W float32 metres; 0 or NaN where unknown
    camera: CameraModel | None      # from camera info; None when none arrived
    stamp: float                     # seconds (the colour image's header stamp)
    T_world_camera: np.ndarray | None = None  # pose of the optical frame in the world


def check_frame(frame: RGBDFrame, *, now: float | None = None, max_age_s: float = 1.0) -> str:
    """'' when the frame set is usable, else one line saying why not."""
    if frame.camera is None:
        return "no camera info: cannot measure anything without the camera's intrinsics"
    h, w = frame.color.shape[:2]
    if frame.color.ndim != 3 or frame.color.shape[2] != 3:
        return f"colour image has shape {frame.color.shape}, expected H x W x 3"
    if frame.depth.shape[:2] != (h, w):
        return (f"colour ({w}x{h}) and depth ({frame.depth.shape[1]}x{frame.depth.shape[0]}) images differ "
                "in size (depth must be registered to colour)")
    if (frame.camera.width, frame.camera.height) != (w, h):
        return (f"camera info is for {frame.camera.width}x{frame.camera.height} but the images are "
                f"{w}x{h}")
    if now is not None and max_age_s > 0 and now - frame.stamp > max_age_s:
        return f"stale frames: the newest is {now - frame.stamp:.1f} s old (limit {max_age_s:g} s)"
    if frame.T_world_camera is None:
        return "no camera pose: the camera-to-world transform is unknown"
    return ""
