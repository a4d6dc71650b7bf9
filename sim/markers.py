"""Fiducial markers on the simulated world, and the marker registry an integrator would write for it.

A robot's perception (the stack's `fetch` backend) reads ArUco markers from the head camera; in a
real kitchen an integrator sticks them on things and measures where. Here the simulator does both:
`add_markers` textures a marker (cv2.aruco's image of its id, with a one-module white quiet zone)
onto a thin sticker geom on every object and every piece of furniture, and returns the registry
(`task_learning/perception/registry.py`'s YAML format) measured from the compiled model,
with each object's size along its marker's axes (`extent`: which way its narrow side lies).

Where the stickers go:
- an object: on the face that looks up as it is packed (a plate packed on its edge: that edge),
  as large as the face allows (side clamped to `OBJECT_MARKER_M`; a
  fork's or knife's tag overhangs it, as a card tied to it would, toward one end, the end
  alternating, so that the tags of things lying side by side do not overlap);
- a piece of furniture: on its front, in the band beside its opening (below its door where a
  10 cm marker fits, else above; below a drawer, on a bin's front wall, hanging under a table's
  front edge);
- a door: on its outside, in the middle; a drawer: on its front, beside the handle. The
  registry's `door.closed_at` is that marker's centre, closed, in the piece's marker frame, and
  `door.handle` the handle's centre in that marker's own frame (an integrator measures it once).

The sticker geoms have no collision and no mass: they change nothing in the physics. A sticker's
frame is its marker's (OpenCV's: x right, y up, z out of the face): a 2D texture on a box geom
shows on its +z face upright, which a test checks by detecting the markers in a rendered frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from task_learning_sim.assists import DOOR_OPEN_RAD
from task_learning_sim.furniture import DRAWER_TRAVEL, WALL_M, Receptacle
from task_learning_sim.scene_world import SceneWorld

DICTIONARY = "DICT_4X4_100"   # 100 ids: tidy_kitchen needs 51
MODULES = 6                    # a 4x4 marker: 4 bits and a one-module black border a side
QUIET = 1                      # white modules around it (the sticker's margin)
PX_PER_MODULE = 8
OBJECT_MARKER_M = (0.04, 0.08)  # an object's marker side: at least, at most
FURNITURE_MARKER_M = 0.15
DOOR_MARKER_M = 0.12
MIN_FRONT_MARKER_M = 0.1
STICKER_THICKNESS_M = 0.001


@dataclass
class MarkerPlan:
    """The markers added to a world: marker id -> (geom name, side of the black square in m),
    and the registry entries to write."""

    dictionary: str = DICTIONARY
    geoms: dict[int, tuple[str, float]] = field(default_factory=dict)
    entries: list[dict[str, Any]] = field(default_factory=list)

    def registry(self) -> dict[str, Any]:
        return {"dictionary": self.dictionary, "markers": self.entries}


def marker_image(marker_id: int, dictionary: str = DICTIONARY) -> np.ndarray:
    """The sticker's picture: the marker with its quiet zone, grey levels, (side, side)."""
    import cv2

    aruco = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, dictionary))
    image = cv2.aruco.generateImageMarker(aruco, marker_id, MODULES * PX_PER_MODULE)
    pad = QUIET * PX_PER_MODULE
    return np.asarray(cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=255))


def _sticker(spec: mujoco.MjSpec, body: mujoco.MjsBody, marker_id: int, size: float,
             pos: tuple[float, float, float], rotation: np.ndarray) -> str:
    """A textured sticker of marker side `size` on `body`; its frame (rotation's columns: x, y, z
    in the body's frame) is the marker's."""
    image = marker_image(marker_id)
    name = f"marker{marker_id}"
    texture = spec.add_texture(name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, width=image.shape[1],
                               height=image.shape[0], nchannel=3)
    texture.data = np.repeat(image[:, :, None], 3, axis=2).tobytes()
    material = spec.add_material(name=name)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.asarray(rotation, dtype=float).flatten())
    half = size * (MODULES + 2 * QUIET) / MODULES / 2
    body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(pos), quat=list(quat),
                  size=[half, half, STICKER_THICKNESS_M / 2], material=name, contype=0, conaffinity=0,
                  mass=0.0, density=0.0, group=1)
    return name


# marker frames in a piece's frame (x out of its front, y left, z up), as rotation columns
# a front marker: x to the right of someone facing the front (the piece's +y), y up, z out of the front
FRONT = np.column_stack([(0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)])


@dataclass(frozen=True)
class TopFace:
    """An object's face that looks up as the world packs it (a plate on its edge: an edge), in
    its body's frame: the sticker's frame there (rotation columns x, y, z: z out of the face),
    its distance from the centre, and the object's size along the sticker's x, y, z."""

    rotation: np.ndarray
    height: float
    extent: tuple[float, float, float]


