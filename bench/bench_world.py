"""World timings: symbolic-world step (including the metadata it returns) and the
metadata -> WorldState build, for tidy_kitchen and a generated 500-object scene.

Run: .venv/bin/python bench/bench_world.py [--repeat N]
(The ROS message conversion + publish time is measured by bench/bench_ros.py.)
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

from task_learning.world.generate import generate_scene
from task_learning.world.scene import Scene, load_scene
from task_learning.world.state import world_state_from_metadata
from task_learning.world.symbolic import SymbolicWorld


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def _time(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def bench_scene(scene: Scene, repeat: int) -> dict[str, float]:
    world = SymbolicWorld(scene)
    target = scene.task_objects[0]
    home = scene.by_id()[target]["parentReceptacles"][0]
    cycle = [("NavigateToObject", target), ("PickupObject", target), ("NavigateToObject", home),
             ("PutObject", home)]
    step_samples: list[float] = []
    failures = 0
    for i in range(repeat):
        action, object_id = cycle[i % len(cycle)]
        start = time.perf_counter()
        metadata = world.step(action, objectId=object_id)
        step_samples.append(time.perf_counter() - start)
        failures += not metadata["lastActionSuccess"]
    failed_step = _time(lambda: world.step("PickupObject", objectId="Nope|1"), repeat)
    metadata = world.metadata
    build = _time(lambda: world_state_from_metadata(metadata), repeat)

    def fresh_metadata() -> None:
        world._cache = None
        _ = world.metadata  # the property builds it

    metadata_build = _time(fresh_metadata, repeat)
    return {
        "objects": len(metadata["objects"]),
        "step_ms": _median_ms(step_samples),
        "failed_step_ms": _median_ms(failed_step),
        "metadata_build_ms": _median_ms(metadata_build),
        "worldstate_build_ms": _median_ms(build),
        "failures": failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    generated = generate_scene(500, n_furniture=20, seed=0)
    gen_ms = (time.perf_counter() - start) * 1000
    print(f"generated 500-object scene in {gen_ms:.1f} ms")
    print(f"{'scene':<16}{'objects':>8}{'step ms':>10}{'failed ms':>11}{'metadata ms':>13}{'WorldState ms':>15}")
    for name, scene in (("tidy_kitchen", load_scene("tidy_kitchen")), ("generated_500", generated)):
        r = bench_scene(scene, args.repeat)
        assert r["failures"] == 0, f"{name}: {r['failures']} benchmark actions failed"
        print(f"{name:<16}{r['objects']:>8}{r['step_ms']:>10.3f}{r['failed_step_ms']:>11.3f}"
              f"{r['metadata_build_ms']:>13.3f}{r['worldstate_build_ms']:>15.3f}")
    print("step = one action incl. rule application and the metadata it returns; medians of "
          f"{args.repeat} runs")


if __name__ == "__main__":
    main()
