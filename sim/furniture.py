"""Furniture as MuJoCo bodies: tables, open bins, cabinets with a hinged door, chests with a drawer.

Each piece is built in its own frame (origin on the floor at its centre, x out of its front, y to
its left, z up) under a body placed by the layout. What the rest of the simulator needs to know
about a piece comes back as a `Receptacle`: where things go in it (its place volume, on the body
that carries them: the drawer's tray moves with the drawer) and the joint that opens it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco

from task_learning_sim.fetch_model import scalar_like
from task_learning_sim.shapes import FurnitureShape

WALL_M = 0.02
# Collision bits. Doors' panels and drawers' trays are of their own kind (MOVING_PART): they touch
# the objects (whose conaffinity, OBJECT_AFFINITY, has that bit) but not the robot, so a door
# driven open by the door assist (sim/assists.py) never sweeps through the Fetch. Handles are
# ordinary geoms: the gripper closes on them.
MOVING_PART = 2
OBJECT_AFFINITY = 1 | MOVING_PART
DOOR_OPEN_MAX_RAD = 1.9
DRAWER_TRAVEL = 0.8  # of the chest's depth
# how far above a surface (a table, a bin's floor) the place volume reaches
ABOVE_SURFACE_M = 0.35
WOOD = (0.62, 0.47, 0.32, 1.0)
WHITE = (0.9, 0.9, 0.88, 1.0)
HANDLE = (0.2, 0.2, 0.2, 1.0)


@dataclass(frozen=True)
class PlaceVolume:
    """An axis-aligned box in `body`'s frame: an object whose centre is inside it is in (on) the piece."""

    body: str
    low: tuple[float, float, float]
    high: tuple[float, float, float]

    def contains(self, point: tuple[float, float, float]) -> bool:
        return all(lo <= p <= hi for lo, p, hi in zip(self.low, point, self.high))


@dataclass(frozen=True)
class Receptacle:
    """A built piece: its scene id and type, form, pose on the floor (x, y, yaw), depth and width,
    place volume, and the joint that opens it ('' if none) with the value below which it is closed."""

    id: str
    type: str
    form: str
    pose: tuple[float, float, float]
    depth: float
    width: float
    place: PlaceVolume
    joint: str = ""
    closed_below: float = 0.0


def yaw_quat(yaw: float) -> list[float]:
    """MuJoCo's (w, x, y, z) quaternion of a turn by `yaw` about z."""
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def _box(body: mujoco.MjsBody, centre: tuple[float, float, float], half: tuple[float, float, float],
         rgba: tuple[float, float, float, float], name: str = "", moving: bool = False) -> None:
    """A box geom; a `moving` one (a door's panel, a drawer's tray) collides with the objects
    but not with the robot (contype MOVING_PART, conaffinity 0: see OBJECT_AFFINITY)."""
    geom = body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(centre), size=list(half), rgba=list(rgba))
    if moving:
        geom.contype, geom.conaffinity = MOVING_PART, 0


def _table(body: mujoco.MjsBody, shape: FurnitureShape) -> None:
    depth, width, height = shape.size
    _box(body, (0, 0, height - WALL_M), (depth / 2, width / 2, WALL_M), WOOD)
    for sx in (-1, 1):
        for sy in (-1, 1):
            leg = (sx * (depth / 2 - 0.04), sy * (width / 2 - 0.04), (height - 2 * WALL_M) / 2)
            _box(body, leg, (0.02, 0.02, (height - 2 * WALL_M) / 2), WOOD)


def _walls(body: mujoco.MjsBody, depth: float, width: float, low: float, high: float,
           rgba: tuple[float, float, float, float], front: bool, moving: bool = False) -> None:
    """Back, sides (and front) of an open-top box between heights `low` and `high`."""
    mid, half_z = (low + high) / 2, (high - low) / 2
    _box(body, (-depth / 2 + WALL_M / 2, 0, mid), (WALL_M / 2, width / 2, half_z), rgba, moving=moving)
    if front:
        _box(body, (depth / 2 - WALL_M / 2, 0, mid), (WALL_M / 2, width / 2, half_z), rgba, moving=moving)
    for sy in (-1, 1):
        _box(body, (0, sy * (width / 2 - WALL_M / 2), mid), (depth / 2, WALL_M / 2, half_z), rgba, moving=moving)


def _bin(body: mujoco.MjsBody, shape: FurnitureShape) -> PlaceVolume:
    depth, width, height = shape.size
    floor = max(shape.floor, WALL_M)
    _box(body, (0, 0, floor / 2), (depth / 2, width / 2, floor / 2), WHITE)
    _walls(body, depth, width, floor, height, WHITE, front=True)
    inner = (depth / 2 - WALL_M, width / 2 - WALL_M)
    return PlaceVolume(body.name, (-inner[0], -inner[1], floor), (inner[0], inner[1], height + ABOVE_SURFACE_M))


def _hinge_or_slide(body: mujoco.MjsBody, name: str, kind: mujoco.mjtJoint, travel: float, *,
                    damping: float, friction: float) -> None:
    """A door's hinge (about z) or a drawer's slide (along x), from 0 (closed) to `travel`, with
    enough damping and friction that it stays where the gripper leaves it."""
    axis = [0, 0, 1] if kind == mujoco.mjtJoint.mjJNT_HINGE else [1, 0, 0]
    joint = body.add_joint(name=name, type=kind, axis=axis, range=[0.0, travel],
                           limited=mujoco.mjtLimited.mjLIMITED_TRUE, frictionloss=friction, armature=0.05)
    joint.damping = scalar_like(joint.damping, damping)