def top_face(world: SceneWorld, item_id: str) -> TopFace:
    item = world.items[item_id]
    depth, width = item.shape.footprint()
    sizes = (depth, width, item.shape.height())
    flat = np.zeros(9)
    mujoco.mju_quat2Mat(flat, np.asarray(world.spec.body(item_id).quat, dtype=float))
    R = flat.reshape(3, 3)
    up = int(np.argmax(np.abs(R[2])))
    z = np.eye(3)[up] * np.sign(R[2, up])
    across = min(i for i in range(3) if i != up)
    x = np.eye(3)[across]
    y = np.cross(z, x)
    along = int(np.argmax(np.abs(y)))
    return TopFace(np.column_stack([x, y, z]), sizes[up] / 2, (sizes[across], sizes[along], sizes[up]))


def object_marker_size(face: TopFace) -> float:
    sticker = min(face.extent[0], face.extent[1]) * MODULES / (MODULES + 2 * QUIET)
    return float(min(max(sticker, OBJECT_MARKER_M[0]), OBJECT_MARKER_M[1]))


def _along_thin(face: TopFace, size: float, marker_id: int) -> np.ndarray:
    """Where on the top face (in the sticker's x, y) an object's sticker goes: its centre, or, on
    a thing narrower than its sticker (a fork, a knife, a plate on its edge), toward one end of
    its long side, the end alternating with the marker id: such things lie side by side, and
    stickers in the middle of each would overlap their neighbours' and be read by none."""
    a, b = face.extent[0], face.extent[1]
    sticker = size * (MODULES + 2 * QUIET) / MODULES
    if min(a, b) >= sticker:
        return np.zeros(2)
    shift = max(0.0, (max(a, b) - sticker) / 2) * (1 if marker_id % 2 else -1)
    return np.array([shift, 0.0]) if a > b else np.array([0.0, shift])


def _furniture_spot(receptacle: Receptacle, height: float, floor: float, ceiling: float) -> tuple[float, float]:
    """(z of the marker's centre on the front, its side): the larger free band of the front beside
    the opening, the marker as near the opening as it fits."""
    margin = 0.02
    if receptacle.form == "table":
        return height - 0.04 - FURNITURE_MARKER_M * 0.75, FURNITURE_MARKER_M
    if receptacle.form == "bin":
        band = height - floor
        side = min(FURNITURE_MARKER_M, (band - 2 * margin) * MODULES / (MODULES + 2 * QUIET))
        return floor + band / 2, side
    below, above = floor, height - ceiling
    side_below = min(FURNITURE_MARKER_M, (below - 2 * margin) * MODULES / (MODULES + 2 * QUIET))
    side_above = min(FURNITURE_MARKER_M, (above - 2 * margin) * MODULES / (MODULES + 2 * QUIET))
    sticker = lambda side: side * (MODULES + 2 * QUIET) / MODULES  # noqa: E731
    # below the door where a 10 cm marker fits: a tall piece's band above its door is over the
    # head camera's view from across the room (the camera looks down, its top ray ~10 degrees down)
    if side_below >= MIN_FRONT_MARKER_M or side_below >= side_above:
        return floor - margin - sticker(side_below) / 2, side_below
    return ceiling + margin + sticker(side_above) / 2, side_above


def add_markers(world: SceneWorld) -> MarkerPlan:
    """Stickers on every object and piece of the world's spec (before it is compiled), and the
    registry measured from the compiled model."""
    from task_learning_sim.shapes import load_shapes

    spec, plan, shapes = world.spec, MarkerPlan(), load_shapes()
    next_id = 0
    for record in world.scene.objects:
        object_id = record["objectId"]
        if object_id in world.items:
            face = top_face(world, object_id)
            size = object_marker_size(face)
            local = np.array([*_along_thin(face, size, next_id), face.height + STICKER_THICKNESS_M / 2])
            x, y, z = (float(v) for v in face.rotation @ local)
            plan.geoms[next_id] = (_sticker(spec, spec.body(object_id), next_id, size, (x, y, z), face.rotation), size)
        elif object_id in world.receptacles:
            receptacle = world.receptacles[object_id]
            shape = shapes.furniture[receptacle.type]
            z, size = _furniture_spot(receptacle, shape.size[2], shape.floor, shape.ceiling)
            front = receptacle.depth / 2 + STICKER_THICKNESS_M / 2
            if receptacle.form == "table":
                front -= 0.03  # hanging under the top's front edge, between the legs
            plan.geoms[next_id] = (_sticker(spec, spec.body(object_id), next_id, size, (front, 0, z), FRONT), size)
        else:
            continue
        next_id += 1
    doors: dict[str, tuple[int, str, float]] = {}  # piece -> its door's marker id, geom, side
    for receptacle in world.receptacles.values():
        if receptacle.joint:
            doors[receptacle.id] = (next_id, *_door_sticker(world, receptacle, next_id))
            next_id += 1
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    plan.entries = [_entry(world, model, data, marker_id, name, size, doors)
                    for marker_id, (name, size) in plan.geoms.items()]
    return plan


