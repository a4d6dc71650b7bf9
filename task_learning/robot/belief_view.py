"""The robot-skills executor's RobotView over the fetch backend's belief (perception.FetchWorld):
objects where the camera last saw them, the base where the latest frame's transform put it, what
the robot holds, whether a receptacle is believed closed; all in `map` (REP-103, z up)."""
from __future__ import annotations

import math

from task_learning.perception.bridge import FetchWorld
from task_learning.robot.goals import Vec3
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

    def is_closed(self, object_id: str) -> bool:
        with self.world._cond:
            track = self.world.belief.tracks.get(object_id)
            return track is not None and track.open_known and not track.is_open

    def held(self) -> str | None:
        with self.world._cond:
            return self.world.belief.held

    def base_pose(self) -> BasePose | None:
        with self.world._cond:
            if not self.world.frames:
                return None
            T = self.world.belief.T_world_base
        return BasePose(float(T[0, 3]), float(T[1, 3]), math.atan2(float(T[1, 0]), float(T[0, 0])))

    def wait_for_view(self, timeout_s: float) -> bool:
        return self.world.wait_for_frame(self.world.clock(), timeout_s) if timeout_s > 0 else False


