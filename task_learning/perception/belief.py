"""The belief world state: what the robot believes about every registered object it has seen.

- An object stays known when out of view: its last pose, `lastSeen` stamp and a `confidence`
  that halves every `half_life_s` since it was last seen (1.0 in the latest frame).
- `visible` means in the latest frame's view (AI2-THOR's meaning: in view, within distance), or
  held: its marker seen in it, or, for an object the robot already knows, where the robot
  believes it projects into the image within IN_VIEW_M and the depth there does not show the
  camera seeing past it. A marker hidden behind a bag's wall from where the arm must stand is
  still in view; an object that is not where it was believed (the camera sees the floor behind
  that point) is not.
- Containment: an object is in/on the receptacle whose registered volume holds its centre (the
  smallest, if volumes nest).
- Open/closed: the door marker's orientation against the body marker's (a door swung open is
  turned away); when the door marker is not seen but the body is, the depth where the closed
  door would be says whether something is there (closed) or the camera sees past it (open).
- What the robot did itself (a successful skill) is believed until a frame says otherwise: a held
  object moves with the gripper, a placed one is in the receptacle's volume, an opened door is
  open.

It renders as AI2-THOR metadata (y up: x = map x, y = height, z = map y), so grounding, STARS,
BCR and the planner read it exactly as they read the symbolic world; beside it, every object's and
the robot's pose in REP-103 `map` (x forward, y left, z up) with its full orientation (`poseMap`:
the marker's frame for an object, base_link for the robot), which the ROS layer publishes as
geometry_msgs/PoseStamped.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from task_learning.perception import geometry as g
from task_learning.perception.detect import Detections
from task_learning.perception.registry import MarkerRegistry, MarkerSpec
from task_learning.world import layout
from task_learning.world.camera_model import CameraModel
from task_learning.world.catalog import ObjectType
from task_learning.world.scene import make_object_record

log = logging.getLogger(__name__)

DOOR_OPEN_ANGLE_DEG = 30.0
DOOR_MOVED_M = 0.06  # a drawer front this far from where it closes is open (a centimetre-level pose is far inside)
DOOR_DEPTH_GAP_M = 0.05
IN_VIEW_M = 2.5  # a known object this near in the image is in view though its marker is hidden
SEE_PAST_M = 0.1  # ... unless the depth there is this much farther than where it is believed
HAND_IN_BASE = (0.45, 0.0, 0.9)
HORIZONTAL_AXIS_SIN = 0.7  # a marker axis within ~45 degrees of level says which way the object lies


def pose_record(T: np.ndarray, frame_id: str, stamp: float) -> dict[str, Any]:
    """A pose in `frame_id` as plain data: the `poseMap` key of an object or of the agent."""
    x, y, z, qx, qy, qz, qw = g.to_xyz_quat(T)
    return {"frameId": frame_id, "stamp": round(stamp, 9), "position": [round(v, 6) for v in (x, y, z)],
            "orientation": [round(v, 9) for v in (qx, qy, qz, qw)]}


def to_thor(p: np.ndarray) -> dict[str, float]:
    """A map-frame point (z up) as AI2-THOR's {x, y (up), z}."""
    return layout.vec(float(p[0]), float(p[2]), float(p[1]))


@dataclass
class Track:
    spec: MarkerSpec
    T_world_marker: np.ndarray
    last_seen: float
    seen: int = 1
    is_open: bool = False
    open_known: bool = False
    placed_in: str = ""  # put there by the robot, not seen there yet
    T_world_door: np.ndarray | None = None  # the door marker where it was last seen

    @property
    def position(self) -> np.ndarray:
        return g.apply(self.T_world_marker, np.asarray(self.spec.offset))

    def handle(self) -> np.ndarray | None:
        """Where the hand takes the door (the registry's `door.handle`): on the door as last
        seen when it is believed open, else on the closed door (the body marker's frame moved to
        `closed_at`: the closed door's marker faces out as the body's does); None when the
        registry does not say."""
        door = self.spec.door
        if door is None or door.handle is None:
            return None
        if self.is_open and self.T_world_door is not None:
            T_door = self.T_world_door
        else:
            T_door = self.T_world_marker.copy()
            T_door[:3, 3] = g.apply(self.T_world_marker, np.asarray(door.closed_at))
        return g.apply(T_door, np.asarray(door.handle))


