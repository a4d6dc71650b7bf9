"""Bench: a whole task in a handful of LLM round trips (issue 16).

tidy_kitchen (35 objects) learned end to end in-process (`run_in_process`, as `task-learning run`)
with STARS and STARS+O (simulated operator), the offline provider (NOT a language model: a
deterministic stand-in, see docs/configuration.md) behind a fixed latency per round trip (default 200 ms), in
three modes:
  (a) concurrent      one object after another, a tree level as concurrent single requests
                      (what `run` did before batching; --workers per level, default 4 as `run`)
  (b) batched         one object after another, a tree level as list-prompt round trips
  (c) across-objects  the levels of every object merged into shared list-prompt round trips;
                      the operator is still asked one question at a time in the task's order
Printed per run: round trips, model calls (prompts), tokens, wall time, the share of prompt
characters an ideal prefix cache could serve, task completion and questions. Then the checks:
the learned goals are identical in (a), (b), (c); (c) needs at most 3 x (tree depth + 1) x
(repair rounds + 1) + a few round trips; (c) is at least 20x faster than (a). Exit status 1 only
if the goals differ (a correctness failure); missed speed targets are printed.

    .venv/bin/python bench/bench_batching.py [--latency 0.2] [--workers 4] [--modes a b c]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.llm.cache import ResponseCache
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm.latency import FixedLatencyProvider
from task_learning.llm.prefix_cache import PrefixCacheMeter
from task_learning.llm.settings import load_llm_settings
from task_learning.planning.session import RunSpec, run_in_process
from task_learning.stars.elicit import REPAIR_ROUNDS
from task_learning.stars.tree import TreeSettings

MODES = {"a": "concurrent", "b": "batched", "c": "across-objects"}
FEW = 3  # "a few": selection, its one retry, and one spare


def bench_client(latency: float) -> tuple[LLMClient, FixedLatencyProvider, PrefixCacheMeter]:
    """The client `run` builds from config/llm.yaml, with a prefix meter and the fixed latency."""
    settings = load_llm_settings().client
    offline = make_client("offline").provider
    meter = PrefixCacheMeter(offline)
    timed = FixedLatencyProvider(meter, latency)
    client = LLMClient(timed, cache=ResponseCache(), timeout_s=settings.timeout_s,
                       max_in_flight=settings.max_in_flight, max_batch_size=settings.max_batch_size)
    return client, timed, meter


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scene", default="tidy_kitchen")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per round trip (default 0.2)")
    parser.add_argument("--workers", type=int, default=4, help="(a): concurrent requests per level (run's default 4)")
    parser.add_argument("--conditions", nargs="+", default=["STARS", "STARS+O"])
    parser.add_argument("--modes", nargs="+", default=["a", "b", "c"], choices=sorted(MODES))
    args = parser.parse_args()

    depth = TreeSettings().max_depth
    target = 3 * (depth + 1) * (REPAIR_ROUNDS + 1)
    settings = load_llm_settings().client
    print(f"{args.scene}, offline provider (not a language model), {args.latency * 1000:.0f} ms per round trip; "
          f"max_batch_size {settings.max_batch_size}, max_in_flight {settings.max_in_flight}, "
          f"(a) with {args.workers} workers per level")
    print(f"{'condition':<8} {'mode':<18} {'round trips':>11} {'calls':>6} {'tokens':>8} {'wall s':>8} "
          f"{'cpu s':>6} {'prefix-cacheable':>16} {'completion':>10} {'questions':>9}")
    failures = 0
    for condition in args.conditions:
        goals: dict[str, list] = {}
        walls: dict[str, float] = {}
        trips: dict[str, int] = {}
        for key in args.modes:
            mode = MODES[key]
            client, timed, meter = bench_client(args.latency)
            spec = RunSpec(scene=args.scene, condition=condition, operator="simulated", elicitation=mode,
                           max_workers=args.workers)
            started, cpu = time.perf_counter(), time.process_time()
            metrics, learner = run_in_process(spec, client=client)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            usage = client.usage
            goals[key] = [(r.object_id, r.context, r.goal, r.goal_source, r.outcome) for r in learner.reports]
            walls[key], trips[key] = wall, usage.requests
            assert timed.round_trips == usage.requests, (timed.round_trips, usage.requests)
            print(f"{condition:<8} ({key}) {mode:<14} {usage.requests:>11} {usage.calls:>6} "
                  f"{usage.prompt_tokens + usage.completion_tokens:>8} {wall:>8.1f} {cpu:>6.1f} {meter.meter.share:>15.1%} "
                  f"{metrics.completion:>9.1f}% {metrics.questions:>9}", flush=True)
            client.close()
        first = args.modes[0]
        for key in args.modes[1:]:
            same = goals[key] == goals[first]
            failures += not same
            print(f"{condition}: learned goals ({key}) identical to ({first}): {'yes' if same else 'NO'}")
        if "c" in trips:  # speed targets are printed, not enforced (the machine's load moves them)
            ok = trips["c"] <= target + FEW
            print(f"{condition}: (c) {trips['c']} round trips for the whole task; target <= 3 x (depth {depth} + 1)"
                  f" x (repair rounds {REPAIR_ROUNDS} + 1) + {FEW} = {target + FEW}: {'OK' if ok else 'MISSED'}")
        if "a" in walls and "c" in walls:
            factor = walls["a"] / walls["c"]
            print(f"{condition}: (c) is {factor:.1f}x faster than (a) in wall time (target >= 20x): "
                  f"{'OK' if factor >= 20 else 'MISSED'}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cpu s: this process's CPU time (the offline model, analysis, BCR, the client); load average "
          f"{load:.1f} on {os.cpu_count()} cores: a CPU-bound run is slowed by other processes' load")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
