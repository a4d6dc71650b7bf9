"""Bench: `--decoding grounded` with the real model (issue 43), per scene, against the physical limit.

One llama-server (Gemma 3 270M, `-np 2`, `--threads`, `--metrics`) for everything, started here.
Per scene:
  probe  every task object's grounded Search Tree and scoring alone (condition ST, no BCR): where the
         user's preferred place ranks in the grounded distribution, with the goal's probability
         the product of its tokens' (sum) and their geometric mean (mean), both from the same tree;
  runs   `task-learning run --decoding grounded` in-process for each --conditions (STARS+O with the
         simulated operator, STARS without one): completion, the operator's words and yes/no,
         calls, tokens, wall, the preferred place's rank per object.
Each line also gives the server's own counters over that part (/metrics): prompt tokens it
evaluated and their seconds, tokens it generated and their seconds, so `server busy / wall` is how
close the stack ran to what the server needs (1.0: the model was never idle), and this process's
CPU share of the wall time. Every line is printed as JSON, with the time of day and the load.

    .venv/bin/python bench/bench_grounded.py --scenes store_groceries tidy_kitchen --probe --conditions STARS+O STARS
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_local_llm import COUNTERS, cpu_seconds, first_objects, server_metrics

from task_learning.experiments.grounded import grounded_report, preferred_rank
from task_learning.llm.client import make_client
from task_learning.llm.local_server import LocalServer
from task_learning.llm.settings import load_llm_settings
from task_learning.planning.session import RunSpec, run_in_process
from task_learning.stars.elicit import ElicitationSetup, elicit_goal
from task_learning.stars.grounded import place_order
from task_learning.stars.prompts import load_templates
from task_learning.world.scene import Scene


def _cpu(pid: int) -> float:
    return cpu_seconds(pid) if pid else 0.0


@dataclass
class Target:
    """The server the bench talks to: one it started (a LocalServer) or a running one (--base-url,
    started with --metrics; --server-pid for its CPU time)."""

    root_url: str
    pid: int
    options: dict[str, Any]


def measured(server: Target, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`work()`'s figures plus wall, CPU and the server's counters over it."""
    pid = server.pid
    before, srv_cpu, own_cpu = server_metrics(server), _cpu(pid), time.process_time()
    load, started, clock = os.getloadavg()[0], time.perf_counter(), time.strftime("%H:%M:%S", time.gmtime())
    figures = work()
    wall = time.perf_counter() - started
    after = server_metrics(server)
    d = {k: after[k] - before[k] for k in COUNTERS if k != "n_busy_slots_per_decode"}
    busy = d["prompt_seconds_total"] + d["tokens_predicted_seconds_total"]
    figures.update(
        started_utc=clock, wall_s=round(wall, 1), load=round((load + os.getloadavg()[0]) / 2, 1),
        server_prompt_tokens=int(d["prompt_tokens_total"]), server_cached_tokens=int(d["prompt_tokens_cached_total"]),
        server_generated_tokens=int(d["tokens_predicted_total"]),
        prompt_eval_per_s=round(d["prompt_tokens_total"] / d["prompt_seconds_total"], 1) if d["prompt_seconds_total"] else None,
        gen_per_s=round(d["tokens_predicted_total"] / d["tokens_predicted_seconds_total"], 1)
        if d["tokens_predicted_seconds_total"] else None,
        server_busy_s=round(busy, 1), server_busy_share=round(busy / wall, 3) if wall else None,
        server_cpu_s=round(_cpu(pid) - srv_cpu, 1), client_cpu_s=round(time.process_time() - own_cpu, 1),
        client_cpu_share=round((time.process_time() - own_cpu) / wall, 3) if wall else None)
    return figures


