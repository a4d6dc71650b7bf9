"""The robot-skills executor's RobotView over the fetch backend's belief (perception.FetchWorld):
objects where the camera last saw them, the base where the latest frame's transform put it, what
the robot holds, whether a receptacle is believed closed; all in `map` (REP-103, z up).

Where to stand and how to grasp come from the world's metadata (AI2-THOR form, what the stack's
planners read too): an object's `rotation` y (degrees; the map heading, as the belief writes it)
is the heading of its narrow side, across which the fingers close (as wide as perception's
`narrow_width` of the object's track says); its `parentReceptacles[0]`
is the piece it is in or on, whose front face is where that piece's marker sits (on its front,
the marker's z axis out of it)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from task_learning.perception.belief import HORIZONTAL_AXIS_SIN, narrow_width
from task_learning.perception.bridge import FetchWorld
from task_learning.robot.goals import Vec3
from task_learning.robot.placing import Place
from task_learning.robot.sequences import BasePose


class BeliefView:
    def __init__(self, world: FetchWorld) -> None:
        self.world = world

    def object_position(self, object_id: str) -> Vec3 | None:
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            if track is None:
                return None
            p = track.position
        return (float(p[0]), float(p[1]), float(p[2]))

    def open_state(self, object_id: str) -> bool | None:
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            if track is None or not track.open_known:
                return None
            return track.is_open

    def held(self) -> str | None:
        with self.world._cond:
            return self.world.belief.held

    def base_pose(self) -> BasePose | None:
        with self.world._cond:
            if not self.world.frames:
                return None
            T = self.world.belief.T_world_base
        return BasePose(float(T[0, 3]), float(T[1, 3]), math.atan2(float(T[1, 0]), float(T[0, 0])))

    def grasp_yaw(self, object_id: str) -> float | None:
        record = self._record(object_id)
        rotation = (record or {}).get("rotation")
        if record is None or rotation is None or record.get("receptacle") or object_id == self.held():
            return None
        return math.radians(float(rotation["y"]))

    def grasp_width(self, object_id: str) -> float | None:
        """How wide the object is across its narrow side (perception's `narrow_width`: the
        registry's extent along the marker axis that lies level and narrowest, turned as the
        belief last saw it); None for a piece of furniture, the held object, or an object
        without an extent (the gripper then opens fully)."""
        if object_id == self.held():
            return None
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            if track is None or track.spec.receptacle is not None:
                return None
            R = track.T_world_marker[:3, :3].copy()
            spec = track.spec
        return narrow_width(R, spec)

    def handle_of(self, object_id: str) -> Vec3 | None:
        """The handle where the registry says it is on the door (perception.Track.handle)."""
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            handle = track.handle() if track is not None else None
        return None if handle is None else (float(handle[0]), float(handle[1]), float(handle[2]))

    def height_of(self, object_id: str) -> float | None:
        """How tall the object stands (the registry's extent along its marker's axes, turned as
        the belief last saw it); None for furniture or without an extent."""
        turned = self._extent_as_seen(object_id)
        if turned is None:
            return None
        R, extent = turned
        return float(np.abs(R[2]) @ extent)

    def length_of(self, object_id: str) -> float | None:
        """The object's extent along its long level side: the largest of the registry's extents
        along its marker's axes that lie level (within ~45 degrees), turned as the belief last
        saw it; None for furniture or without an extent (or no axis level)."""
        turned = self._extent_as_seen(object_id)
        if turned is None:
            return None
        R, extent = turned
        level = [i for i in range(3) if abs(float(R[2, i])) < HORIZONTAL_AXIS_SIN]
        return max((float(extent[i]) for i in level), default=None)

    def _extent_as_seen(self, object_id: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The object's marker rotation as the belief last saw it and the registry's extent along
        the marker's axes; None for furniture, an unknown object or one without an extent."""
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            if track is None or track.spec.receptacle is not None or track.spec.extent is None:
                return None
            return track.T_world_marker[:3, :3].copy(), np.asarray(track.spec.extent)

    def place_in(self, object_id: str) -> Place | None:
        """The receptacle's volume from the registry where its marker was last seen: centre,
        floor and top in `map`, depth along its front marker's z (out of its front), width
        along the marker's x, its walls' rim; a compartment when it has a door and no walls;
        the objects the belief has in it."""
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            volume = track.spec.receptacle if track is not None else None
            if track is None or volume is None:
                return None
            T = track.T_world_marker.copy()
            enclosed = track.spec.door is not None and volume.walls <= 0.0
            holding = sum(1 for parent in self.world.belief.containment().values() if parent == object_id)
        half = np.asarray(volume.size) / 2
        R = T[:3, :3]
        centre = R @ np.asarray(volume.center) + T[:3, 3]
        # the floor and the top where the volume's up axis (the marker axis nearest the map's z)
        # meets them over its centre: a marker seen a few degrees tilted moves them a few mm,
        # where the lowest and the highest corner would move them centimetres (and a release
        # aimed at a floor believed too low pressed the held object into the table)
        up = int(np.argmax(np.abs(R[2])))
        rise = abs(float(R[2, up])) * float(half[up])
        floor, top = float(centre[2]) - rise, float(centre[2]) + rise
        return Place(float(centre[0]), float(centre[1]), math.atan2(float(T[1, 2]), float(T[0, 2])),
                     float(half[2]), float(half[0]), floor, top, floor + volume.walls, enclosed, holding)

    def front_of(self, object_id: str) -> BasePose | None:
        record = self._record(object_id)
        if record is None:
            return None
        parents = record.get("parentReceptacles") or []
        piece = object_id if record.get("receptacle") and not parents else (parents[0] if parents else "")
        with self.world._cond:
            track = self.world.belief.tracks.get(piece)
            if track is None or track.spec.receptacle is None:
                return None
            T = track.T_world_marker
        return BasePose(float(T[0, 3]), float(T[1, 3]), math.atan2(float(T[1, 2]), float(T[0, 2])))

    def _record(self, object_id: str) -> dict[str, Any] | None:
        return next((o for o in self.world.metadata["objects"] if o.get("objectId") == object_id), None)

    def wait_for_view(self, timeout_s: float) -> bool:
        return self.world.wait_for_frame(self.world.clock(), timeout_s) if timeout_s > 0 else False


