"""Bench: STARS at 10x the paper's task size (issue 16).

Generated tidying tasks (task_learning/world/generate.py: seeded, kitchen and office furniture in
one "house" location (the scene format has no rooms); not from the paper) of 35 to 350 task
objects, every one of them to be tidied (also those starting in closed furniture), each learned
end to end in-process like `task-learning run` (STARS+O with the simulated operator, BCR reaching
every goal, goals and policies stored in an SQLite file), with the offline provider (NOT a
language model: a deterministic stand-in) behind a fixed latency per round trip, eliciting across
objects (list-prompt round trips shared by every object; the operator asked one object at a time).

Preferences (`--preferences`): `per-type` (the default) draws one kind of furniture per object
type, any piece of that kind will do (a household's habits; what a learner of goals per type can
finish); `per-object` draws one piece of furniture per object, so two cans of beans may belong in
different places and "in the fridge" may mean the second of two identical fridges: completion then
measures the generator, not the learner (at 350 objects it fell to 37 %, mostly "the right kind of
furniture, another piece of it").

Every size runs in its own process, so peak memory (ru_maxrss) is that run's own. Printed per size:
objects elicited, model calls, round trips, tokens, wall time, peak memory, knowledge-base size,
completion; then the exponent b of a least-squares fit cost ~ n^b over the sizes (b = 1: linear).

    .venv/bin/python bench/bench_scale.py [--sizes 35 70 140 350] [--latency 0.2] [--mode across-objects]
                                          [--preferences per-type|per-object]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METRICS = ("calls", "round_trips", "tokens", "wall_s", "cpu_s", "peak_mb", "kb_kb")


def furniture_for(n_objects: int) -> int:
    """Furniture grows with the task (about one piece per 10 objects, at least 14: every kind)."""
    return max(14, n_objects // 10)


def child(n_objects: int, latency: float, mode: str, condition: str, seed: int, preferences: str) -> dict:
    from task_learning.llm.client import make_client
    from task_learning.planning.session import RunSpec, run_in_process
    from task_learning.world.generate import generate_scene

    scene = generate_scene(n_objects, n_furniture=furniture_for(n_objects), seed=seed, name=f"generated_{n_objects}",
                           learnable=preferences == "per-type")
    # Every task object is to be tidied, also those starting inside a closed cupboard or fridge.
    furniture = [o["objectId"] for o in scene.objects if o["objectId"] not in set(scene.task_objects)]
    scene = replace(scene, subtasks=[replace(scene.subtasks[0], places=furniture)])
    client = make_client("offline", latency_s=latency)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kb.sqlite"
        spec = RunSpec(scene=scene, condition=condition, operator="simulated", db=db, elicitation=mode)
        started, cpu = time.perf_counter(), time.process_time()
        metrics, learner = run_in_process(spec, client=client)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        kb_bytes = sum(f.stat().st_size for f in Path(tmp).iterdir())
    usage = client.usage
    return {
        "objects": len(scene.task_objects),
        "handled": len(learner.reports),
        "elicited": sum(1 for r in learner.reports if r.goal_source in ("elicited", "described")),
        "calls": usage.calls,
        "round_trips": usage.requests,
        # merged request levels of the cross-object driver; each level is cut into round trips of
        # at most client.max_batch_size prompts, sent concurrently
        "levels": getattr(getattr(learner.elicit, "elicitor", None), "levels", 0),
        "tokens": usage.prompt_tokens + usage.completion_tokens,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),  # unlike wall time, not stretched by other processes' load
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "kb_kb": round(kb_bytes / 1024, 1),
        "completion": round(metrics.completion, 1),
        "questions": metrics.questions,
    }


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Slope of log y over log x (least squares)."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[35, 70, 140, 350])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per round trip (default 0.2)")
    parser.add_argument("--mode", default="across-objects", choices=("concurrent", "batched", "across-objects"))
    parser.add_argument("--condition", default="STARS+O")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preferences", default="per-type", choices=("per-type", "per-object"))
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.latency, args.mode, args.condition, args.seed, args.preferences)))
        return 0

    print(f"generated tidying tasks, {args.condition}, simulated operator, offline provider (not a language "
          f"model), {args.latency * 1000:.0f} ms per round trip, elicitation {args.mode}, preferences {args.preferences}")
    print(f"{'objects':>7} {'elicited':>8} {'calls':>7} {'levels':>6} {'round trips':>11} {'tokens':>9} {'wall s':>7} "
          f"{'cpu s':>7} {'peak MB':>8} {'kb KB':>7} {'completion':>10} {'questions':>9}")
    rows = []
    for n in args.sizes:
        command = [sys.executable, __file__, "--child", str(n), "--latency", str(args.latency),
                   "--mode", args.mode, "--condition", args.condition, "--seed", str(args.seed),
                   "--preferences", args.preferences]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            print(f"{n}: failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
            return 1
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{row['objects']:>7} {row['elicited']:>8} {row['calls']:>7} {row['levels']:>6} {row['round_trips']:>11} "
              f"{row['tokens']:>9} {row['wall_s']:>7.1f} {row['cpu_s']:>7.1f} {row['peak_mb']:>8.1f} {row['kb_kb']:>7.1f} "
              f"{row['completion']:>9.1f}% {row['questions']:>9}", flush=True)
    if len(rows) >= 2:
        xs = [r["objects"] for r in rows]
        fits = ", ".join(f"{name} {fit_exponent(xs, [r[name] for r in rows]):.2f}" for name in METRICS)
        print(f"fitted exponent b of cost ~ objects^b ({xs[0]} to {xs[-1]} objects): {fits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