class BeliefWorld:
    def __init__(self, registry: MarkerRegistry, types: Mapping[str, ObjectType], *, scene_name: str = "",
                 location: str = "", half_life_s: float = 120.0) -> None:
        self.registry = registry
        self.types = dict(types)
        self.scene_name = scene_name
        self.location = location
        self.half_life_s = half_life_s
        self.tracks: dict[str, Track] = {}
        self.visible: set[str] = set()
        self.held: str | None = None
        self.T_world_base = np.eye(4)
        self.frame_id = "map"  # the world frame's name: poses are in it
        self.stamp = 0.0
        self.status = ""
        self.last_error = ("", "")  # (message, code) of the latest failed action
        self.last_action = ""
        self.last_success = True
        self.version = 0

    # -- perception -----------------------------------------------------------------------------

    def update(self, detections: Detections, T_world_camera: np.ndarray, stamp: float,
               depth: np.ndarray | None = None, camera: CameraModel | None = None,
               T_world_base: np.ndarray | None = None) -> None:
        """Fold one frame's detections into the belief."""
        if T_world_base is not None:
            self.T_world_base = T_world_base
        self.stamp = stamp
        seen: set[str] = set()
        doors_seen: dict[str, np.ndarray] = {}
        for obs in detections.observations:
            if obs.object_id == self.held:
                continue
            T_world_marker = T_world_camera @ obs.T_camera_marker
            if obs.role == "door":
                doors_seen[obs.object_id] = T_world_marker
                continue
            track = self.tracks.get(obs.object_id)
            if track is None:
                track = self.tracks[obs.object_id] = Track(self.registry.markers[obs.marker_id], T_world_marker, stamp)
            else:
                track.T_world_marker, track.last_seen = T_world_marker, stamp
                track.seen += 1
                track.placed_in = ""
            seen.add(obs.object_id)
        for object_id, T_door in doors_seen.items():
            track = self.tracks.get(object_id)
            if track is not None:
                track.is_open, track.open_known = door_is_open(track, T_door), True
                track.T_world_door = T_door
        if depth is not None and camera is not None:
            for object_id in seen - set(doors_seen):
                self._door_from_depth(self.tracks[object_id], T_world_camera, depth, camera)
            seen |= self._in_view(seen, T_world_camera, depth, camera)
        self.visible = seen
        self.version += 1

    def _in_view(self, seen: set[str], T_world_camera: np.ndarray, depth: np.ndarray,
                 camera: CameraModel) -> set[str]:
        """Known objects not seen in this frame whose believed centre projects into it, in front
        of the camera within IN_VIEW_M, where the depth is not farther than that centre by more
        than SEE_PAST_M (the camera would see past where it is believed: it is not there)."""
        T_camera_world = g.invert(T_world_camera)
        out: set[str] = set()
        for object_id, track in self.tracks.items():
            if object_id in seen or object_id == self.held or track.spec.receptacle is not None:
                continue
            where = g.apply(T_camera_world, track.position)
            if not 0.1 < where[2] <= IN_VIEW_M:
                continue
            (u, v), = camera.project(where[None, :])[0]
            if not (0 <= u < camera.width and 0 <= v < camera.height):
                continue
            measured = float(depth[int(v), int(u)])
            if np.isfinite(measured) and measured > 0 and measured > where[2] + SEE_PAST_M:
                continue
            out.add(object_id)
        return out

    def _door_from_depth(self, track: Track, T_world_camera: np.ndarray, depth: np.ndarray,
                         camera: CameraModel) -> None:
        door = track.spec.door
        if door is None:
            return
        where = g.apply(g.invert(T_world_camera) @ track.T_world_marker, np.asarray(door.closed_at))
        if where[2] <= 0:
            return
        (u, v), = camera.project(where[None, :])[0]
        r = 2
        if not (r <= u < camera.width - r and r <= v < camera.height - r):
            return
        window = depth[int(v) - r:int(v) + r + 1, int(u) - r:int(u) + r + 1]
        valid = window[np.isfinite(window) & (window > 0)]
        if valid.size == 0:
            return
        measured = float(np.median(valid))
        if measured > where[2] + DOOR_DEPTH_GAP_M:
            track.is_open, track.open_known = True, True
        elif abs(measured - where[2]) < DOOR_DEPTH_GAP_M / 2:
            track.is_open, track.open_known = False, True

    # -- what the robot did ---------------------------------------------------------------------

    def robot_did(self, skill: str, object_id: str, target_id: str = "") -> None:
        """Believe the effect of a successful skill until a frame says otherwise."""
        track = self.tracks.get(object_id)
        if skill == "navigate":
            self.location = object_id
        elif skill == "pick":
            self.held = object_id
            if track is not None:
                track.placed_in = ""
        elif skill == "place":
            held = self.held
            self.held = None
            receptacle = self.tracks.get(target_id or object_id)
            moved = self.tracks.get(held or "")
            if moved is not None and receptacle is not None and receptacle.spec.receptacle is not None:
                centre = g.apply(receptacle.T_world_marker, np.asarray(receptacle.spec.receptacle.center))
                moved.T_world_marker = g.make(moved.T_world_marker[:3, :3],
                                              centre - moved.T_world_marker[:3, :3] @ np.asarray(moved.spec.offset))
                moved.placed_in = receptacle.spec.object_id
        elif skill in ("open", "close") and track is not None:
            track.is_open, track.open_known = skill == "open", True
            # the door as the robot left it, until a frame shows it: a hinged door at its stop
            # (its marker then faces away from the camera), a closed one where it closes
            track.T_world_door = swung_open(track) if skill == "open" else None
        self.version += 1

    # -- output ---------------------------------------------------------------------------------

    def confidence(self, track: Track, now: float) -> float:
        if track.spec.object_id in self.visible or track.spec.object_id == self.held:
            return 1.0
        age = max(0.0, now - track.last_seen)
        return 0.5 ** (age / self.half_life_s) if self.half_life_s > 0 else 0.0

    def positions(self) -> dict[str, np.ndarray]:
        hand = g.apply(self.T_world_base, np.asarray(HAND_IN_BASE))
        return {oid: (hand if oid == self.held else t.position) for oid, t in self.tracks.items()}

    def containment(self) -> dict[str, str]:
        """object id -> the receptacle whose volume holds its centre (smallest first)."""
        positions = self.positions()
        receptacles = [t for t in self.tracks.values() if t.spec.receptacle is not None]
        receptacles.sort(key=lambda t: t.spec.receptacle.volume if t.spec.receptacle else 0.0)
        inverse = {t.spec.object_id: g.invert(t.T_world_marker) for t in receptacles}
        parent: dict[str, str] = {}
        for oid, p in positions.items():
            if oid == self.held:
                continue
            for r in receptacles:
                rid = r.spec.object_id
                if rid != oid and r.spec.receptacle is not None \
                        and r.spec.receptacle.contains(g.apply(inverse[rid], p), margin=0.01):
                    parent[oid] = rid
                    break
        return parent

    def _object_pose(self, object_id: str, track: Track, position: np.ndarray) -> np.ndarray:
        """T_world_object: the marker's orientation at the object's centre (a held object turns
        with the base)."""
        rotation = self.T_world_base[:3, :3] if object_id == self.held else track.T_world_marker[:3, :3]
        return g.make(rotation, position)

    def metadata(self, now: float | None = None) -> dict[str, Any]:
        now = self.stamp if now is None else now
        positions = self.positions()
        parents = self.containment()
        children: dict[str, list[str]] = {}
        for oid, rid in parents.items():
            children.setdefault(rid, []).append(oid)
        base = self.T_world_base[:3, 3]
        objects = []
        for oid, track in self.tracks.items():
            spec = track.spec
            record = make_object_record(self.types[spec.object_type], oid, name=spec.name)
            for key, value in spec.state:
                record[key] = value
            p = positions[oid]
            yaw = heading_deg(track.T_world_marker[:3, :3], spec)
            distance = 0.0 if oid == self.held else math.hypot(p[0] - base[0], p[1] - base[1])
            visible = oid in self.visible or oid == self.held
            record.update({
                "position": to_thor(p),
                "rotation": layout.vec(0.0, round(yaw, 2), 0.0),
                "visible": visible,
                "distance": round(distance, 4),
                "isInteractable": visible and distance <= layout.REACH_M,
                "isPickedUp": oid == self.held,
                "parentReceptacles": [parents[oid]] if oid in parents else [],
                "receptacleObjectIds": sorted(children.get(oid, [])),
                "lastSeen": round(track.last_seen, 3),
                "confidence": round(self.confidence(track, now), 3),
                "markerId": spec.marker_id,
                "poseMap": pose_record(self._object_pose(oid, track, p), self.frame_id,
                                       self.stamp if oid in self.visible else track.last_seen),
            })
            if record.get("openable"):
                record["isOpen"] = track.is_open
                record["openness"] = 1.0 if track.is_open else 0.0
                record["openStateKnown"] = track.open_known
            objects.append(record)
        yaw = math.degrees(g.yaw_of(self.T_world_base))
        agent = {"name": "agent", "position": layout.vec(float(base[0]), 0.9, float(base[1])),
                 "rotation": layout.vec(0.0, round(yaw, 2), 0.0), "cameraHorizon": 0.0,
                 "isStanding": True, "location": self.location,
                 # a robot's arm reaches what it navigated to, not whatever is within AI2-THOR's
                 # 1.75 m (the Fetch's reaches ~1 m, and only in front of the base)
                 "reachM": 0.0,
                 "poseMap": pose_record(self.T_world_base, self.frame_id, self.stamp)}
        inventory = []
        if self.held is not None and self.held in self.tracks:
            inventory.append({"objectId": self.held, "objectType": self.tracks[self.held].spec.object_type})
        message, code = self.last_error
        return {
            "objects": objects, "agent": agent, "inventoryObjects": inventory,
            "sceneName": self.scene_name, "lastAction": self.last_action,
            "lastActionSuccess": self.last_success, "errorMessage": message, "errorCode": code,
            "actionReturn": None, "perceptionStatus": self.status, "stamp": self.stamp,
        }