def probe(scene: Scene, server: Target, search: str, probabilities: str | None = None) -> dict[str, Any]:
    """Each task object's grounded tree and scoring alone: the preferred place's rank (sum, mean),
    its calls and wall time, with the grounded search `search` (decisive | paths) and the
    alternatives' `probabilities` (raw | constrained; None: goal.yaml's)."""
    client = make_client("local", **server.options)
    metadata = {"sceneName": scene.name, "objects": scene.objects}
    templates = load_templates()
    templates = replace(templates, grounded=replace(templates.grounded, search=search,
                                                    probabilities=probabilities or templates.grounded.probabilities))
    objects = {}
    try:
        for object_id in scene.task_objects:
            started, load = time.perf_counter(), os.getloadavg()[0]
            result = elicit_goal(scene.task, object_id, metadata, scene, "ST", client,
                                 setup=ElicitationSetup(decoding="grounded", batched=True, templates=templates))
            preferred = scene.preferences.get(object_id, [])
            ranks = {}
            for how in ("sum", "mean"):
                ranks[how] = preferred_rank(place_order(result.candidates, result.paths, how), preferred)
            objects[object_id] = {"ranks": ranks, "top": [s.to_dict() for s in result.distribution[:3]],
                                  "calls": result.usage.calls, "candidates": len(result.candidates),
                                  "wall_s": round(time.perf_counter() - started, 1),
                                  "load": round((load + os.getloadavg()[0]) / 2, 1)}
            print(json.dumps({"object": object_id, **objects[object_id]}), file=sys.stderr, flush=True)
        usage = client.usage
    finally:
        client.close()
    first = {how: sum(1 for o in objects.values() if o["ranks"][how] == 1) for how in ("sum", "mean")}
    return {"part": "probe", "scene": scene.name, "search": search,
            "probabilities": templates.grounded.probabilities, "objects": len(objects), "preferred_first": first,
            "calls": usage.calls, "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "per_object": objects}


class _ObjectLines(logging.Handler):
    """Each object's grounded distribution as the run finds it (stderr): a run cut short still
    says where the user's place ranked for the objects it reached."""

    def __init__(self, scene: Scene, condition: str) -> None:
        super().__init__(logging.INFO)
        self.scene, self.condition = scene, condition

    def emit(self, record: logging.LogRecord) -> None:
        data = getattr(record, "grounded", None)
        if not isinstance(data, dict):
            return
        preferred = self.scene.preferences.get(data["object"], [])
        print(json.dumps({"scene": self.scene.name, "condition": self.condition,
                          "utc": time.strftime("%H:%M:%S", time.gmtime()), **data,
                          "rank": preferred_rank(data["distribution"], preferred),
                          "rank_mean": preferred_rank(data["by_mean"], preferred)}), file=sys.stderr, flush=True)


def run(scene: Scene, condition: str, server: Target, workdir: Path) -> dict[str, Any]:
    db = workdir / f"{scene.name}_{condition.replace('+', 'plus')}.sqlite"
    lines = _ObjectLines(scene, condition)
    session_log = logging.getLogger("task_learning.planning.session")
    session_log.addHandler(lines)
    session_log.setLevel(logging.INFO)
    metrics, learner = run_in_process(RunSpec(scene=scene, condition=condition, llm="local",
                                              operator="simulated" if condition.endswith("+O") else "none",
                                              db=db, decoding="grounded", llm_options=dict(server.options)),
                                      progress=partial(_progress, scene.name, condition))
    session_log.removeHandler(lines)
    data = metrics.to_dict()
    report = grounded_report(getattr(learner, "distributions", {}), scene, getattr(learner, "distributions_mean", {}))
    usage = data.get("usage", {})
    return {"part": "run", "scene": scene.name, "condition": condition, "completion": data.get("completion"),
            "words": data.get("words"), "yes_no": data.get("yes_no"), "instructions": data.get("instructions"),
            "proposed": data.get("proposed"), "sourced": data.get("sourced"), "calls": usage.get("calls"),
            "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
            "preferred_first": report["first"], "preferred_first_mean": report.get("first_mean"),
            "elicited": report["elicited"], "ranks": {k: v["rank"] for k, v in report["objects"].items()},
            "ranks_mean": {k: v.get("rank_mean") for k, v in report["objects"].items()},
            "top": {k: v["distribution"][:3] for k, v in report["objects"].items()}}


def _progress(scene: str, condition: str, done: int, total: int, message: str) -> None:
    """Each step of a run as it happens (stderr), with the time and the load: a run cut short
    still says how far it got and how fast."""
    print(json.dumps({"scene": scene, "condition": condition, "utc": time.strftime("%H:%M:%S", time.gmtime()),
                      "done": done, "total": total, "message": message, "load": round(os.getloadavg()[0], 1)}),
          file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", nargs="+", default=["store_groceries"])
    parser.add_argument("--probe", action="store_true", help="the trees and scoring alone, per object")
    parser.add_argument("--search", choices=("decisive", "paths"), default="decisive",
                        help="the probe's grounded search (config/prompts/goal.yaml grounded.search)")
    parser.add_argument("--probabilities", choices=("raw", "constrained"), default=None,
                        help="the probe's alternatives: before or under the grammar (default: goal.yaml's)")
    parser.add_argument("--conditions", nargs="*", default=["STARS+O", "STARS"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--objects", type=int, default=None, help="only the first N task objects of each scene")
    parser.add_argument("--base-url", default="", help="a running llama-server started with --metrics")
    parser.add_argument("--server-pid", type=int, default=0, help="its process id (for its CPU time)")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-grounded-"))
        if args.base_url:
            root = args.base_url.rstrip("/").removesuffix("/v1")
            server = Target(root, args.server_pid, {"base_url": f"{root}/v1"})
        else:
            settings = load_llm_settings().local
            settings = settings.model_copy(update={"threads": args.threads,
                                                   "extra_args": (*settings.extra_args, "--metrics")})
            local = stack.enter_context(LocalServer(settings))
            server = Target(local.root_url, local.process.pid if local.process else 0, {"local_server": local})
        for name in args.scenes:
            scene = first_objects(name, args.objects)
            if args.probe:
                print(json.dumps(measured(server, partial(probe, scene, server, args.search, args.probabilities))), flush=True)
            for condition in args.conditions:
                print(json.dumps(measured(server, partial(run, scene, condition, server, Path(tmp)))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
