"""The simulated Fetch's cost on this machine (docs/sim.md): physics real-time factor, head camera
render time, and where the CPU goes.

- physics: the store_groceries world (the Fetch, 14 pieces of furniture, 15 objects) stepped with
  the controllers ticking at 100 Hz, the robot standing and then driving (a 1 m goal there and
  back): simulated seconds per wall second, and process CPU seconds per simulated second;
- rendering: the head camera at 640x480 through MuJoCo's offscreen renderer (MUJOCO_GL=egl, Mesa's
  software rasteriser here: no GPU), colour alone and colour plus registered depth, ms a frame.

- markers (--markers): the ArUco stickers the simulator textures (sim/markers.py) read by the
  stack's detector (task_learning.perception.detect, its own parameters) in rendered frames: from
  the start pose through a look-around (head pans -1.2..1.2 at tilts 0.3 and 0.6, facing ahead
  and turned about) and from a view 1.1 m before each piece's front, the head pointed at it (the
  survey `run --backend mujoco` makes). A marker is in view when its centre projects into the
  image, its face turns toward the camera and the depth there is its own (not hidden); the
  rate is detected / in view, by distance.

- a run (--run): `task-learning run --backend mujoco` of a scene (default the short test scene)
  through the whole graph: simulated time, real-time factor, wall time per object of the scene,
  and the CPU split from the run's `cpu_s` (simulator, perception, the other nodes, operator,
  runner). The simulator's share is split into rendering and the rest with the render time per
  frame measured here times the frames it rendered (an estimate: both ran on the same loaded
  machine, at different moments).

It also writes a picture (--picture, default artifacts/sim/<scene>.png): the world from above beside
the head camera's colour and depth (0-5 m, grey) with the head turned toward the bags.

Run: .venv/bin/python bench/bench_mujoco_fetch.py [--scene store_groceries] [--seconds 10] [--frames 20]
         [--markers] [--run [--run-scene SCENE]]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco
import numpy as np
from PIL import Image

from task_learning.world.scene import load_scene
from task_learning_sim.base_controller import NavOutcome
from task_learning_sim.scene_world import build_world
from task_learning_sim.simulator import Simulator

ROOT = Path(__file__).resolve().parents[1]


def physics(sim: Simulator, seconds: float, driving: bool) -> tuple[float, float]:
    """(real-time factor, CPU s per simulated s) over `seconds` of simulated time."""
    wall, cpu, start = time.perf_counter(), time.process_time(), sim.time
    forward = True
    while sim.time - start < seconds:
        if driving and (sim.base.goal is None or sim.base.goal.outcome is not NavOutcome.RUNNING):
            sim.navigate(1.0 if forward else 0.0, 0.0, 0.0)
            forward = not forward
        sim.step(50)
    simulated = sim.time - start
    return simulated / (time.perf_counter() - wall), (time.process_time() - cpu) / simulated


def render_ms(sim: Simulator, frames: int, depth: bool) -> float:
    renderer = mujoco.Renderer(sim.model, 480, 640)
    try:
        times = []
        for _ in range(frames + 1):
            began = time.perf_counter()
            renderer.update_scene(sim.data, "head_camera_rgb")
            renderer.render()
            if depth:
                renderer.enable_depth_rendering()
                renderer.update_scene(sim.data, "head_camera_rgb")
                renderer.render()
                renderer.disable_depth_rendering()
            times.append(time.perf_counter() - began)
            sim.step(25)
        return 1000 * statistics.median(times[1:])  # the first frame builds the context
    finally:
        renderer.close()


def picture(sim: Simulator, path: Path) -> None:
    """Above view | head camera colour | head camera depth, 640x480 each: the robot driven to
    stand 0.6 m in front of the first receptacle with objects, looking into it."""
    starts = {item.start for item in sim.world.items.values()}
    piece = next(r for r in sim.world.receptacles.values() if r.id in starts)
    x, y, yaw = piece.pose
    ahead = piece.depth / 2 + 0.6
    goal = sim.navigate(x + ahead * np.cos(yaw), y + ahead * np.sin(yaw), yaw + np.pi)
    while goal.outcome is NavOutcome.RUNNING:
        sim.step(50)
    run = sim.point_head(np.array([x, y, 0.1]))
    while not run.done:
        sim.step(50)
    sim.run_for(0.5)
    renderer = mujoco.Renderer(sim.model, 480, 640)
    try:
        above = mujoco.MjvCamera()
        above.lookat[:], above.distance, above.elevation, above.azimuth = [0.0, 0.0, 0.4], 9.0, -65.0, 90.0
        renderer.update_scene(sim.data, above)
        top = renderer.render()
        renderer.update_scene(sim.data, "head_camera_rgb")
        colour = renderer.render()
        renderer.enable_depth_rendering()
        renderer.update_scene(sim.data, "head_camera_rgb")
        depth = renderer.render()
        renderer.disable_depth_rendering()
    finally:
        renderer.close()
    grey = (255 * (1.0 - np.clip(depth / 5.0, 0.0, 1.0))).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.hstack([top, colour, np.stack([grey] * 3, axis=-1)])).save(path)
    print(f"picture: {path}")


def _marker_views(sim: Simulator) -> list[tuple[str, dict[str, float]]]:
    """(label, joint positions) of the views the markers are measured from."""
    views = []
    for yaw in (0.0, math.pi):
        for tilt in (0.3, 0.6):
            for pan in (-1.2, -0.6, 0.0, 0.6, 1.2):
                views.append(("look-around", {"base_x_joint": 0.0, "base_y_joint": 0.0, "base_yaw_joint": yaw,
                                              "head_pan_joint": pan, "head_tilt_joint": tilt}))
    for receptacle in sim.world.receptacles.values():
        px, py, yaw = receptacle.pose
        views.append((f"survey {receptacle.id}", {"base_x_joint": px + 1.1 * math.cos(yaw),
                                                  "base_y_joint": py + 1.1 * math.sin(yaw),
                                                  "base_yaw_joint": yaw + math.pi, "aim": 1.0,
                                                  "target_x": px, "target_y": py}))
    return views


def _set_view(sim: Simulator, joints: dict[str, float]) -> None:
    from task_learning_sim.head import pan_tilt_toward

    for name, value in joints.items():
        if name.endswith("_joint"):
            sim.data.joint(name).qpos[0] = value
    mujoco.mj_forward(sim.model, sim.data)
    if "aim" in joints:
        pan, tilt = pan_tilt_toward(np.array([joints["target_x"], joints["target_y"], 0.6]),
                                    sim.data.body("head_pan_link").xpos, sim.data.body("torso_lift_link").xmat.reshape(3, 3))
        sim.data.joint("head_pan_joint").qpos[0], sim.data.joint("head_tilt_joint").qpos[0] = pan, min(tilt, 1.4)
        mujoco.mj_forward(sim.model, sim.data)


def markers(scene: str) -> None:
    """Detection rate of the simulated world's markers by the stack's detector (see the docstring)."""
    from task_learning.inputs.config import parse_yaml
    from task_learning.perception.detect import MarkerDetector
    from task_learning.perception.frames import RGBDFrame
    from task_learning.perception.registry import registry_from_dict
    from task_learning.world.camera_model import CameraModel
    from task_learning_sim.markers import add_markers, registry_yaml

    world = build_world(load_scene(scene))
    plan = add_markers(world)
    detector = MarkerDetector(registry_from_dict(parse_yaml(registry_yaml(plan)), source="sim"))
    sim = Simulator(world)
    camera = CameraModel.from_fov(640, 480, 50.0)
    renderer = mujoco.Renderer(sim.model, 480, 640)
    buckets: dict[str, list[int]] = {}  # distance band -> [in view, detected]
    seen: dict[str, set[int]] = {"look-around": set(), "survey": set()}
    for label, joints in _marker_views(sim):
        _set_view(sim, joints)
        rgb, depth = _render_both(renderer, sim)
        cam = sim.data.camera("head_camera_rgb")
        R = cam.xmat.reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])
        found = {o.marker_id for o in detector.detect(RGBDFrame(np.ascontiguousarray(rgb[:, :, ::-1]), depth,
                                                                 camera, 0.0)).observations}
        seen[label.split()[0]] |= found
        for marker_id, (geom, _size) in plan.geoms.items() | _door_geoms(plan, world).items():
            g = sim.data.geom(geom)
            local = R.T @ (g.xpos - cam.xpos)
            if local[2] <= 0.1 or float((R.T @ g.xmat.reshape(3, 3)[:, 2])[2]) > -0.2:
                continue  # behind the camera, or its face turned away (edge-on)
            (u, v), = camera.project(local[None, :])[0]
            if not (0 <= u < 640 and 0 <= v < 480) or abs(float(depth[int(v), int(u)]) - local[2]) > 0.03:
                continue
            low = int(local[2] / 0.5) * 0.5
            band = f"{low:.1f}-{low + 0.5:.1f} m"
            counts = buckets.setdefault(band, [0, 0])
            counts[0] += 1
            counts[1] += marker_id in found
    renderer.close()
    total = len(plan.geoms) + len(_door_geoms(plan, world))
    print(f"markers of {scene}: {total} ({len(plan.geoms)} on objects and pieces, {total - len(plan.geoms)} on "
          f"doors; {plan.dictionary}); distinct markers detected: look-around {len(seen['look-around'])}, "
          f"survey {len(seen['survey'])}, together {len(seen['look-around'] | seen['survey'])}")
    for band in sorted(buckets):
        in_view, detected = buckets[band]
        print(f"  at {band}: {detected}/{in_view} marker views detected ({100 * detected / in_view:.0f} %)")


def _door_geoms(plan, world) -> dict[int, tuple[str, float]]:
    """The door markers' geoms (named marker<id>), by id, from the registry entries."""
    return {entry["door"]["marker"]: (f"marker{entry['door']['marker']}", entry["door"]["size"])
            for entry in plan.entries if "door" in entry}