def _door_sticker(world: SceneWorld, receptacle: Receptacle, marker_id: int) -> tuple[str, float]:
    """A sticker on the door (the drawer's front): its geom and marker side."""
    from task_learning_sim.shapes import load_shapes

    furniture = load_shapes().furniture[receptacle.type]
    opening = furniture.ceiling - furniture.floor
    if receptacle.form == "cabinet":
        body = world.spec.body(f"{receptacle.id}/door")
        size = min(DOOR_MARKER_M, 0.5 * receptacle.width, 0.6 * opening)
        pos = (WALL_M + STICKER_THICKNESS_M / 2, -receptacle.width / 2, (furniture.floor + furniture.ceiling) / 2)
    else:
        body = world.spec.body(receptacle.place.body)  # the drawer's tray
        size = min(DOOR_MARKER_M, 0.6 * opening)
        pos = (receptacle.depth / 2 + STICKER_THICKNESS_M / 2, -receptacle.width / 4, opening / 2)
    return _sticker(world.spec, body, marker_id, size, pos, FRONT), size


def _pose(data: mujoco.MjData, geom: str) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = data.geom(geom).xmat.reshape(3, 3)
    T[:3, 3] = data.geom(geom).xpos
    return T


def _in_marker(T_world_marker: np.ndarray, point: np.ndarray) -> list[float]:
    local = T_world_marker[:3, :3].T @ (np.asarray(point) - T_world_marker[:3, 3])
    return [round(float(v), 4) for v in local]


def _entry(world: SceneWorld, model: mujoco.MjModel, data: mujoco.MjData, marker_id: int, geom: str,
           size: float, doors: dict[str, tuple[int, str, float]]) -> dict[str, Any]:
    body_id = int(model.geom_bodyid[model.geom(geom).id])
    object_id = model.body(body_id).name
    T = _pose(data, geom)
    record = world.scene.by_id()[object_id]
    entry: dict[str, Any] = {"id": marker_id, "object": object_id, "type": record["objectType"],
                             "size": round(size, 4)}
    if object_id in world.items:
        entry["offset"] = _in_marker(T, data.body(object_id).xpos)
        # its size along the sticker's axes says which way its narrow side lies
        entry["extent"] = [round(float(v), 4) for v in top_face(world, object_id).extent]
        return entry
    receptacle = world.receptacles[object_id]
    body = data.body(object_id)
    entry["offset"] = _in_marker(T, body.xpos + body.xmat.reshape(3, 3)[:, 2] * _height(receptacle) / 2)
    entry["receptacle"] = _volume(receptacle, data, T)
    if object_id in doors:
        door_id, door_geom, door_size = doors[object_id]
        entry["door"] = {"marker": door_id, "size": round(door_size, 4),
                         "closed_at": _in_marker(T, data.geom(door_geom).xpos),
                         "handle": _in_marker(_pose(data, door_geom), data.geom(f"{object_id}/handle").xpos)}
        if receptacle.form == "cabinet":  # a hinged door: where the assist's stop holds it open
            joint = model.joint(receptacle.joint).id
            axis = T[:3, :3].T @ data.xaxis[joint]
            entry["door"]["swing"] = {"hinge": _in_marker(T, data.xanchor[joint]),
                                      "axis": [round(float(v), 4) for v in axis], "angle": DOOR_OPEN_RAD}
    return entry


def _height(receptacle: Receptacle) -> float:
    from task_learning_sim.shapes import load_shapes

    return float(load_shapes().furniture[receptacle.type].size[2])


def _volume(receptacle: Receptacle, data: mujoco.MjData, T_world_marker: np.ndarray) -> dict[str, list[float]]:
    """The receptacle's place volume as a box in the marker's frame (the pieces' frames and the
    markers' differ by axis permutations, so the box stays axis-aligned); a drawer's reaches out
    by its travel, so what stands in the open drawer is in it too."""
    place = receptacle.place
    frame = data.body(place.body)
    R, p = frame.xmat.reshape(3, 3), frame.xpos
    low, high = np.array(place.low, dtype=float), np.array(place.high, dtype=float)
    if receptacle.form == "drawer":
        high[0] += DRAWER_TRAVEL * receptacle.depth
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    local = np.array([_in_marker(T_world_marker, p + R @ c) for c in corners])
    lo, hi = local.min(axis=0), local.max(axis=0)
    out: dict[str, Any] = {"center": [round(float(v), 4) for v in (lo + hi) / 2],
                           "size": [round(float(v), 4) for v in hi - lo]}
    walls = _walls_above_floor(receptacle)
    if walls > 0:
        out["walls"] = round(walls, 4)
    return out


def _walls_above_floor(receptacle: Receptacle) -> float:
    """How high a bin's walls or a drawer tray's rise above its place volume's floor (a table's
    top and a cabinet's compartment, entered from the front, have none)."""
    low, high = receptacle.place.low[2], receptacle.place.high[2]
    if receptacle.form == "bin":
        return _height(receptacle) - low
    if receptacle.form == "drawer":
        return high - low
    return 0.0


def registry_yaml(plan: MarkerPlan) -> str:
    import yaml

    header = ("# The marker registry of the simulated world: written by task-learning-sim "
              "--write-marker-registry from the stickers it textures (sim/markers.py).\n")
    return header + yaml.safe_dump(plan.registry(), sort_keys=False, default_flow_style=None)
