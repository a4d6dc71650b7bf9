"""The fetch bridge's per-frame cost: one colour + depth frame set (as sensor_msgs/Image bytes)
to an updated belief world state (image conversion, marker detection, solvePnP + depth refinement,
belief update, AI2-THOR metadata), pinned to one core and measured in CPU time of this thread (so
other load on the machine does not count; wall time is printed beside it).

Frames are rendered beforehand by the synthetic camera (not timed): N item markers (8 cm) spread
over a wall 1.5-2.5 m in front of the camera, depth noise sigma 5 mm.

Target: median < 30 ms at 640x480 with 20 markers on one core. Also how it grows with the
number of markers and with the resolution.

    .venv/bin/python bench/bench_fetch.py [--runs 30]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np

from task_learning.perception import geometry as g
from task_learning.perception.bridge import FetchWorld
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.images import image_fields, image_to_array, to_bgr, to_metres
from task_learning.perception.registry import MarkerRegistry, MarkerSpec
from task_learning.perception.synthetic import SYNTHETIC_DICTIONARY, Quad, Renderer
from task_learning.world.camera_model import CameraModel


def setup(markers: int, width: int, height: int) -> tuple[FetchWorld, list[dict], list[dict], np.ndarray, CameraModel]:
    camera = CameraModel.fetch_head(width, height)
    registry = MarkerRegistry(SYNTHETIC_DICTIONARY)
    quads = []
    cols = max(1, math.ceil(math.sqrt(markers * 1.5)))
    rows = math.ceil(markers / cols)
    step = 0.09  # rad between neighbours: faces (0.10 m at >= 1.5 m) never overlap
    for i in range(markers):
        col, row = i % cols, i // cols
        distance = 1.5 + (i % 3) * 0.5
        azimuth, elevation = (col - (cols - 1) / 2) * step, (row - (rows - 1) / 2) * step
        position = (distance, distance * math.tan(azimuth), 1.0 + distance * math.tan(elevation))
        quads.append(Quad(f"m{i}", g.facing(position, (-1.0, 0.0, 0.0)), 0.1, 0.1, i, 0.08))
        registry.markers[i] = MarkerSpec(i, f"Mug|{i + 1}", "Mug", 0.08)
    T_world_camera = g.make(g.OPTICAL_IN_BODY, (0.0, 0.0, 1.0))
    renderer = Renderer(camera)
    clock = [1000.0]
    world = FetchWorld(registry, None, clock=lambda: clock[0], max_age_s=0.0)
    colors, depths = [], []
    rng = np.random.default_rng(0)
    for _ in range(3):
        view = renderer.render(quads, T_world_camera, depth_noise_m=0.005, rng=rng)
        colors.append(image_fields(view.frame.color[:, :, ::-1], "rgb8"))
        depths.append(image_fields(view.frame.depth, "32FC1"))
    return world, colors, depths, T_world_camera, camera


def measure(markers: int, width: int, height: int, runs: int) -> dict[str, float]:
    world, colors, depths, T_world_camera, camera = setup(markers, width, height)
    cpu, wall, found = [], [], []
    for k in range(runs + 2):
        c, d = colors[k % 3], depths[k % 3]
        t0, w0 = time.thread_time(), time.perf_counter()
        bgr = to_bgr(image_to_array(c["encoding"], c["height"], c["width"], c["step"], c["data"]), "rgb8")
        metres = to_metres(image_to_array(d["encoding"], d["height"], d["width"], d["step"], d["data"]), "32FC1")
        world.process(RGBDFrame(bgr, metres, camera, 1000.0 + k, T_world_camera))
        metadata = world.metadata
        t1, w1 = time.thread_time(), time.perf_counter()
        if k >= 2:  # warm-up frames not counted
            cpu.append((t1 - t0) * 1000)
            wall.append((w1 - w0) * 1000)
            found.append(len(world.last_detections.observations))
        assert metadata["objects"] is not None
    return {"cpu_ms": statistics.median(cpu), "cpu_p90_ms": sorted(cpu)[int(0.9 * (len(cpu) - 1))],
            "wall_ms": statistics.median(wall), "detected": min(found)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        print("(could not pin to one core)")
    import cv2

    cv2.setNumThreads(1)
    print(f"frame -> world state, CPU time of one thread on one core (median / p90), wall median; "
          f"{args.runs} frames each")
    print(f"{'resolution':>11} {'markers':>8} {'detected':>9} {'cpu ms':>8} {'p90 ms':>8} {'wall ms':>8}")
    rows = [(640, 480, 20)] + [(640, 480, n) for n in (5, 10, 40)] + [(320, 240, 20), (1280, 960, 20)]
    target = None
    for width, height, markers in rows:
        r = measure(markers, width, height, args.runs)
        if (width, height, markers) == (640, 480, 20):
            target = r["cpu_ms"]
        print(f"{width:>5}x{height:<5} {markers:>8} {r['detected']:>9} {r['cpu_ms']:>8.1f} {r['cpu_p90_ms']:>8.1f} "
              f"{r['wall_ms']:>8.1f}")
    print(f"target: median < 30 ms at 640x480 with 20 markers: {target:.1f} ms "
          f"({'met' if target is not None and target < 30 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
