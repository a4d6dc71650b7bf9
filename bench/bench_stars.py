"""Bench: STARS cost and wall time per object, sequential versus concurrent tree expansion.

Every call goes through FixedLatencyProvider (default 200 ms per call), so wall time shows how many
tree levels went out one after another. Workloads:
- the mug example of the STARS paper appendix B (replayed from the paper's figures, mug_example.py);
- tidy_kitchen with the offline provider (the first N task objects; --objects 0 = all 35).
Then a rerun with the response cache, which must make 0 calls.

    .venv/bin/python bench/bench_stars.py [--latency 0.2] [--workers 8] [--objects 3]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.llm.client import make_client
from task_learning.stars import ElicitationSetup, TreeSettings, elicit_goal
from task_learning.testing import mug_example as mug
from task_learning.world.scene import load_scene


def one(spec, latency, workers, condition, task, object_id, world, scene, analyzer=None, client=None):
    client = client or make_client(spec, latency_s=latency, cache=None)
    started = time.perf_counter()
    result = elicit_goal(task, object_id, world, scene, condition, client,
                         setup=ElicitationSetup(settings=TreeSettings(max_workers=workers), analyzer=analyzer))
    wall = time.perf_counter() - started
    peak = getattr(client.provider, "max_in_flight", 0)
    return result, wall, peak


def row(label, object_id, condition, mode, result, wall, peak):
    u = result.usage
    print(f"{label:<13} {object_id:<22} {condition:<6} {mode:<10} {u.calls:>5} {u.prompt_tokens:>8} "
          f"{u.completion_tokens:>6} {wall:>8.2f} {peak:>5}  {(result.chosen.text if result.chosen else '-')[:60]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call (default 0.2)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent requests per level (default 8)")
    parser.add_argument("--objects", type=int, default=3, help="tidy_kitchen objects (0 = all)")
    args = parser.parse_args()

    print(f"latency {args.latency * 1000:.0f} ms/call; concurrent = {args.workers} workers per tree level")
    print(f"{'workload':<13} {'object':<22} {'cond':<6} {'mode':<10} {'calls':>5} {'prompt':>8} "
          f"{'compl':>6} {'wall s':>8} {'peak':>5}  chosen")
    with tempfile.TemporaryDirectory() as tmp:
        cassette = mug.build_mug_cassette(Path(tmp) / "mug.jsonl")
        spec = f"replay:{cassette}"
        speedups = {}
        for condition in ("ST", "STARS"):
            walls = {}
            for mode, workers in (("sequential", 1), ("concurrent", args.workers)):
                result, wall, peak = one(spec, args.latency, workers, condition, mug.TASK, mug.OBJECT_ID,
                                         mug.mug_metadata(), None, analyzer=mug.paper_analysis)
                walls[mode] = wall
                row("mug example", mug.OBJECT_ID, condition, mode, result, wall, peak)
            speedups[condition] = walls["sequential"] / walls["concurrent"]
        for condition, factor in speedups.items():
            print(f"mug example {condition}: concurrent is {factor:.1f}x faster than sequential"
                  f" ({'OK' if factor >= 3 else 'BELOW 3x'})")

        cached = make_client(spec, latency_s=args.latency, cache="memory")
        first, _, _ = one(spec, args.latency, args.workers, "STARS", mug.TASK, mug.OBJECT_ID, mug.mug_metadata(),
                          None, analyzer=mug.paper_analysis, client=cached)
        again, wall, _ = one(spec, args.latency, args.workers, "STARS", mug.TASK, mug.OBJECT_ID,
                             mug.mug_metadata(), None, analyzer=mug.paper_analysis, client=cached)
        print(f"mug example STARS rerun with cache: {again.usage.calls} calls "
              f"({again.usage.cache_hits} cache hits, first run {first.usage.calls} calls), {wall:.3f} s")

    scene = load_scene("tidy_kitchen")
    world = {"objects": scene.objects}
    objects = scene.task_objects if args.objects <= 0 else scene.task_objects[: args.objects]
    totals: dict[tuple[str, str], list[float]] = {}
    cached = make_client("offline", latency_s=args.latency, cache="memory")
    for object_id in objects:
        for condition in ("ST", "STARS"):
            for mode, workers in (("sequential", 1), ("concurrent", args.workers)):
                client = cached if (mode == "concurrent" and condition == "STARS") else None
                result, wall, peak = one("offline", args.latency, workers, condition, scene.task, object_id,
                                         world, scene, client=client)
                row("tidy_kitchen", object_id, condition, mode, result, wall, peak)
                t = totals.setdefault((condition, mode), [0, 0, 0, 0.0])
                t[0] += result.usage.calls
                t[1] += result.usage.prompt_tokens
                t[2] += result.usage.completion_tokens
                t[3] += wall
    n = len(objects)
    for (condition, mode), (calls, pt, ct, wall) in sorted(totals.items()):
        print(f"tidy_kitchen {n} objects {condition:<5} {mode:<10}: {calls / n:7.1f} calls/object, "
              f"{(pt + ct) / n:8.0f} tokens/object, {wall / n:6.2f} s/object")
    for condition in ("ST", "STARS"):
        seq, conc = totals[(condition, "sequential")][3], totals[(condition, "concurrent")][3]
        print(f"tidy_kitchen {condition}: concurrent is {seq / conc:.1f}x faster than sequential")
    rerun_calls = 0
    started = time.perf_counter()
    for object_id in objects:
        result, _, _ = one("offline", args.latency, args.workers, "STARS", scene.task, object_id, world, scene,
                           client=cached)
        rerun_calls += result.usage.calls
    print(f"tidy_kitchen STARS rerun with cache: {rerun_calls} calls for {n} objects "
          f"({time.perf_counter() - started:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
