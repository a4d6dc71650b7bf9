"""Bench: the real model on this machine (issue 26, point 6).

STARS+O on store_groceries (15 objects, simulated operator) in-process as `task-learning run
--llm local` runs it, with Gemma 3 270M (base, Q4_K_M) on llama.cpp's llama-server, for each
elicitation mode and each number of parallel slots (`-np`):
  concurrent      one object after another, a tree level as concurrent single requests
  batched         one object after another, a tree level as list-prompt round trips (run's default)
  across-objects  every object's levels merged into shared list-prompt round trips
Printed per run: wall time, the server's and this process's CPU seconds (the work done, whatever
else ran on the machine: on a shared machine wall time mostly measures the neighbours), model calls (prompts) and round trips, calls/s, tokens/s (prompt
tokens the server evaluated + tokens it generated, per wall second; and its own prompt and
generation rates), the cached-prompt share (prompt tokens served from its prefix cache, of all
prompt tokens), completion and questions. Token figures come from the server's own /metrics
counters (exact in every mode: llama.cpp's answers to a list of prompts report the first prompt's
usage only). A run the server could not serve (the LLM endpoint stopped it) is printed as FAILED
with its reason and the others go on (exit 1). Then, from the numbers: whether list prompts and a
second slot pay off here.

One fresh server per run; each run a fresh knowledge base. Needs `make llm`. About 5-15 min per
run on 2 cores (6 runs by default): it prints each row as it finishes.

    .venv/bin/python bench/bench_local_llm.py [--modes concurrent batched across-objects] [--parallel 1 2]
        [--objects N]   # only the first N task objects
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.errors import TaskLearningError
from task_learning.llm.local_install import local_paths
from task_learning.llm.local_server import LocalServer
from task_learning.llm.settings import load_llm_settings
from task_learning.planning.session import ELICITATION_MODES, RunSpec, run_in_process
from task_learning.world.scene import Scene, load_scene

COUNTERS = ("prompt_tokens_total", "prompt_tokens_cached_total", "tokens_predicted_total", "prompt_seconds_total",
            "tokens_predicted_seconds_total", "n_decode_total", "n_busy_slots_per_decode")


def server_metrics(server: Any) -> dict[str, float]:
    """The server's /metrics counters (`server.root_url`: a LocalServer or anything with one)."""
    with urllib.request.urlopen(f"{server.root_url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    values = {}
    for name in COUNTERS:
        match = re.search(rf"^llamacpp:{name} ([0-9.e+-]+)$", text, re.MULTILINE)
        values[name] = float(match.group(1)) if match else 0.0
    return values


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc): the work the server did, whatever
    else ran on the machine meanwhile."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_objects(name: str, count: int | None) -> Scene:
    """The scene with only its first `count` task objects (and their preferences, so the completion
    measure scores those): a shorter run on a shared machine. All of them when `count` is None."""
    scene = load_scene(name)
    if count is None or count >= len(scene.task_objects):
        return scene
    kept = scene.task_objects[:count]
    # assertions=0: the completion measure counts the kept preferences and the closables (the
    # scene's stated total is for all its objects)
    return replace(scene, task_objects=kept, preferences={k: v for k, v in scene.preferences.items() if k in kept},
                   assertions=0)


def run_one(scene: Scene, mode: str, parallel: int) -> dict:
    settings = load_llm_settings().local
    settings = settings.model_copy(update={"parallel": parallel, "extra_args": (*settings.extra_args, "--metrics")})
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp, LocalServer(settings) as server:
        before = server_metrics(server)
        pid = server.process.pid if server.process is not None else 0
        cpu_before, own_before = cpu_seconds(pid), time.process_time()
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        metrics, _ = run_in_process(RunSpec(scene=scene, condition="STARS+O", llm="local", operator="simulated",
                                            db=Path(tmp) / "kb.sqlite", elicitation=mode,
                                            llm_options={"local_server": server}))
        wall = time.perf_counter() - started
        server_cpu, client_cpu = cpu_seconds(pid) - cpu_before, time.process_time() - own_before
        after = server_metrics(server)
    delta = {k: after[k] - before[k] for k in COUNTERS if k != "n_busy_slots_per_decode"}
    evaluated, cached, generated = (delta["prompt_tokens_total"], delta["prompt_tokens_cached_total"],
                                    delta["tokens_predicted_total"])
    usage = metrics.usage
    return {
        "mode": mode, "np": parallel, "wall_s": wall, "server_cpu_s": server_cpu, "client_cpu_s": client_cpu, "calls": usage.calls, "round_trips": usage.requests,
        "calls_per_s": usage.calls / wall, "tokens_per_s": (evaluated + generated) / wall,
        "prompt_eval_per_s": evaluated / delta["prompt_seconds_total"] if delta["prompt_seconds_total"] else 0.0,
        "gen_per_s": generated / delta["tokens_predicted_seconds_total"] if delta["tokens_predicted_seconds_total"] else 0.0,
        "cached_share": cached / (cached + evaluated) if cached + evaluated else 0.0,
        "evaluated": evaluated, "cached": cached, "generated": generated,
        "busy_slots_per_decode": after["n_busy_slots_per_decode"],
        "completion": metrics.completion, "questions": metrics.yes_no + metrics.instructions,
        "sourced": metrics.sourced, "retrieved": metrics.retrieved, "proposed": metrics.proposed, "load": (load_before + os.getloadavg()[0]) / 2,
        "goals": sorted((str(o.get("object_id")), str(o.get("goal"))) for o in metrics.per_object),
    }