def _cabinet(spec_body: mujoco.MjsBody, shape: FurnitureShape, door_joint: str) -> PlaceVolume:
    depth, width, height = shape.size
    _box(spec_body, (0, 0, shape.floor / 2), (depth / 2, width / 2, shape.floor / 2), WHITE)
    _box(spec_body, (0, 0, (shape.ceiling + height) / 2), (depth / 2, width / 2, (height - shape.ceiling) / 2), WHITE)
    _walls(spec_body, depth, width, shape.floor, shape.ceiling, WHITE, front=False)
    # the door: hinged on the front left edge; 0 closed, positive swings it out
    door = spec_body.add_body(name=f"{spec_body.name}/door", pos=[depth / 2, width / 2, 0.0])
    _hinge_or_slide(door, door_joint, mujoco.mjtJoint.mjJNT_HINGE, DOOR_OPEN_MAX_RAD, damping=2.0, friction=0.5)
    mid, half_z = (shape.floor + shape.ceiling) / 2, (shape.ceiling - shape.floor) / 2
    _box(door, (WALL_M / 2, -width / 2, mid), (WALL_M / 2, width / 2, half_z), WOOD, moving=True)
    _box(door, (WALL_M + 0.02, -width + 0.06, mid), (0.02, 0.01, min(0.08, half_z * 0.6)), HANDLE,
         name=f"{spec_body.name}/handle")
    inner = (depth / 2 - WALL_M, width / 2 - WALL_M)
    return PlaceVolume(spec_body.name, (-inner[0], -inner[1], shape.floor), (depth / 2, inner[1], shape.ceiling))


def _drawer(spec_body: mujoco.MjsBody, shape: FurnitureShape, slide_joint: str) -> PlaceVolume:
    depth, width, height = shape.size
    gap = 0.005
    _box(spec_body, (0, 0, (shape.floor - gap) / 2), (depth / 2, width / 2, (shape.floor - gap) / 2), WHITE)
    top = shape.ceiling + gap
    _box(spec_body, (0, 0, (top + height) / 2), (depth / 2, width / 2, (height - top) / 2), WHITE)
    for sy in (-1, 1):
        _box(spec_body, (0, sy * (width / 2 - WALL_M / 2), (shape.floor + top) / 2),
             (depth / 2, WALL_M / 2, (top - shape.floor) / 2), WHITE)
    tray = spec_body.add_body(name=f"{spec_body.name}/tray", pos=[0.0, 0.0, shape.floor])
    _hinge_or_slide(tray, slide_joint, mujoco.mjtJoint.mjJNT_SLIDE, DRAWER_TRAVEL * depth, damping=5.0, friction=1.0)
    inner_w = width / 2 - WALL_M - gap
    tray_h = shape.ceiling - shape.floor
    _box(tray, (0, 0, WALL_M / 2), (depth / 2, inner_w, WALL_M / 2), WOOD, moving=True)
    _walls(tray, depth, 2 * inner_w, WALL_M, tray_h, WOOD, front=True, moving=True)
    # a bar upright, as the door's: the Fetch's level fingers close across its 2 cm
    _box(tray, (depth / 2 + 0.02, 0, tray_h / 2), (0.02, 0.01, min(0.08, tray_h * 0.4)), HANDLE,
         name=f"{spec_body.name}/handle")
    return PlaceVolume(tray.name, (-depth / 2 + WALL_M, -inner_w + WALL_M, WALL_M),
                       (depth / 2 - WALL_M, inner_w - WALL_M, tray_h))


def build_piece(spec: mujoco.MjSpec, object_id: str, object_type: str, shape: FurnitureShape,
                pose: tuple[float, float, float]) -> Receptacle:
    """Add the piece `object_id` to the world at `pose` (x, y, yaw: its front faces yaw)."""
    x, y, yaw = pose
    body = spec.worldbody.add_body(name=object_id, pos=[x, y, 0.0])
    body.quat = yaw_quat(yaw)
    depth, width, height = shape.size
    joint, closed_below = "", 0.0
    if shape.form == "table":
        _table(body, shape)
        place = PlaceVolume(object_id, (-depth / 2, -width / 2, height), (depth / 2, width / 2, height + ABOVE_SURFACE_M))
    elif shape.form == "bin":
        place = _bin(body, shape)
    elif shape.form == "cabinet":
        joint, closed_below = f"{object_id}/hinge", 0.05
        place = _cabinet(body, shape, joint)
    else:
        joint, closed_below = f"{object_id}/slide", 0.01
        place = _drawer(body, shape, joint)
    if joint:
        # a door or tray moves along its carcass by its joint, not by contact (MuJoCo filters
        # parent-child contacts, but not under a parent welded to the world, as furniture is)
        spec.add_exclude(bodyname1=object_id, bodyname2=place.body if shape.form == "drawer" else f"{object_id}/door")
    return Receptacle(id=object_id, type=object_type, form=shape.form, pose=pose, depth=depth, width=width,
                      place=place, joint=joint, closed_below=closed_below)
