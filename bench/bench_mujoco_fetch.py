"""The simulated Fetch's cost on this machine (docs/sim.md): physics real-time factor, head camera
render time, and where the CPU goes.

- physics: the store_groceries world (the Fetch, 14 pieces of furniture, 15 objects) stepped with
  the controllers ticking at 100 Hz, the robot standing and then driving (a 1 m goal there and
  back): simulated seconds per wall second, and process CPU seconds per simulated second;
- rendering: the head camera at 640x480 through MuJoCo's offscreen renderer (MUJOCO_GL=egl, Mesa's
  software rasteriser here: no GPU), colour alone and colour plus registered depth, ms a frame.

It also writes a picture (--picture, default artifacts/sim/<scene>.png): the world from above beside
the head camera's colour and depth (0-5 m, grey) with the head turned toward the bags.

Run: .venv/bin/python bench/bench_mujoco_fetch.py [--scene store_groceries] [--seconds 10] [--frames 20]
"""
from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="store_groceries")
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per physics figure")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--picture", type=Path, default=None, help="default artifacts/sim/<scene>.png")
    args = parser.parse_args()
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
