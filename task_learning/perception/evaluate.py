"""Synthetic frames through the bridge, compared with the simulated robot's ground truth
(`task-learning perceive`), and the in-process wiring of the simulated robot to the bridge."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from task_learning.errors import TaskLearningError
from task_learning.perception import geometry as g
from task_learning.perception.bridge import FetchWorld
from task_learning.perception.skills import SkillRequest, SkillResult
from task_learning.perception.synthetic import SimulatedRobot
from task_learning.world.camera_model import CameraModel
from task_learning.world.scene import Scene


class SyntheticClock:
    """Simulated time: each frame advances it, so runs are reproducible and never 'stale'."""

    def __init__(self, start: float = 1000.0, frame_dt: float = 0.1) -> None:
        self.now = start
        self.frame_dt = frame_dt

    def __call__(self) -> float:
        return self.now

    def tick(self) -> float:
        self.now += self.frame_dt
        return self.now


class InProcessSkills:
    """The simulated robot as a SkillClient: run the skill, then show the bridge a fresh frame."""

    def __init__(self, robot: SimulatedRobot, world: "FetchWorld | None", clock: SyntheticClock) -> None:
        self.robot, self.world, self.clock = robot, world, clock

    def execute(self, request: SkillRequest) -> SkillResult:
        result = self.robot.execute(request)
        if self.world is not None:
            stamp = self.clock.tick()
            self.world.process(self.robot.render(stamp).frame, T_world_base=self.robot.T_world_base)
        return result


def synthetic_world(scene: Scene, *, width: int = 640, height: int = 480, depth_noise_m: float = 0.005,
                    seed: int = 0) -> tuple[FetchWorld, SimulatedRobot, SyntheticClock]:
    """A FetchWorld wired to a simulated robot in-process (no ROS), after a look-around."""
    robot = SimulatedRobot(scene, camera=CameraModel.fetch_head(width, height), depth_noise_m=depth_noise_m,
                           seed=seed)
    clock = SyntheticClock()
    skills = InProcessSkills(robot, None, clock)
    world = FetchWorld(robot.registry, skills, scene=scene, clock=clock)
    skills.world = world
    look_around(world, robot, clock)
    return world, robot, clock


def look_around(world: FetchWorld, robot: SimulatedRobot, clock: SyntheticClock, steps: int = 12,
                image: str | None = None) -> "FrameTally":
    """Turn the base in place through `steps` headings, one frame each; returns what was in view
    and what was detected, per frame. `image`: save the frame with the most detections, drawn."""
    best: tuple[int, np.ndarray | None] = (-1, None)
    tally = FrameTally()
    for pose in robot.look_around_poses(steps):
        view = robot.render(clock.tick(), pose)
        world.process(view.frame, T_world_base=pose)
        detected = {o.marker_id for o in world.last_detections.observations}
        if image and len(detected) > best[0]:
            best = (len(detected), draw_detections(world, view.frame.color))
        tally.frames += 1
        for marker_id in view.in_view:
            tally.in_view.add(marker_id)
            if marker_id in detected:
                tally.detected.add(marker_id)
            else:
                tally.missed.append((tally.frames - 1, marker_id))
        tally.unregistered.update(world.last_detections.unregistered)
        tally.rejected.extend(world.last_detections.rejected)
    robot.T_world_base = robot.look_around_poses(steps)[0]
    if image and best[1] is not None:
        from pathlib import Path

        import cv2

        from task_learning.inputs.files import write_bytes_atomic

        Path(image).parent.mkdir(parents=True, exist_ok=True)
        ok, encoded = cv2.imencode(Path(image).suffix or ".png", best[1])
        if not ok:
            raise TaskLearningError(f"{image}: cannot encode the picture (use a .png or .jpg name)")
        write_bytes_atomic(image, encoded.tobytes())
    return tally


@dataclass
class FrameTally:
    frames: int = 0
    in_view: set[int] = field(default_factory=set)
    detected: set[int] = field(default_factory=set)
    missed: list[tuple[int, int]] = field(default_factory=list)
    unregistered: set[int] = field(default_factory=set)
    rejected: list[str] = field(default_factory=list)


def from_thor(p: dict[str, float]) -> np.ndarray:
    return np.array([p["x"], p["z"], p["y"]])


def compare(world: FetchWorld, robot: SimulatedRobot, tally: FrameTally) -> dict[str, Any]:
    """The `perceive` report: detection, position error, containment and doors vs ground truth."""
    metadata = world.metadata
    believed = {o["objectId"]: o for o in metadata["objects"]}
    truth = {o["objectId"]: o for o in robot.world.metadata["objects"]}
    task_objects = set(robot.scene.task_objects)
    errors, rows = [], []
    containment_ok = 0
    doors_ok = doors = 0
    for oid, record in truth.items():
        mine = believed.get(oid)
        row: dict[str, Any] = {"object_id": oid, "type": record["objectType"], "detected": mine is not None,
                               "task_object": oid in task_objects}
        true_parent = (record.get("parentReceptacles") or [""])[0]
        if mine is not None:
            error = float(np.linalg.norm(from_thor(mine["position"]) - robot.layout.true_position(oid))) \
                if oid != robot.world.held_object else 0.0
            errors.append(error)
            parent = (mine.get("parentReceptacles") or [""])[0]
            row.update(position_error_m=round(error, 4), parent=parent, true_parent=true_parent,
                       confidence=mine.get("confidence"))
            if oid in task_objects and parent == true_parent:
                containment_ok += 1
            if record.get("openable"):
                doors += 1
                row.update(is_open=bool(mine.get("isOpen")), truly_open=bool(record.get("isOpen")))
                doors_ok += int(bool(mine.get("isOpen")) == bool(record.get("isOpen")))
        rows.append(row)
    expected_objects = [r for r in rows if robot.registry.by_object[r["object_id"]].marker_id in tally.in_view]
    return {
        "scene": robot.scene.name,
        "frames": tally.frames,
        "image_size": [robot.camera.width, robot.camera.height],
        "expected": len(tally.in_view),
        "detected": len(tally.detected),
        "missed_in_frames": len(tally.missed),
        "objects_expected": len(expected_objects),
        "objects_known": len(believed),
        "position_error_m": {"median": round(float(np.median(errors)), 4) if errors else None,
                             "max": round(float(np.max(errors)), 4) if errors else None},
        "task_objects": len(task_objects),
        "containment_correct": containment_ok,
        "open_state_correct": doors_ok, "openable_seen": doors,
        "unregistered": sorted(tally.unregistered),
        "status": world.status(),
        "objects": rows,
    }


def perceive(scene: Scene, *, pose: str = "centre", moved: tuple[str, str] | None = None, width: int = 640,
             height: int = 480, depth_noise_m: float = 0.005, seed: int = 0,
             image: str | None = None) -> dict[str, Any]:
    """One synthetic frame set (a look-around from `pose`: 'centre', 'offset' or an object id to
    stand in front of) through the bridge; `moved` = (object, receptacle) someone moved first."""
    robot = SimulatedRobot(scene, camera=CameraModel.fetch_head(width, height), depth_noise_m=depth_noise_m,
                           seed=seed)
    clock = SyntheticClock()
    world = FetchWorld(robot.registry, None, scene=scene, clock=clock)
    if moved is not None:
        robot.move_object(*moved)
    if pose == "offset":
        robot.T_world_base = g.base_pose(0.4, -0.3, math.radians(20.0))
    elif pose not in ("centre", "center"):
        robot.T_world_base = robot.layout.standing_pose(pose)
    tally = look_around(world, robot, clock, image=image)
    return compare(world, robot, tally)


def draw_detections(world: FetchWorld, frame_color: np.ndarray) -> np.ndarray:
    """The frame with the last detections drawn: marker outlines, ids, object ids, distances."""
    import cv2

    img = frame_color.copy()
    for obs in world.last_detections.observations:
        pts = np.round(obs.corners).astype(np.int32)
        colour = (0, 200, 0) if obs.role == "body" else (255, 140, 0)
        cv2.polylines(img, [pts], True, colour, 2)
        x, y = pts[:, 0].min(), pts[:, 1].min() - 4
        label = f"{obs.object_id}{' door' if obs.role == 'door' else ''} {obs.distance:.2f}m"
        cv2.putText(img, label, (int(x), int(max(y, 10))), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 255), 1, cv2.LINE_AA)
    return img
