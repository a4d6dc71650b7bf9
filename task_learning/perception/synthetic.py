"""A simulated robot with an RGB-D head camera over a symbolic scene (for tests and the demo).

- `SyntheticLayout`: 3D poses for a scene. Furniture stands on a circle around the room centre,
  facing it; each has a white front panel with its marker, an inner volume (18 slots, 6 x 3) and,
  if it opens, a door covering the volume with a second marker (swung 90 degrees out when open).
  Each small object is a face with a marker standing in one slot.
- `render`: a pinhole camera (the Fetch head camera's intrinsics by default) sees those faces:
  markers drawn with cv2.aruco onto planar quads, a z-buffer for occlusion, depth in metres with
  Gaussian noise (sigma configurable), and which markers are fully in view (for ground truth).
- `SimulatedRobot`: the symbolic world (its rules and AI2-THOR error messages) plus the layout
  and a base pose; `execute` runs a skill (the skill server's job), the layout follows.

Nothing here is used by the bridge itself: it only ever sees images, camera info and poses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from task_learning.perception import geometry as g
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.registry import Door, MarkerRegistry, MarkerSpec, Volume, aruco_dictionary
from task_learning.perception.skills import SkillRequest, SkillResult
from task_learning.world import layout
from task_learning.world.camera_model import CameraModel
from task_learning.world.scene import Scene
from task_learning.world.symbolic import SymbolicWorld

SYNTHETIC_DICTIONARY = "DICT_4X4_100"
SLOT_M = 0.12
COLUMNS, ROWS = 6, 3
ITEM_MARKER_M = 0.08
ITEM_FACE_M = 0.10
BODY_MARKER_M = 0.14
DOOR_MARKER_M = 0.12
VOLUME_BOTTOM_M = 0.12      # above the body marker's centre
VOLUME_DEPTH_M = 0.35
ITEM_INSET_M = 0.08         # item faces stand this far behind the volume's front
ITEM_OFFSET = (0.0, 0.0, -0.03)
FURNITURE_OFFSET = (0.0, 0.25, -VOLUME_DEPTH_M / 2)
BODY_HEIGHT_M = 0.2         # height of the body marker's centre above the floor
STANDOFF_M = 1.2            # where navigate stops in front of a piece of furniture
WALL_DEPTH_M = 8.0
STATE_KEYS = ("isDirty", "isCooked", "isUsedUp", "isBroken", "isFilledWithLiquid", "isSliced")

VOLUME_W = COLUMNS * SLOT_M + 0.04
VOLUME_H = ROWS * SLOT_M + 0.04
VOLUME_CENTER = (0.0, VOLUME_BOTTOM_M + VOLUME_H / 2, -VOLUME_DEPTH_M / 2)
DOOR_AT = (0.0, VOLUME_CENTER[1], 0.01)


@dataclass
class Quad:
    """A textured rectangle: T_world_quad (x right, y up, z towards the viewer), its size, the
    texture (None: plain grey), the marker id it carries (-1: none)."""

    key: str
    T: np.ndarray
    width: float
    height: float
    marker_id: int = -1
    marker_size: float = 0.0
    shade: int = 235


@dataclass
class RenderedView:
    frame: RGBDFrame
    in_view: dict[int, float]  # marker id -> distance (m) of every marker fully in view
    id_image: np.ndarray


@dataclass
class SyntheticLayout:
    scene: Scene
    furniture: list[str] = field(default_factory=list)
    T_body: dict[str, np.ndarray] = field(default_factory=dict)
    slots: dict[str, tuple[str, int]] = field(default_factory=dict)  # item -> (furniture, slot)
    marker_of: dict[str, int] = field(default_factory=dict)
    door_marker_of: dict[str, int] = field(default_factory=dict)
    radius: float = 0.0

    @classmethod
    def of(cls, scene: Scene) -> "SyntheticLayout":
        lay = cls(scene)
        by_id = scene.by_id()
        lay.furniture = [o["objectId"] for o in scene.objects if not o["parentReceptacles"]]
        n = max(len(lay.furniture), 1)
        lay.radius = max(2.0, n * (VOLUME_W + 0.18) / (2 * math.pi))
        for i, fid in enumerate(lay.furniture):
            theta = 2 * math.pi * i / n
            out = np.array([math.cos(theta), math.sin(theta), 0.0])
            lay.T_body[fid] = g.facing(out * lay.radius + [0, 0, BODY_HEIGHT_M], -out)
        next_id = 0
        for o in scene.objects:
            lay.marker_of[o["objectId"]] = next_id
            next_id += 1
        for fid in lay.furniture:
            if by_id[fid].get("openable"):
                lay.door_marker_of[fid] = next_id
                next_id += 1
        for o in scene.objects:
            if o["parentReceptacles"]:
                lay.put(o["objectId"], o["parentReceptacles"][0])
        return lay

    def furniture_of(self, object_id: str) -> str:
        if object_id in self.T_body:
            return object_id
        if object_id in self.slots:
            return self.slots[object_id][0]
        by_id = self.scene.by_id()
        parents = by_id.get(object_id, {}).get("parentReceptacles") or []
        return self.furniture_of(parents[0]) if parents else ""

    def put(self, item: str, receptacle: str) -> bool:
        """Stand `item` in the first free slot of the furniture holding `receptacle`."""
        fid = self.furniture_of(receptacle)
        if not fid:
            return False
        used = {slot for f, slot in self.slots.values() if f == fid}
        free = [s for s in range(COLUMNS * ROWS) if s not in used]
        if not free:
            return False
        self.slots[item] = (fid, free[0])
        return True

    def T_item(self, item: str) -> np.ndarray:
        fid, slot = self.slots[item]
        col, row = slot % COLUMNS, slot // COLUMNS
        local = ((col - (COLUMNS - 1) / 2) * SLOT_M, VOLUME_BOTTOM_M + 0.02 + (row + 0.5) * SLOT_M, -ITEM_INSET_M)
        pose: np.ndarray = self.T_body[fid] @ g.make(None, local)
        return pose

    def true_position(self, object_id: str) -> np.ndarray:
        if object_id in self.T_body:
            return g.apply(self.T_body[object_id], np.asarray(FURNITURE_OFFSET))
        return g.apply(self.T_item(object_id), np.asarray(ITEM_OFFSET))

    def standing_pose(self, object_id: str) -> np.ndarray:
        """T_world_base in front of the furniture holding the object, facing it."""
        T = self.T_body[self.furniture_of(object_id)]
        normal = T[:3, 2]
        spot = T[:3, 3] + normal * STANDOFF_M
        return g.base_pose(float(spot[0]), float(spot[1]), math.atan2(-normal[1], -normal[0]))

    def registry(self) -> MarkerRegistry:
        """The registry a lab would write for this layout (measured, not guessed)."""
        reg = MarkerRegistry(dictionary=SYNTHETIC_DICTIONARY, source=f"<synthetic {self.scene.name}>")
        for o in self.scene.objects:
            oid = o["objectId"]
            state = tuple((k, o[k]) for k in STATE_KEYS if o.get(k))
            if oid in self.T_body:
                door = None
                if oid in self.door_marker_of:
                    door = Door(self.door_marker_of[oid], DOOR_MARKER_M, DOOR_AT)
                receptacle = Volume(VOLUME_CENTER, (VOLUME_W, VOLUME_H, VOLUME_DEPTH_M)) if o.get("receptacle") else None
                spec = MarkerSpec(self.marker_of[oid], oid, o["objectType"], BODY_MARKER_M,
                                  offset=FURNITURE_OFFSET, receptacle=receptacle, door=door, state=state)
                if door is not None:
                    reg.doors[door.marker_id] = spec
            else:
                spec = MarkerSpec(self.marker_of[oid], oid, o["objectType"], ITEM_MARKER_M,
                                  offset=ITEM_OFFSET, state=state)
            reg.markers[spec.marker_id] = spec
        return reg

    def quads(self, is_open: dict[str, bool], hidden: set[str]) -> list[Quad]:
        out: list[Quad] = []
        for fid, T in self.T_body.items():
            out.append(Quad(f"{fid}/panel", T @ g.make(None, (0, 0, 0)), VOLUME_W, 0.24,
                            self.marker_of[fid], BODY_MARKER_M))
            out.append(Quad(f"{fid}/back", T @ g.make(None, (0, VOLUME_CENTER[1], -VOLUME_DEPTH_M)),
                            VOLUME_W, VOLUME_H, shade=150))
            if fid in self.door_marker_of:
                hinge = T @ g.make(None, (-VOLUME_W / 2, DOOR_AT[1], DOOR_AT[2]))
                angle = -math.pi / 2 if is_open.get(fid) else 0.0
                door = hinge @ g.make(g.rot_y(angle)) @ g.make(None, (VOLUME_W / 2, 0, 0))
                out.append(Quad(f"{fid}/door", door, VOLUME_W, VOLUME_H,
                                self.door_marker_of[fid], DOOR_MARKER_M, shade=225))
        for item in self.slots:
            if item not in hidden:
                out.append(Quad(item, self.T_item(item), ITEM_FACE_M, ITEM_FACE_M,
                                self.marker_of[item], ITEM_MARKER_M))
        return out


class Renderer:
    """Draws quads into a colour + depth image (z-buffer)."""

    def __init__(self, camera: CameraModel, dictionary: str = SYNTHETIC_DICTIONARY) -> None:
        self.camera = camera
        self.dictionary = aruco_dictionary(dictionary)
        self._textures: dict[tuple[int, float, float, float, int, int], np.ndarray] = {}
        v, u = np.mgrid[0:camera.height, 0:camera.width]
        self._rays = np.dstack([(u - camera.cx) / camera.fx, (v - camera.cy) / camera.fy, np.ones(u.shape)])

    def texture(self, quad: Quad, side_px: int) -> np.ndarray:
        """The quad's face at about `side_px` pixels across (white/grey with its marker centred)."""
        key = (quad.marker_id, quad.marker_size, quad.width, quad.height, quad.shade, side_px)
        cached = self._textures.get(key)
        if cached is not None:
            return cached
        ppm = 60.0 / max(quad.marker_size, 0.01) if quad.marker_id >= 0 else 200.0  # 10 px per module
        w, h = max(int(round(quad.width * ppm)), 4), max(int(round(quad.height * ppm)), 4)
        img: np.ndarray = np.full((h, w), quad.shade, np.uint8)
        if quad.marker_id >= 0:
            side = int(round(quad.marker_size * ppm))
            marker = cv2.aruco.generateImageMarker(self.dictionary, quad.marker_id, side)
            y0, x0 = (h - side) // 2, (w - side) // 2
            img[y0:y0 + side, x0:x0 + side] = marker
        scale = side_px / max(w, h)
        if scale < 1.0:
            img = cv2.resize(img, (max(int(w * scale), 2), max(int(h * scale), 2)), interpolation=cv2.INTER_AREA)
        self._textures[key] = img
        return img

    def render(self, quads: list[Quad], T_world_camera: np.ndarray, *, stamp: float = 0.0,
               depth_noise_m: float = 0.005, rng: np.random.Generator | None = None,
               max_range_m: float = 3.0, min_range_m: float = 0.5) -> RenderedView:
        cam = self.camera
        color = np.full((cam.height, cam.width), 90, np.uint8)
        zbuf = np.full((cam.height, cam.width), WALL_DEPTH_M, np.float32)
        ids = np.full((cam.height, cam.width), -1, np.int32)
        T_cam_world = g.invert(T_world_camera)
        areas: dict[int, tuple[int, float, bool]] = {}
        for q in quads:
            hw, hh = q.width / 2, q.height / 2
            corners = g.apply(T_cam_world @ q.T, np.array([[-hw, hh, 0], [hw, hh, 0], [hw, -hh, 0], [-hw, -hh, 0]]))
            if np.any(corners[:, 2] < 0.05):
                continue
            uv, _ = cam.project(corners)
            x0, y0 = np.floor(uv.min(axis=0)).astype(int)
            x1, y1 = np.ceil(uv.max(axis=0)).astype(int) + 1
            bx0, by0, bx1, by1 = max(x0, 0), max(y0, 0), min(x1, cam.width), min(y1, cam.height)
            if bx1 <= bx0 or by1 <= by0:
                continue
            side_px = int(max(x1 - x0, y1 - y0)) + 2
            tex = self.texture(q, side_px)
            th, tw = tex.shape
            src = np.array([[0, 0], [tw, 0], [tw, th], [0, th]], dtype=np.float32)
            H = cv2.getPerspectiveTransform(src, np.asarray(uv - [bx0, by0], dtype=np.float32))
            size = (bx1 - bx0, by1 - by0)
            warped = cv2.warpPerspective(tex, H, size, flags=cv2.INTER_LINEAR, borderValue=0)
            mask = cv2.warpPerspective(np.ones_like(tex), H, size, flags=cv2.INTER_NEAREST, borderValue=0) > 0
            T_cq = T_cam_world @ q.T
            n, p0 = T_cq[:3, 2], T_cq[:3, 3]
            rays = self._rays[by0:by1, bx0:bx1]
            denom = rays @ n
            z = np.where(np.abs(denom) > 1e-9, float(n @ p0) / np.where(np.abs(denom) > 1e-9, denom, 1), np.inf)
            win = zbuf[by0:by1, bx0:bx1]
            draw = mask & (z > 0) & (z < win)
            win[draw] = z[draw]
            color[by0:by1, bx0:bx1][draw] = warped[draw]
            if q.marker_id >= 0:
                ids[by0:by1, bx0:bx1][draw] = q.marker_id
                inside = bool(np.all((uv >= 2) & (uv <= [cam.width - 3, cam.height - 3])))
                facing = float(-n @ (p0 / np.linalg.norm(p0)))  # cos of the viewing angle
                areas[q.marker_id] = (int(mask.sum()), float(np.linalg.norm(p0)), inside and facing > 0.5)
        in_view: dict[int, float] = {}
        for marker_id, (area, distance, ok) in areas.items():
            if ok and area > 0 and min_range_m <= distance <= max_range_m \
                    and int((ids == marker_id).sum()) >= 0.97 * area:
                in_view[marker_id] = distance
        depth = zbuf.copy()
        if depth_noise_m > 0:
            rng = rng or np.random.default_rng(0)
            depth += rng.standard_normal(depth.shape, dtype=np.float32) * np.float32(depth_noise_m)
        bgr = cv2.cvtColor(color, cv2.COLOR_GRAY2BGR)
        return RenderedView(RGBDFrame(bgr, depth, cam, stamp, T_world_camera), in_view, ids)


