"""Simple but geometrically consistent frames of a world: every object an axis-aligned box.

What the stand-in simulator sends as its RGB, depth and instance-segmentation frames. Boxes sit
where the metadata puts the objects, with the sizes of their recorded `axisAlignedBoundingBox`
(or a default size for scenes written by hand), and are ray-cast through the pinhole model of
`camera.py`, the one CameraInfo states. Depth is planar, in metres; pixels that hit nothing get
the far plane. Only the pixels inside each box's projected rectangle are cast, so small objects
cost little.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from task_learning.world.thor.camera import FAR_PLANE_M, NEAR_PLANE_M, CameraPose, Intrinsics

# Size (x, y, z) and centre height of a box for an object without a recorded bounding box.
FURNITURE_SIZE = (0.8, 0.9, 0.8)
SMALL_SIZE = (0.12, 0.12, 0.12)
BACKGROUND = (150, 160, 175)
_FACE_SHADE = np.array([0.8, 1.0, 0.65], dtype=np.float32)  # x faces, y faces (top), z faces


@dataclass(frozen=True)
class Box:
    object_id: str
    centre: tuple[float, float, float]
    half: tuple[float, float, float]
    colour: tuple[int, int, int]


def colour_of(key: str) -> tuple[int, int, int]:
    """A stable, fairly saturated colour per object type (same type, same colour)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return (60 + digest[0] % 180, 60 + digest[1] % 180, 60 + digest[2] % 180)


def instance_colour(index: int) -> tuple[int, int, int]:
    """Distinct colour per object for the instance segmentation frame (index from 1)."""
    return ((index * 53) % 256, (index * 97) % 256, (index * 193 + 1) % 256)


def box_offsets(objects: Iterable[Mapping[str, Any]]) -> dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """Per object id: (centre minus position, size), from the recorded bounding boxes at load
    time (objects move later, their boxes with them) or defaults for hand-written scenes."""
    out = {}
    for record in objects:
        box = record.get("axisAlignedBoundingBox")
        position = record.get("position") or {}
        if isinstance(box, Mapping) and isinstance(box.get("center"), Mapping) and isinstance(box.get("size"), Mapping):
            centre, size = box["center"], box["size"]
            offset = tuple(float(centre[a]) - float(position.get(a, 0.0)) for a in "xyz")
            extent = tuple(max(float(size[a]), 0.01) for a in "xyz")
        elif record.get("parentReceptacles"):
            offset, extent = (0.0, SMALL_SIZE[1] / 2, 0.0), SMALL_SIZE
        else:
            offset, extent = (0.0, FURNITURE_SIZE[1] / 2, 0.0), FURNITURE_SIZE
        out[str(record["objectId"])] = (offset, extent)  # type: ignore[assignment]
    return out


def boxes_for(metadata: Mapping[str, Any], offsets: Mapping[str, Any]) -> list[Box]:
    """The boxes to draw: every object that is visible and not held."""
    held = {o["objectId"] for o in metadata.get("inventoryObjects") or []}
    boxes = []
    for record in metadata.get("objects") or []:
        oid = record["objectId"]
        if oid in held or not record.get("visible", True) or oid not in offsets:
            continue
        offset, size = offsets[oid]
        position = record.get("position") or {}
        centre = tuple(float(position.get(a, 0.0)) + offset[i] for i, a in enumerate("xyz"))
        boxes.append(Box(oid, centre, tuple(s / 2 for s in size), colour_of(record["objectType"])))  # type: ignore[arg-type]
    return boxes


def render(boxes: list[Box], intrinsics: Intrinsics, pose: CameraPose,
           ids: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(rgb HxWx3 uint8, depth HxW float32 metres, instance index HxW int32 or None)."""
    width, height = intrinsics.width, intrinsics.height
    depth = np.full((height, width), np.inf, dtype=np.float32)
    rgb = np.empty((height, width, 3), dtype=np.uint8)
    rgb[...] = BACKGROUND
    index = np.zeros((height, width), dtype=np.int32) if ids else None
    cam = np.array(pose.position, dtype=np.float64)
    fwd, right, down = (np.array(v, dtype=np.float64) for v in (pose.forward, pose.right, pose.down))
    for number, box in enumerate(boxes, start=1):
        rect = _screen_rect(box, intrinsics, pose, cam)
        if rect is None:
            continue
        u0, u1, v0, v1 = rect
        us = (np.arange(u0, u1, dtype=np.float64) - intrinsics.cx) / intrinsics.fx
        vs = (np.arange(v0, v1, dtype=np.float64) - intrinsics.cy) / intrinsics.fy
        # ray directions with a unit forward component: the hit parameter is the planar depth
        dirs = fwd[None, None, :] + us[None, :, None] * right[None, None, :] + vs[:, None, None] * down[None, None, :]
        lo = np.array(box.centre) - np.array(box.half) - cam
        hi = np.array(box.centre) + np.array(box.half) - cam
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / np.where(np.abs(dirs) < 1e-12, 1e-12, dirs)
            t1, t2 = lo * inv, hi * inv
        tmin, tmax = np.minimum(t1, t2), np.maximum(t1, t2)
        t_near = tmin.max(axis=2)
        t_far = tmax.min(axis=2)
        hit = (t_near <= t_far) & (t_near > NEAR_PLANE_M)
        region = depth[v0:v1, u0:u1]
        closer = hit & (t_near < region)
        if not closer.any():
            continue
        region[closer] = t_near[closer]
        face = tmin.argmax(axis=2)
        shade = _FACE_SHADE[face]
        colour = (np.array(box.colour, dtype=np.float32)[None, None, :] * shade[:, :, None]).astype(np.uint8)
        rgb[v0:v1, u0:u1][closer] = colour[closer]
        if index is not None:
            index[v0:v1, u0:u1][closer] = number
    depth[~np.isfinite(depth)] = FAR_PLANE_M
    return rgb, depth, index


def _screen_rect(box: Box, intrinsics: Intrinsics, pose: CameraPose,
                 cam: np.ndarray) -> tuple[int, int, int, int] | None:
    """The pixel rectangle a box can cover (the whole frame when it reaches behind the camera)."""
    corners = np.array([[box.centre[i] + sx * box.half[i] for i, sx in enumerate(signs)]
                        for signs in ((-1, -1, -1), (-1, -1, 1), (-1, 1, -1), (-1, 1, 1),
                                      (1, -1, -1), (1, -1, 1), (1, 1, -1), (1, 1, 1))]) - cam
    z = corners @ np.array(pose.forward)
    if (z <= 0).all():
        return None
    if (z <= NEAR_PLANE_M).any():
        return 0, intrinsics.width, 0, intrinsics.height
    u = intrinsics.cx + intrinsics.fx * (corners @ np.array(pose.right)) / z
    v = intrinsics.cy + intrinsics.fy * (corners @ np.array(pose.down)) / z
    u0, u1 = max(0, int(np.floor(u.min()))), min(intrinsics.width, int(np.ceil(u.max())) + 1)
    v0, v1 = max(0, int(np.floor(v.min()))), min(intrinsics.height, int(np.ceil(v.max())) + 1)
    if u0 >= u1 or v0 >= v1:
        return None
    return u0, u1, v0, v1
