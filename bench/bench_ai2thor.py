"""The AI2-THOR bridge's cost: per-step latency and world-state rate through the real ai2thor
Controller (here against the project's stand-in simulator process) versus the symbolic backend
in-process, at 300x300 and 640x480, with images (RGB + depth) on and off.

One step = one action through the backend and the WorldState built from the metadata it returns
(what perception publishes after an action). The cycle: NavigateToObject(apple), PickupObject,
NavigateToObject(fridge), OpenObject, PutObject, CloseObject, then the apple taken out again, so
every step succeeds and changes the world. The rate is steps (world states) per second.

It also writes a picture of one step's frames (RGB beside depth, colour-mapped, 0-5 m) to
artifacts/ai2thor/step_rgb_depth.png: the robot after NavigateToObject(apple), facing it.

Run: .venv/bin/python bench/bench_ai2thor.py [--steps N] [--scene tidy_floorplan1] [--picture PATH]
The stand-in renders on the CPU (numpy); a Unity build renders on a GPU, so the image figures are
the stand-in's, not Unity's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata
from task_learning.world.symbolic import SymbolicWorld
from task_learning.world.thor.bridge import Ai2ThorWorld
from task_learning.world.thor.settings import load_thor_settings


def cycle(scene: Any) -> list[tuple[str, str]]:
    by_type = {o["objectType"]: o["objectId"] for o in scene.objects}
    apple, fridge = by_type["Apple"], by_type["Fridge"]
    counter = next(o for o in scene.objects if o["objectId"] == apple)["parentReceptacles"][0]
    return [("NavigateToObject", apple), ("PickupObject", apple), ("NavigateToObject", fridge),
            ("OpenObject", fridge), ("PutObject", fridge), ("PickupObject", apple),
            ("CloseObject", fridge), ("NavigateToObject", counter), ("PutObject", counter)]


def measure(world: Any, steps: list[tuple[str, str]], count: int) -> dict[str, float]:
    samples = []
    failures = 0
    for i in range(count):
        action, object_id = steps[i % len(steps)]
        start = time.perf_counter()
        metadata = world.step(action, objectId=object_id)
        world_state_from_metadata(metadata)
        samples.append(time.perf_counter() - start)
        failures += not metadata["lastActionSuccess"]
    samples.sort()
    return {"median_ms": statistics.median(samples) * 1000, "p95_ms": samples[int(0.95 * (len(samples) - 1))] * 1000,
            "rate_hz": len(samples) / sum(samples), "failures": failures}


def write_picture(scene: Any, settings: Any, path: Path) -> Path:
    import cv2
    import numpy as np

    with Ai2ThorWorld(scene, settings.with_overrides(width=640, height=480)) as world:
        apple = next(o["objectId"] for o in scene.objects if o["objectType"] == "Apple")
        world.step("NavigateToObject", objectId=apple)
        rgb, depth = world.frame, world.depth_frame
    scaled = (255 * np.clip(depth / 5.0, 0, 1)).astype(np.uint8)
    depth_bgr = cv2.applyColorMap(scaled, cv2.COLORMAP_VIRIDIS)
    picture = np.hstack([np.ascontiguousarray(rgb[:, :, ::-1]), depth_bgr])
    cv2.putText(picture, "RGB (rgb8)", (10, 25), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (255, 255, 255), 2)
    cv2.putText(picture, "depth (32FC1, 0-5 m)", (650, 25), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (255, 255, 255), 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), picture)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=90)
    parser.add_argument("--scene", default="tidy_floorplan1")
    parser.add_argument("--picture", default="artifacts/ai2thor/step_rgb_depth.png")
    args = parser.parse_args()
    os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-ai2thor-")  # ai2thor's ~/.ai2thor logs
    scene = load_scene(args.scene)
    steps = cycle(scene)
    base = measure(SymbolicWorld(scene), steps, args.steps)
    print(f"scene {scene.name} ({len(scene.objects)} objects), {args.steps} steps, cycle of {len(steps)} actions")
    print(f"{'backend':<34}{'median ms':>10}{'p95 ms':>9}{'states/s':>10}{'ratio':>8}")
    print(f"{'symbolic, in-process':<34}{base['median_ms']:>10.3f}{base['p95_ms']:>9.3f}{base['rate_hz']:>10.0f}{1.0:>8.1f}")
    settings = load_thor_settings()
    for width, height in ((300, 300), (640, 480)):
        for images in (False, True):
            world = Ai2ThorWorld(scene, settings.with_overrides(width=width, height=height, render_image=images,
                                                                render_depth_image=images))
            try:
                result = measure(world, steps, args.steps)
            finally:
                world.close()
            label = f"ai2thor {width}x{height}, images {'on' if images else 'off'}"
            ratio = result["median_ms"] / base["median_ms"]
            print(f"{label:<34}{result['median_ms']:>10.3f}{result['p95_ms']:>9.3f}{result['rate_hz']:>10.0f}"
                  f"{ratio:>8.0f}" + (f"  ({result['failures']} failed steps)" if result["failures"] else ""))
    print(f"picture: {write_picture(scene, settings, Path(args.picture))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
