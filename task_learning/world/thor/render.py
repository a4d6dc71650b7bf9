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

from task_learning.world.camera_model import CameraModel
from task_learning.world.thor.camera import FAR_PLANE_M, NEAR_PLANE_M, CameraPose

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


Vec3 = tuple[float, float, float]


def box_offsets(objects: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Vec3, Vec3]]:
    """Per object id: (centre minus position, size), from the recorded bounding boxes at load
    time (objects move later, their boxes with them) or defaults for hand-written scenes."""
    out: dict[str, tuple[Vec3, Vec3]] = {}
    records = list(objects)
    for record in records:
        box = record.get("axisAlignedBoundingBox")
        position = record.get("position") or {}
        if isinstance(box, Mapping) and isinstance(box.get("center"), Mapping) and isinstance(box.get("size"), Mapping):
            centre, size = box["center"], box["size"]
            offset: Vec3 = (float(centre["x"]) - float(position.get("x", 0.0)),
                            float(centre["y"]) - float(position.get("y", 0.0)),
                            float(centre["z"]) - float(position.get("z", 0.0)))
            extent: Vec3 = (max(float(size["x"]), 0.01), max(float(size["y"]), 0.01), max(float(size["z"]), 0.01))
        elif record.get("parentReceptacles"):
            offset, extent = (0.0, SMALL_SIZE[1] / 2, 0.0), SMALL_SIZE
        else:
            offset, extent = (0.0, FURNITURE_SIZE[1] / 2, 0.0), FURNITURE_SIZE
        out[str(record["objectId"])] = (offset, extent)
    _rest_on_surfaces(records, out)
    return out


def _rest_on_surfaces(records: list[Mapping[str, Any]], boxes: dict[str, Any]) -> None:
    """Recorded boxes of counters and shelves reach a little above the things resting on them
    (up to 2 cm in iTHOR's kitchens, the whole thickness of a thin counter slab), which would bury
    a credit card: lower a surface's box so its top meets the lowest bottom of what rests on it
    (openable receptacles, like drawers, keep their boxes)."""
    by_id = {str(r["objectId"]): r for r in records}
    tops: dict[str, float] = {}
    for record in records:
        for parent in record.get("parentReceptacles") or []:
            holder = by_id.get(parent)
            if holder is None or holder.get("openable") or parent not in boxes:
                continue
            position = record.get("position") or {}
            offset, size = boxes[str(record["objectId"])]
            bottom = float(position.get("y", 0.0)) + offset[1] - size[1] / 2
            tops[parent] = min(tops.get(parent, float("inf")), bottom)
    for parent, bottom in tops.items():
        holder_y = float((by_id[parent].get("position") or {}).get("y", 0.0))
        (ox, oy, oz), size = boxes[parent]
        high = holder_y + oy + size[1] / 2
        if bottom < high:  # the top comes down to what rests on it (a thin slab moves down whole)
            boxes[parent] = ((ox, oy - (high - bottom), oz), size)


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
        centre = (float(position.get("x", 0.0)) + offset[0], float(position.get("y", 0.0)) + offset[1],
                  float(position.get("z", 0.0)) + offset[2])
        boxes.append(Box(oid, centre, (size[0] / 2, size[1] / 2, size[2] / 2), colour_of(record["objectType"])))
    return boxes


