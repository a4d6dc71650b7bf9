"""A scene file (config/scenes/*.yaml) as a MuJoCo world around the simulated Fetch.

Furniture stands on a ring around the room's centre, each piece's front facing the centre, with
room between pieces for the robot; the Fetch starts at the centre. Objects start packed in (on)
the receptacle the scene puts them in, front rows first. Before anything is simulated the world
is checked: every object has a shape, fits its gripper, fits the place it starts in and one of
the places the user wants it in, and every such place is within the arm's reach from a base pose
in front of its piece. A scene that fails is refused with one line naming the object and why.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from task_learning.world.scene import Scene
from task_learning_sim.fetch_model import fetch_spec
from task_learning_sim.furniture import OBJECT_AFFINITY, PlaceVolume, Receptacle, build_piece, yaw_quat
from task_learning_sim.shapes import ObjectShape, ShapesDoc, load_shapes

GAP_M = 0.8  # free floor between neighbouring pieces on the ring
MIN_RING_RADIUS_M = 2.2
# between neighbours: room for a finger (1.4 cm) and its margin beside an object, where the
# place has room for that (else the tighter gap)
PACK_GAPS_M = (0.03, 0.02)
# room left between a row's ends and the side walls: the Fetch's open fingers straddle an object
# across the row (5 cm each side of its centre, 1.4 cm thick)
FINGER_ROOM_M = 0.03
MAX_GRIPPER_OPENING_M = 0.1  # the Fetch's two fingers, 5 cm each
GRASP_MARGIN_M = 0.01
# Where the arm reaches: from the shoulder-lift axis to gripper_link's origin (between the finger
# pads in this model) is 0.978 m on the Fetch; 0.93 leaves room for the wrist's approach. The axis sits 0.1496 m ahead of base_link and
# 0.786 m above the floor plus the torso's lift (0.0386-0.3861 m).
ARM_REACH_M = 0.93
SHOULDER_AHEAD_M = 0.1496
SHOULDER_HEIGHT_M = 0.786
TORSO_RANGE_M = (0.0386, 0.3861)
# base_link's centre to a piece's front: the base's radius (~0.3 m) and a margin
STANDOFF_RANGE_M = (0.38, 0.8)


class SceneBuildError(ValueError):
    """A scene the simulator cannot build; the message is one line naming the object."""


@dataclass(frozen=True)
class Item:
    """A movable object: its scene id and type, shape, mass and where it starts."""

    id: str
    type: str
    shape: ObjectShape
    mass: float
    start: str


@dataclass
class SceneWorld:
    """The world's spec (the Fetch plus the scene) and what the simulator knows about it."""

    scene: Scene
    spec: mujoco.MjSpec
    receptacles: dict[str, Receptacle]
    items: dict[str, Item]
    positions: dict[str, tuple[float, float, float]] = field(default_factory=dict)


def _is_furniture(record: dict[str, Any]) -> bool:
    return not record.get("parentReceptacles")


def ring_layout(pieces: list[tuple[str, float, float]]) -> dict[str, tuple[float, float, float]]:
    """(id, depth, width) -> pose (x, y, yaw) of each piece on a ring, its front facing the centre."""
    spans = [width + GAP_M for _, _, width in pieces]
    circumference = sum(spans)
    radius = max(MIN_RING_RADIUS_M, circumference / (2 * math.pi))
    poses, start = {}, 0.0
    for (object_id, depth, _), span in zip(pieces, spans):
        angle = 2 * math.pi * (start + span / 2) / circumference
        start += span
        centre = radius + depth / 2
        poses[object_id] = (centre * math.cos(angle), centre * math.sin(angle), _wrap(angle + math.pi))
    return poses


def _wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def _item(record: dict[str, Any], shapes: ShapesDoc) -> Item:
    object_type = record["objectType"]
    shape = shapes.objects.get(object_type, shapes.default_object)
    mass = float(record.get("mass") or 0.0) or shape.mass
    return Item(record["objectId"], object_type, shape, mass, (record.get("parentReceptacles") or [""])[0])


def _check_grasp(item: Item) -> None:
    depth, width = item.shape.footprint()
    if min(depth, width, item.shape.height()) > MAX_GRIPPER_OPENING_M - GRASP_MARGIN_M:
        raise SceneBuildError(f"{item.id} ({item.type}): no side of it fits the Fetch's gripper "
                              f"(opens {MAX_GRIPPER_OPENING_M:.2f} m; smallest side {min(depth, width, item.shape.height()):.2f} m)")