def narrow_axis(R_world_marker: np.ndarray, spec: MarkerSpec) -> int | None:
    """Which of an object's marker axes (0, 1, 2: x, y, z) is its narrow side's: of the axes
    within ~45 degrees of level, the one along which the registry's `extent` is smallest (the
    marker's x without an extent); None when none lies level."""
    level = [i for i in range(3) if abs(R_world_marker[2, i]) < HORIZONTAL_AXIS_SIN]
    if not level:
        return None
    extent = spec.extent
    return min(level, key=lambda i: extent[i]) if extent is not None else level[0]


def narrow_width(R_world_marker: np.ndarray, spec: MarkerSpec) -> float | None:
    """How wide the object is across its narrow side (m, from the registry's `extent`): what a
    gripper closes across; None without an extent or a level axis."""
    axis = narrow_axis(R_world_marker, spec)
    return None if axis is None or spec.extent is None else float(spec.extent[axis])


def heading_deg(R_world_marker: np.ndarray, spec: MarkerSpec) -> float:
    """The world state's `rotation` y (map yaw, degrees, counter-clockwise from map x): for a
    piece of furniture the way its front faces (its front marker's z axis); for an object the way
    its narrow side lies (`narrow_axis`), folded into [-90, 90) as a box turned half round is the
    same box. A marker on a top face gives it from its in-plane turn."""
    if spec.receptacle is not None:
        return math.degrees(math.atan2(R_world_marker[1, 2], R_world_marker[0, 2]))
    axis = narrow_axis(R_world_marker, spec)
    if axis is None:
        return 0.0
    yaw = math.degrees(math.atan2(R_world_marker[1, axis], R_world_marker[0, axis]))
    return (yaw + 90.0) % 180.0 - 90.0