def _render_both(renderer: mujoco.Renderer, sim: Simulator) -> tuple[np.ndarray, np.ndarray]:
    renderer.update_scene(sim.data, "head_camera_rgb")
    rgb = renderer.render()
    renderer.enable_depth_rendering()
    renderer.update_scene(sim.data, "head_camera_rgb")
    depth = renderer.render().astype(np.float32)
    renderer.disable_depth_rendering()
    return rgb, depth


def run_split(scene: str, frames: int) -> None:
    """One run through the graph (see the docstring) and where its CPU went."""
    import tempfile

    from task_learning_nodes.clients.mujoco_run import run_mujoco

    objects = len([o for o in load_scene(scene).objects if o.get("parentReceptacles")])
    with tempfile.TemporaryDirectory() as folder:
        data = run_mujoco(scene, "STARS+O", str(Path(folder) / "kb.sqlite"), timeout_s=3600.0)
    sim = Simulator(build_world(load_scene(scene)))
    render_s = render_ms(sim, frames, True) / 1000.0
    cpu = data["cpu_s"]
    simulator = cpu.get("task-learning-sim", 0.0)
    rendering = min(simulator, render_s * (data["camera_frames"] or 0))
    nodes = {k: v for k, v in cpu.items() if k not in ("task-learning-sim", "task-learning", "operator", "runner")}
    total = sum(cpu.values())
    print(f"run {scene} (offline stand-in model, not a language model): completion {data['completion']} % from "
          f"physics, {data['sim_time_s']} s simulated in {data['wall_time_s']} s wall, real-time factor "
          f"{data['real_time_factor']}, {data['wall_time_s'] / max(objects, 1):.0f} s wall per object ({objects})")
    print(f"CPU {total:.0f} s: simulator {simulator:.0f} s (rendering ~{rendering:.0f} s: {data['camera_frames']} frames "
          f"x {1000 * render_s:.0f} ms; physics and publishing ~{simulator - rendering:.0f} s), perception "
          f"{nodes.get('perception', 0.0):.0f} s, other nodes {sum(nodes.values()) - nodes.get('perception', 0.0):.0f} s, "
          f"operator {cpu.get('operator', 0.0):.0f} s, runner {cpu.get('runner', 0.0):.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="store_groceries")
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per physics figure")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--picture", type=Path, default=None, help="default artifacts/sim/<scene>.png")
    parser.add_argument("--markers", action="store_true", help="only the markers' detection rate")
    parser.add_argument("--run", action="store_true", help="only a run through the graph and its CPU split")
    parser.add_argument("--run-scene", default=str(ROOT / "test" / "data" / "scenes" / "sim_short.yaml"))
    args = parser.parse_args()
    if args.run:
        run_split(args.run_scene, args.frames)
        return 0
    if args.markers:
        markers(args.scene)
        return 0
    began = time.perf_counter()
    sim = Simulator(build_world(load_scene(args.scene)))
    print(f"scene {args.scene}: {len(sim.world.items)} objects, {len(sim.world.receptacles)} pieces, "
          f"{sim.model.nbody} bodies, {sim.model.ngeom} geoms; built in {time.perf_counter() - began:.2f} s")
    print(f"load (1/5/15 min): {' '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    for label, driving in (("standing", False), ("driving", True)):
        factor, cpu = physics(sim, args.seconds, driving)
        print(f"physics, robot {label}: real-time factor {factor:.2f}, {cpu:.2f} CPU s per simulated s")
    for label, depth in (("colour", False), ("colour + depth", True)):
        print(f"head camera 640x480, {label}: {render_ms(sim, args.frames, depth):.0f} ms a frame (median)")
    picture(sim, args.picture or ROOT / "artifacts" / "sim" / f"{args.scene}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