HEADER = (f"{'mode':<15}{'np':>3}{'wall s':>8}{'srv cpu':>8}{'cli cpu':>8}{'calls':>7}{'trips':>7}{'calls/s':>8}{'tok/s':>7}"
          f"{'eval/s':>8}{'gen/s':>7}{'cached':>8}{'slots':>6}{'compl%':>7}{'retr':>6}{'prop':>6}{'asked':>6}{'load':>6}")


def row(r: dict) -> str:
    return (f"{r['mode']:<15}{r['np']:>3}{r['wall_s']:>8.0f}{r['server_cpu_s']:>8.0f}{r['client_cpu_s']:>8.0f}{r['calls']:>7}{r['round_trips']:>7}"
            f"{r['calls_per_s']:>8.2f}{r['tokens_per_s']:>7.0f}{r['prompt_eval_per_s']:>8.0f}{r['gen_per_s']:>7.1f}"
            f"{100 * r['cached_share']:>7.1f}%{r['busy_slots_per_decode']:>6.2f}{r['completion']:>7.1f}"
            f"{r['retrieved']:>6}{r['proposed']:>6}{r['questions']:>6}{r['load']:>6.1f}")


def verdicts(rows: list[dict]) -> list[str]:
    """What the numbers say about list prompts and a second slot, here (with --repeat: each
    configuration's least disturbed run, the one with the shortest wall time)."""
    by: dict[tuple[str, int], dict] = {}
    for r in rows:
        key = (r["mode"], r["np"])
        if key not in by or r["wall_s"] < by[key]["wall_s"]:
            by[key] = r
    out = []
    for np_ in sorted({r["np"] for r in rows}):
        single, lists = by.get(("concurrent", np_)), by.get(("batched", np_))
        if single and lists:
            gain = single["wall_s"] / lists["wall_s"]
            out.append(f"-np {np_}: list prompts (batched) vs single requests (concurrent): {lists['wall_s']:.0f} s vs "
                       f"{single['wall_s']:.0f} s wall ({gain:.2f}x), server CPU {lists['server_cpu_s']:.0f} s vs "
                       f"{single['server_cpu_s']:.0f} s, {lists['round_trips']} vs {single['round_trips']} round "
                       f"trips: {'they pay off' if gain >= 1.1 else 'they do NOT pay off on this machine'}")
        merged = by.get(("across-objects", np_))
        if merged and lists:
            gain = lists["wall_s"] / merged["wall_s"]
            out.append(f"-np {np_}: across-objects vs batched: {merged['wall_s']:.0f} s vs {lists['wall_s']:.0f} s "
                       f"wall ({gain:.2f}x), server CPU {merged['server_cpu_s']:.0f} s vs {lists['server_cpu_s']:.0f} s: "
                       f"{'pays off' if gain >= 1.1 else 'does NOT pay off on this machine'}")
    for mode in dict.fromkeys(r["mode"] for r in rows):
        one, two = by.get((mode, 1)), by.get((mode, 2))
        if one and two:
            gain = one["wall_s"] / two["wall_s"]
            out.append(f"{mode}: 2 slots vs 1: {two['wall_s']:.0f} s vs {one['wall_s']:.0f} s wall ({gain:.2f}x), server "
                       f"CPU {two['server_cpu_s']:.0f} s vs {one['server_cpu_s']:.0f} s "
                       f"({two['busy_slots_per_decode']:.2f} busy slots per decode): "
                       f"{'pays off' if gain >= 1.1 else 'does NOT pay off on 2 cores'}")
    goals = {tuple(r["goals"]) for r in rows if r["goals"]}
    retrieved = {r["retrieved"] for r in rows}
    if len(goals) > 1 or len(retrieved) > 1:
        out.append(f"the runs differ in what the model gave (retrieved {sorted(retrieved)}; learned goals "
                   f"{'differ' if len(goals) > 1 else 'the same'}): llama.cpp's numerics change with how requests "
                   "are batched and cached, so a branch near a threshold can go either way")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scene", default="store_groceries")
    parser.add_argument("--modes", nargs="+", default=list(ELICITATION_MODES), choices=ELICITATION_MODES)
    parser.add_argument("--parallel", nargs="+", type=int, default=[1, 2], help="-np values (default 1 2)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds over every configuration, interleaved (default 1)")
    parser.add_argument("--objects", type=int, default=None,
                        help="only the scene's first N task objects (a shorter run; default: all)")
    args = parser.parse_args()
    if args.objects is not None and args.objects < 1:
        parser.error("--objects must be at least 1")
    scene = first_objects(args.scene, args.objects)
    if not local_paths().installed():
        print("bench_local_llm: skipped: the local model is not installed (make llm)")
        return 0
    print(f"STARS+O on {args.scene} ({len(scene.task_objects)} of {len(load_scene(args.scene).task_objects)} task "
          f"objects) with Gemma 3 270M (Q4_K_M) on llama-server, {os.cpu_count()} cores; "
          "tok/s = prompt tokens evaluated + generated per wall second; eval/s, gen/s: the server's own rates; "
          "cached: share of prompt tokens from its prefix cache; slots: busy slots per decode; load: 1-min load "
          "average during the run (other work on the machine)", flush=True)
    print(HEADER, flush=True)
    rows, failed = [], 0
    for _round in range(args.repeat):
        for parallel in args.parallel:
            for mode in args.modes:
                started = time.perf_counter()
                try:
                    rows.append(run_one(scene, mode, parallel))
                except TaskLearningError as exc:  # a run the server could not serve is a result too
                    failed += 1
                    print(f"{mode:<15}{parallel:>3}{time.perf_counter() - started:>8.0f}  FAILED: {exc}", flush=True)
                    continue
                print(row(rows[-1]), flush=True)
    for line in verdicts(rows):
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