def render(boxes: list[Box], intrinsics: CameraModel, pose: CameraPose,
           ids: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(rgb HxWx3 uint8, depth HxW float32 metres, instance index HxW int32 or None)."""
    width, height = intrinsics.width, intrinsics.height
    depth = np.full((height, width), np.inf, dtype=np.float32)
    face = np.zeros((height, width), dtype=np.int8)
    colour_index = np.zeros((height, width), dtype=np.int32)  # 0: background, else box number
    cam = np.array(pose.position, dtype=np.float64)
    us = ((np.arange(width) - intrinsics.cx) / intrinsics.fx).astype(np.float32)
    vs = ((np.arange(height) - intrinsics.cy) / intrinsics.fy).astype(np.float32)
    # per axis, the ray directions of every pixel with a unit forward component, so a ray's hit
    # parameter is the planar depth; and their inverses for the slab test
    inverse = []
    for a in range(3):
        d = (np.float32(pose.forward[a]) + us[None, :] * np.float32(pose.right[a])
             + vs[:, None] * np.float32(pose.down[a]))
        d[np.abs(d) < 1e-9] = 1e-9
        inverse.append(1.0 / d)
    for number, box in enumerate(boxes, start=1):
        rect = _screen_rect(box, intrinsics, pose, cam)
        if rect is None:
            continue
        u0, u1, v0, v1 = rect
        t_near = np.full((v1 - v0, u1 - u0), -np.inf, dtype=np.float32)
        t_far = np.full((v1 - v0, u1 - u0), np.inf, dtype=np.float32)
        hit_face = np.zeros((v1 - v0, u1 - u0), dtype=np.int8)
        for a in range(3):
            inv = inverse[a][v0:v1, u0:u1]
            t1 = np.float32(box.centre[a] - box.half[a] - cam[a]) * inv
            t2 = np.float32(box.centre[a] + box.half[a] - cam[a]) * inv
            near_a = np.minimum(t1, t2)
            larger = near_a > t_near
            hit_face[larger] = a
            np.maximum(t_near, near_a, out=t_near)
            np.minimum(t_far, np.maximum(t1, t2), out=t_far)
        region = depth[v0:v1, u0:u1]
        closer = (t_near <= t_far) & (t_near > NEAR_PLANE_M) & (t_near < region)
        if not closer.any():
            continue
        region[closer] = t_near[closer]
        face[v0:v1, u0:u1][closer] = hit_face[closer]
        colour_index[v0:v1, u0:u1][closer] = number
    palette = np.array([BACKGROUND] + [box.colour for box in boxes], dtype=np.float32)
    shade = np.where(colour_index == 0, 1.0, _FACE_SHADE[face]).astype(np.float32)
    rgb = (palette[colour_index] * shade[:, :, None]).astype(np.uint8)
    depth[~np.isfinite(depth)] = FAR_PLANE_M
    return rgb, depth, (colour_index if ids else None)


_EDGES = ((0, 1), (0, 2), (0, 4), (1, 3), (1, 5), (2, 3), (2, 6), (3, 7), (4, 5), (4, 6), (5, 7), (6, 7))


def _screen_rect(box: Box, intrinsics: CameraModel, pose: CameraPose,
                 cam: np.ndarray) -> tuple[int, int, int, int] | None:
    """The pixel rectangle the part of a box in front of the near plane can cover."""
    corners = np.array([[box.centre[i] + sx * box.half[i] for i, sx in enumerate(signs)]
                        for signs in ((-1, -1, -1), (-1, -1, 1), (-1, 1, -1), (-1, 1, 1),
                                      (1, -1, -1), (1, -1, 1), (1, 1, -1), (1, 1, 1))]) - cam
    forward, right, down = (np.array(v) for v in (pose.forward, pose.right, pose.down))
    z = corners @ forward
    near = NEAR_PLANE_M
    if (z <= near).all():
        return None
    points = [corners[i] for i in range(8) if z[i] > near]
    for i, j in _EDGES:  # where an edge crosses the near plane
        if (z[i] > near) != (z[j] > near):
            s = (near - z[i]) / (z[j] - z[i])
            points.append(corners[i] + s * (corners[j] - corners[i]))
    pts = np.array(points)
    zs = np.maximum(pts @ forward, near)
    u = intrinsics.cx + intrinsics.fx * (pts @ right) / zs
    v = intrinsics.cy + intrinsics.fy * (pts @ down) / zs
    u0, u1 = max(0, int(np.floor(u.min()))), min(intrinsics.width, int(np.ceil(u.max())) + 1)
    v0, v1 = max(0, int(np.floor(v.min()))), min(intrinsics.height, int(np.ceil(v.max())) + 1)
    if u0 >= u1 or v0 >= v1:
        return None
    return u0, u1, v0, v1