def swung_open(track: "Track") -> np.ndarray | None:
    """The door marker's pose with the door turned to its stop about its hinge (the registry's
    `door.swing`), from the closed door's pose; None without a swing (a drawer: its front is
    seen where the hand left it)."""
    door = track.spec.door
    if door is None or door.swing is None:
        return None
    from scipy.spatial.transform import Rotation

    T_closed = track.T_world_marker.copy()
    T_closed[:3, 3] = g.apply(track.T_world_marker, np.asarray(door.closed_at))
    R_marker = track.T_world_marker[:3, :3]
    axis = R_marker @ np.asarray(door.swing.axis, dtype=float)
    turn = Rotation.from_rotvec(axis / float(np.linalg.norm(axis)) * door.swing.angle).as_matrix()
    hinge = g.apply(track.T_world_marker, np.asarray(door.swing.hinge))
    T_open = np.eye(4)
    T_open[:3, :3] = turn @ T_closed[:3, :3]
    T_open[:3, 3] = hinge + turn @ (T_closed[:3, 3] - hinge)
    return T_open


def door_is_open(track: "Track", T_world_door: np.ndarray) -> bool:
    """A door marker turned away from its piece's marker (a hinged door swung open), or away from
    where the closed door puts it (a drawer's front, pulled out square to the piece)."""
    if g.angle_between(T_world_door[:3, 2], track.T_world_marker[:3, 2]) > DOOR_OPEN_ANGLE_DEG:
        return True
    door = track.spec.door
    if door is None:
        return False
    closed = g.apply(track.T_world_marker, np.asarray(door.closed_at))
    return bool(np.linalg.norm(T_world_door[:3, 3] - closed) > DOOR_MOVED_M)
