"""What the stack's perception knows of a simulated scene after the survey, against the physics.

The survey `task-learning run --backend mujoco` makes (nodes/clients/mujoco_run.py), in process
and without ROS: the scene's world with its markers (sim/markers.py) in MuJoCo, the robot put at
each view (base, torso, head: set, not driven, so no skill can fail here), the head camera
rendered (colour and registered depth), read by the stack's detector and folded into its belief
(task_learning.perception: MarkerDetector, BeliefWorld) exactly as the perception node does.
The views: the look-around from the start pose (the profile's head sweep and a level one, facing
ahead and turned about), then the views of `task_learning.perception.survey.piece_views` of every
piece the belief knows, and of every piece first seen on the way (`--survey old`: last session's
survey, every piece from 1.1 m, a bag or bin from 0.65 m, the torso down).

Printed per scene: objects known / total, the position error of each (believed centre against
the body's in the physics), the yaw error (the world state's `rotation` y against the physics'
narrow horizontal axis, modulo 180 degrees), the piece it is believed in against the one it stands
in, the doors and drawers believed closed, and what is not known, with the piece it is in. Load beside it.

Run: .venv/bin/python bench/bench_sim_perception.py [--scene store_groceries] [--survey new|old]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco
import numpy as np

from task_learning.inputs.config import parse_yaml
from task_learning.perception import geometry as g
from task_learning.perception.belief import BeliefWorld
from task_learning.perception.detect import MarkerDetector
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.registry import registry_from_dict
from task_learning.perception.survey import View, piece_views
from task_learning.world.camera_model import CameraModel
from task_learning.world.scene import load_scene
from task_learning_sim.head import pan_tilt_toward
from task_learning_sim.markers import add_markers, registry_yaml
from task_learning_sim.scene_world import build_world
from task_learning_sim.simulator import Simulator

TORSO_MAX = 0.386
PANS = (-1.2, -0.6, 0.0, 0.6, 1.2)
TILTS = (0.5, 0.1)  # the profile's look-around tilt, and the level sweep


class Eye:
    """The simulated head camera put where a view says, rendered and read into a belief."""

    def __init__(self, scene: str) -> None:
        world = build_world(load_scene(scene))
        plan = add_markers(world)
        registry = registry_from_dict(parse_yaml(registry_yaml(plan)), source="sim")
        self.sim = Simulator(world)
        self.sim.run_for(1.0)  # the objects settle where they stand
        self.detector = MarkerDetector(registry)
        self.belief = BeliefWorld(registry, load_scene(scene).types, scene_name=scene)
        self.camera = CameraModel.from_fov(640, 480, 50.0)
        self.renderer = mujoco.Renderer(self.sim.model, 480, 640)
        self.frames = 0

    def pose(self, x: float, y: float, yaw: float, torso: float) -> None:
        d = self.sim.data
        for name, value in (("base_x_joint", x), ("base_y_joint", y), ("base_yaw_joint", yaw),
                            ("torso_lift_joint", torso)):
            d.joint(name).qpos[0] = value
        mujoco.mj_forward(self.sim.model, d)

    def head(self, pan: float, tilt: float) -> None:
        d = self.sim.data
        d.joint("head_pan_joint").qpos[0], d.joint("head_tilt_joint").qpos[0] = pan, min(max(tilt, -0.76), 1.45)
        mujoco.mj_forward(self.sim.model, d)

    def look_at(self, target: tuple[float, float, float]) -> None:
        d = self.sim.data
        pan, tilt = pan_tilt_toward(np.asarray(target), d.body("head_pan_link").xpos,
                                    d.body("torso_lift_link").xmat.reshape(3, 3))
        self.head(max(min(pan, 1.57), -1.57), tilt)

    def see(self) -> None:
        d, r = self.sim.data, self.renderer
        r.update_scene(d, "head_camera_rgb")
        rgb = r.render()
        r.enable_depth_rendering()
        r.update_scene(d, "head_camera_rgb")
        depth = r.render().astype(np.float32)
        r.disable_depth_rendering()
        cam = d.camera("head_camera_rgb")
        T_world_camera = g.make(cam.xmat.reshape(3, 3) @ np.diag([1.0, -1.0, -1.0]), cam.xpos)
        frame = RGBDFrame(np.ascontiguousarray(rgb[:, :, ::-1]), depth, self.camera, self.frames * 0.5)
        x, y, yaw = self.sim.base_pose()
        self.belief.update(self.detector.detect(frame), T_world_camera, frame.stamp, depth, self.camera,
                           g.base_pose(x, y, yaw))
        self.frames += 1

    def view(self, view: View) -> None:
        self.pose(*view.base, view.torso)
        self.look_at(view.target)
        self.see()


def old_views(centre: np.ndarray, front: np.ndarray) -> list[View]:
    """Last session's survey: 1.1 m before the front, a low piece from 0.65 m at its floor."""
    low = centre[2] < 0.4
    distance = 0.65 if low else 1.1
    base = (centre[0] + distance * front[0], centre[1] + distance * front[1], math.atan2(-front[1], -front[0]))
    return [View(base, 0.0, (centre[0], centre[1], 0.05 if low else centre[2]), "old")]