def on_edge(shape: ObjectShape, room: float) -> bool:
    """Whether an object is packed standing on its edge, as people pack plates: a flat box too
    wide every way across for the gripper when it lies flat (it could only be slid off a floor),
    whose edge stands in `room` (the place's height)."""
    depth, width = shape.footprint()
    return shape.shape == "box" and min(depth, width) > MAX_GRIPPER_OPENING_M - GRASP_MARGIN_M \
        and shape.height() < min(depth, width) and max(depth, width) <= room


def _packed_size(shape: ObjectShape, room: float) -> tuple[float, float, float, float]:
    """(depth, width, height, roll) of the object as packed: on its edge (turned a quarter about
    its depth axis, its height then across) or as it stands."""
    depth, width = shape.footprint()
    if on_edge(shape, room):
        return depth, shape.height(), width, math.pi / 2
    return depth, width, shape.height(), 0.0


def pack(items: list[Item], place: PlaceVolume, receptacle: str) -> dict[str, tuple[float, float, float, float, float]]:
    """Poses (x, y, z, yaw, roll in the place's body frame) for `items` standing in rows from
    the place's front (high x) back, each turned so its narrow side runs along the row (flat ones
    on edge: `on_edge`), PACK_GAPS_M apart (the widest gap they fit with); SceneBuildError when
    one does not fit."""
    for gap in PACK_GAPS_M[:-1]:
        try:
            return _pack(items, place, receptacle, gap)
        except SceneBuildError:
            continue
    return _pack(items, place, receptacle, PACK_GAPS_M[-1])


def _pack(items: list[Item], place: PlaceVolume, receptacle: str, gap: float
          ) -> dict[str, tuple[float, float, float, float, float]]:
    positions: dict[str, tuple[float, float, float, float, float]] = {}
    height = place.high[2] - place.low[2]
    items = sorted(items, key=lambda item: _packed_size(item.shape, height)[2])  # short ones in front: reachable over
    low_y, high_y = place.low[1] + FINGER_ROOM_M, place.high[1] - FINGER_ROOM_M
    row_front, row_depth, y = place.high[0], 0.0, low_y
    for item in items:
        depth, width, tall, roll = _packed_size(item.shape, height)
        yaw = math.pi / 2 if width > depth else 0.0
        depth, width = max(depth, width), min(depth, width)
        if tall > height:
            raise SceneBuildError(f"{item.id} ({item.type}, {tall:.2f} m tall) is too big for "
                                  f"{receptacle} ({height:.2f} m inside)")
        if y + width + gap > high_y:  # next row, further back
            row_front, row_depth, y = row_front - row_depth - gap, 0.0, low_y
        if row_front - depth - gap < place.low[0] or y + width + gap > high_y:
            raise SceneBuildError(f"{item.id} ({item.type}) does not fit in {receptacle} with the "
                                  f"{len(positions)} objects before it")
        positions[item.id] = (row_front - gap - depth / 2, y + gap + width / 2,
                              place.low[2] + tall / 2 + 0.002, yaw, roll)
        y += width + gap
        row_depth = max(row_depth, depth)
    return positions


def reachable_from_front(local: tuple[float, float, float], receptacle: Receptacle) -> bool:
    """Whether a point (in the piece's frame, z above the floor) is within the arm's reach from
    some base pose facing the piece's front, at some torso height (the coarse envelope above)."""
    ahead = receptacle.depth / 2 - local[0]  # how far behind the front the point is
    for standoff in (STANDOFF_RANGE_M[0], sum(STANDOFF_RANGE_M) / 2, STANDOFF_RANGE_M[1]):
        horizontal = math.hypot(standoff + ahead - SHOULDER_AHEAD_M, local[1])
        for torso in TORSO_RANGE_M:
            if math.hypot(horizontal, local[2] - SHOULDER_HEIGHT_M - torso) <= ARM_REACH_M:
                return True
    return False


def _local_in_piece(receptacle: Receptacle, spec: mujoco.MjSpec, point: tuple[float, float, float]
                    ) -> tuple[float, float, float]:
    """A point given in the place volume's body frame, in the piece's own frame (a drawer's tray
    sits at its floor height; its slide starts closed)."""
    if receptacle.place.body == receptacle.id:
        return point
    offset = spec.body(receptacle.place.body).pos
    return (point[0] + offset[0], point[1] + offset[1], point[2] + offset[2])