class SimulatedRobot:
    """The skill server's robot: a symbolic world for what may happen, a layout for where things
    are, a base pose and a head camera for what can be seen."""

    def __init__(self, scene: Scene, *, camera: CameraModel | None = None,
                 T_base_camera: np.ndarray | None = None, depth_noise_m: float = 0.005, seed: int = 0) -> None:
        self.scene = scene
        self.world = SymbolicWorld(scene)
        self.layout = SyntheticLayout.of(scene)
        self.camera = camera or CameraModel.fetch_head()
        self.T_base_camera = T_base_camera if T_base_camera is not None else g.head_camera()
        self.T_world_base = g.base_pose(0.0, 0.0, 0.0)
        self.depth_noise_m = depth_noise_m
        self.renderer = Renderer(self.camera)
        self.rng = np.random.default_rng(seed)
        self.registry = self.layout.registry()
        self.extra_quads: list[Quad] = []  # e.g. a marker nobody registered (tests)

    # -- camera ---------------------------------------------------------------------------------

    def _state(self) -> tuple[dict[str, bool], set[str]]:
        objects = self.world.metadata["objects"]
        is_open = {o["objectId"]: bool(o.get("isOpen")) for o in objects if o.get("openable")}
        hidden = {o["objectId"] for o in objects if not o.get("visible")}
        if self.world.held_object:
            hidden.add(self.world.held_object)
        return is_open, hidden

    def render(self, stamp: float = 0.0, T_world_base: np.ndarray | None = None) -> RenderedView:
        is_open, hidden = self._state()
        base = self.T_world_base if T_world_base is None else T_world_base
        quads = self.layout.quads(is_open, hidden) + self.extra_quads
        return self.renderer.render(quads, base @ self.T_base_camera, stamp=stamp,
                                    depth_noise_m=self.depth_noise_m, rng=self.rng)

    def look_around_poses(self, steps: int = 12) -> list[np.ndarray]:
        x, y = self.T_world_base[0, 3], self.T_world_base[1, 3]
        start = g.yaw_of(self.T_world_base)
        return [g.base_pose(x, y, start + 2 * math.pi * k / steps) for k in range(steps)]

    def add_stray_marker(self, marker_id: int) -> None:
        """Put a marker that is not in the registry beside the first piece of furniture."""
        T = self.layout.T_body[self.layout.furniture[0]] @ g.make(None, (-VOLUME_W / 2 - 0.15, 0.1, 0.0))
        self.extra_quads.append(Quad(f"stray/{marker_id}", T, ITEM_FACE_M, ITEM_FACE_M, marker_id, ITEM_MARKER_M))

    def true_parent(self, object_id: str) -> str:
        record = next(o for o in self.world.metadata["objects"] if o["objectId"] == object_id)
        return str((record.get("parentReceptacles") or [""])[0])

    def move_object(self, object_id: str, receptacle: str) -> None:
        """Someone else moved an object (a test of the belief's update)."""
        records = self.world._objects  # the symbolic world's own state: a test-only move
        old = records[object_id]["parentReceptacles"]
        for parent in old:
            records[parent]["receptacleObjectIds"].remove(object_id)
        records[object_id]["parentReceptacles"] = [receptacle]
        records[receptacle]["receptacleObjectIds"].append(object_id)
        self.world._cache = None
        self.layout.slots.pop(object_id, None)
        self.layout.put(object_id, receptacle)

    # -- skills ---------------------------------------------------------------------------------

    def execute(self, request: SkillRequest) -> SkillResult:
        skill, oid = request.skill, request.object_id
        ids = {o["objectId"] for o in self.world.metadata["objects"]}
        if oid not in ids:
            return SkillResult(False, f"no object {oid!r} in this world", "unknown_object")
        if skill in ("navigate", "search"):  # the synthetic robot's search: to where the object is
            result = self.world.step("NavigateToObject", objectId=oid)
            if result["lastActionSuccess"] and self.layout.furniture_of(oid):
                self.T_world_base = self.layout.standing_pose(oid)
            return self._result(result)
        action = {"pick": "PickupObject", "place": "PutObject", "open": "OpenObject",
                  "close": "CloseObject", "toggle_on": "ToggleObjectOn", "toggle_off": "ToggleObjectOff"}.get(skill)
        if action is None:
            return SkillResult(False, f"unknown skill {skill!r}", "unknown_skill")
        if not self._within_reach(oid):
            return SkillResult(False, f"{oid} is not within reach of the robot "
                               f"({self._reach_distance(oid):.2f} m > {layout.REACH_M} m)", "not_near")
        if not self.world.is_near(oid):  # keep the symbolic agent where the geometric one is
            self.world.step("NavigateToObject", objectId=oid)
        held = self.world.held_object
        if action == "PutObject":
            fid = self.layout.furniture_of(oid)
            used = sum(1 for f, _ in self.layout.slots.values() if f == fid)
            if used >= COLUMNS * ROWS:
                return SkillResult(False, f"No valid positions to place object found ({oid} is full)",
                                   "receptacle_full")
        result = self.world.step(action, objectId=oid)
        if result["lastActionSuccess"]:
            if action == "PickupObject":
                self.layout.slots.pop(oid, None)
            elif action == "PutObject" and held:
                self.layout.put(held, oid)
        return self._result(result)

    @staticmethod
    def _result(metadata: dict[str, Any]) -> SkillResult:
        if metadata["lastActionSuccess"]:
            return SkillResult(True)
        return SkillResult(False, str(metadata.get("errorMessage") or "failed"), str(metadata.get("errorCode") or ""))

    def _reach_distance(self, object_id: str) -> float:
        if object_id == self.world.held_object:
            return 0.0
        fid = self.layout.furniture_of(object_id)
        p = self.layout.true_position(object_id) if (object_id in self.layout.slots or object_id == fid) else None
        if p is None:
            return float("inf")
        return float(math.hypot(p[0] - self.T_world_base[0, 3], p[1] - self.T_world_base[1, 3]))

    def _within_reach(self, object_id: str) -> bool:
        return self._reach_distance(object_id) <= layout.REACH_M