def survey(eye: Eye, which: str) -> int:
    """The look-around, then every known piece's views until none is left; returns pieces visited."""
    for turn in (0.0, math.pi):
        eye.pose(0.0, 0.0, turn, 0.0)
        for tilt in TILTS:
            for pan in PANS:
                eye.head(pan, tilt)
                eye.see()
    visited: list[str] = []
    while True:
        left = [t for oid, t in eye.belief.tracks.items() if t.spec.receptacle is not None and oid not in visited]
        if not left:
            return len(visited)
        track = left[0]
        visited.append(track.spec.object_id)
        centre, front = track.position, track.T_world_marker[:3, 2]
        views = old_views(centre, front) if which == "old" else piece_views(centre, front, TORSO_MAX)
        for view in views:
            eye.view(view)


def true_narrow(eye: Eye, oid: str) -> tuple[float, float]:
    """The physics' narrow horizontal axis of an object (of its body axes lying level, the one it
    is thinnest along): map yaw in degrees folded into [-90, 90), and how much wider its other
    level side is (0 for a round thing)."""
    shape = eye.sim.world.items[oid].shape
    sizes = (*shape.footprint(), shape.height())
    R = eye.sim.data.body(oid).xmat.reshape(3, 3)
    level = sorted((i for i in range(3) if abs(R[2, i]) < 0.5), key=lambda i: sizes[i])
    if len(level) < 2 or shape.shape != "box":
        return 0.0, 0.0
    axis = R[:, level[0]]
    yaw = (math.degrees(math.atan2(axis[1], axis[0])) + 90.0) % 180.0 - 90.0
    return yaw, sizes[level[1]] - sizes[level[0]]


def report(eye: Eye, scene: str, which: str, pieces: int, seconds: float) -> None:
    meta = {o["objectId"]: o for o in eye.belief.metadata()["objects"]}
    items = eye.sim.world.items
    known = [oid for oid in items if oid in meta]
    pos_err, yaw_err, parent_ok = [], [], 0
    for oid in known:
        p = meta[oid]["position"]
        pos_err.append(float(np.linalg.norm(np.array([p["x"], p["z"], p["y"]]) - eye.sim.data.body(oid).xpos)))
        item = items[oid]
        truth, wider = true_narrow(eye, oid)
        if wider > 0.005:
            yaw_err.append(abs((meta[oid]["rotation"]["y"] - truth + 90.0) % 180.0 - 90.0))
        parent_ok += (meta[oid]["parentReceptacles"] or [""])[0] == item.start
    load = os.getloadavg()[0]
    print(f"{scene}, survey {which}: {len(known)}/{len(items)} objects known, "
          f"{sum(1 for t in eye.belief.tracks.values() if t.spec.receptacle)}/{len(eye.sim.world.receptacles)} "
          f"pieces; {pieces} pieces visited, {eye.frames} frames, {seconds:.0f} s wall, load {load:.1f}")
    if pos_err:
        print(f"  position error: median {100 * statistics.median(pos_err):.1f} cm, "
              f"max {100 * max(pos_err):.1f} cm ({len(pos_err)} objects)")
    if yaw_err:
        print(f"  yaw error (boxes whose sides differ): median {statistics.median(yaw_err):.1f} deg, "
              f"max {max(yaw_err):.1f} deg ({len(yaw_err)} objects)")
    print(f"  believed in the piece it stands in: {parent_ok}/{len(known)}")
    closable = [r.id for r in eye.sim.world.receptacles.values() if r.joint]
    tracks = eye.belief.tracks
    closed = [rid for rid in closable if rid in tracks and tracks[rid].open_known and not tracks[rid].is_open]
    print(f"  doors and drawers believed closed (all are): {len(closed)}/{len(closable)}")
    for oid in known:
        if (meta[oid]["parentReceptacles"] or [""])[0] != items[oid].start:
            print(f"    {oid}: believed in {meta[oid]['parentReceptacles']}, stands in {items[oid].start}")
    missing = [oid for oid in items if oid not in meta]
    for oid in missing:
        print(f"  not known: {oid} (in {items[oid].start}, {items[oid].shape.height():.2f} m high)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="store_groceries")
    parser.add_argument("--survey", choices=("new", "old"), default="new")
    args = parser.parse_args()
    began = time.perf_counter()
    eye = Eye(args.scene)
    pieces = survey(eye, args.survey)
    report(eye, args.scene, args.survey, pieces, time.perf_counter() - began)
    eye.renderer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