def _in_world(receptacle: Receptacle, spec: mujoco.MjSpec, pose: tuple[float, float, float, float, float]
              ) -> tuple[float, float, float, float, float]:
    """A pose in the place volume's body frame as a pose in the world (the piece is turned by its yaw)."""
    x, y, z = _local_in_piece(receptacle, spec, pose[:3])
    px, py, yaw = receptacle.pose
    c, s = math.cos(yaw), math.sin(yaw)
    return (px + c * x - s * y, py + s * x + c * y, z, yaw + pose[3], pose[4])


def _add_item(world: mujoco.MjsBody, item: Item, pose: tuple[float, float, float, float, float]) -> None:
    """A free rigid body (in the world, as free bodies must be) with the object's shape and mass,
    turned by its yaw (and rolled on its edge); frictional enough for a two-finger grasp."""
    body = world.add_body(name=item.id, pos=list(pose[:3]))
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, np.array(yaw_quat(pose[3])), np.array([math.cos(pose[4] / 2), math.sin(pose[4] / 2), 0, 0]))
    body.quat = quat
    body.add_freejoint(name=f"{item.id}/free")
    kind = mujoco.mjtGeom.mjGEOM_BOX if item.shape.shape == "box" else mujoco.mjtGeom.mjGEOM_CYLINDER
    size = [s / 2 for s in item.shape.size] if item.shape.shape == "box" else [item.shape.size[0], item.shape.size[1] / 2, 0]
    body.add_geom(name=item.id, type=kind, size=size, mass=item.mass, condim=4, conaffinity=OBJECT_AFFINITY,
                  friction=[1.0, 0.02, 0.002], rgba=[0.85, 0.35, 0.2, 1.0])


def _check_destinations(world: SceneWorld) -> None:
    """Every object fits, and can be reached in, at least one place the user wants it."""
    for object_id, acceptable in world.scene.preferences.items():
        item = world.items.get(object_id)
        if item is None:
            continue
        problems = []
        for target in acceptable:
            receptacle = world.receptacles.get(target)
            if receptacle is None:
                problems.append(f"{target} is not furniture the simulator builds")
                continue
            try:
                spot = pack([item], receptacle.place, target)[item.id]
            except SceneBuildError as exc:
                problems.append(str(exc))
                continue
            if not reachable_from_front(_local_in_piece(receptacle, world.spec, spot[:3]), receptacle):
                problems.append(f"{target}'s place is out of the arm's reach")
                continue
            break
        else:
            raise SceneBuildError(f"{object_id}: no place the user wants it can take it ({'; '.join(problems)})")


def _place_items(world: SceneWorld, records: list[dict[str, Any]]) -> None:
    by_start: dict[str, list[Item]] = {}
    for record in records:
        item = world.items[record["objectId"]]
        if item.start not in world.receptacles:
            raise SceneBuildError(f"{item.id} starts in {item.start}, which is not furniture the simulator "
                                  "builds (objects inside objects are not simulated)")
        by_start.setdefault(item.start, []).append(item)
    for start, items in by_start.items():
        receptacle = world.receptacles[start]
        for object_id, pos in pack(items, receptacle.place, start).items():
            if not reachable_from_front(_local_in_piece(receptacle, world.spec, pos[:3]), receptacle):
                raise SceneBuildError(f"{object_id} starts in {start} out of the arm's reach")
            _add_item(world.spec.worldbody, world.items[object_id], _in_world(receptacle, world.spec, pos))


def build_world(scene: Scene, shapes: ShapesDoc | None = None) -> SceneWorld:
    """The scene around a Fetch standing at the origin facing +x; SceneBuildError (one line) when
    the simulator cannot build it."""
    shapes = shapes or load_shapes()
    spec = fetch_spec()
    spec.modelname = f"fetch_{scene.name}"
    furniture = [r for r in scene.objects if _is_furniture(r)]
    unknown = [r["objectId"] for r in furniture if r["objectType"] not in shapes.furniture]
    if unknown:
        raise SceneBuildError(f"scene {scene.name}: no physical shape for {unknown[0]} "
                              f"(its type is not in sim/shapes.yaml's furniture)")
    sized = [(r["objectId"], shapes.furniture[r["objectType"]].size[0], shapes.furniture[r["objectType"]].size[1])
             for r in furniture]
    poses = ring_layout(sized)
    receptacles = {r["objectId"]: build_piece(spec, r["objectId"], r["objectType"],
                                              shapes.furniture[r["objectType"]], poses[r["objectId"]])
                   for r in furniture}
    movable = [r for r in scene.objects if not _is_furniture(r)]
    world = SceneWorld(scene, spec, receptacles, {r["objectId"]: _item(r, shapes) for r in movable})
    for item in world.items.values():
        _check_grasp(item)
    _place_items(world, movable)
    _check_destinations(world)
    return world
