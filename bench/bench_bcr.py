"""BCR benchmarks (the BCR paper): success per task in both modes beside the paper's Table 1, decision
overhead without the LLM, its growth with the scene, and the candidates considered per decision
(the paper's Table 3 measure).

The LLM engine runs on the offline model, which is NOT a language model (a hand-written chooser):
its success counts show the algorithm's mechanics in each mode, not what GPT-3.5 would do.

    .venv/bin/python bench/bench_bcr.py [--trials 50]

Decision overhead = everything the agent does for one decision except asking the model: goal
check, tree update (success / blocking resolutions), blocking-condition detection, loop signature,
candidate listing and building the BCR paper's prompt (LLMRequest). The engine used here builds
the prompt and then answers at once, so the model's latency is excluded by construction.
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.bcr.agent import BCRAgent, Selection
from task_learning.bcr.domain import load_domain
from task_learning.bcr.literals import parse_literal
from task_learning.bcr.prompt import build_request
from task_learning.bcr.runner import make_world, run_trial, summarize
from task_learning.experiments.bcr_table import PAPER_TABLE_1, TASKS
from task_learning.llm.client import make_client
from task_learning.types import ActionOutcome
from task_learning.world.scene import scene_from_dict


class PromptOnlyEngine:
    """Builds the full prompt, then takes the OpenObject with the highest id (the apple is in the
    first drawer, so the search visits many drawers and the tree stays wide)."""

    name = "prompt-only"

    def __init__(self) -> None:
        self.prompt_chars = 0

    def select(self, context):
        request = build_request(context.goals, context.completed, context.texts, context.history,
                                context.errors)
        self.prompt_chars = len(request.messages[0][1])
        opens = [c for c in context.candidates if c.action.schema == "OpenObject"]
        if opens:
            return Selection(max(opens, key=lambda c: c.action.args[0]).action)
        return Selection(context.candidates[0].action)


def drawers_scene(drawers: int, clutter: int) -> object:
    """A kitchen with `drawers` closed drawers (the apple in Drawer|1) and `clutter` spoons on
    counters: drawers widen the tree, clutter only enlarges the world."""
    objects = [{"type": "CounterTop"}, {"type": "Fridge"}]
    objects += [{"type": "Drawer"} for _ in range(drawers)]
    objects.append({"type": "Apple", "at": "Drawer|1"})
    objects += [{"type": "Spoon", "at": "CounterTop|1"} for _ in range(clutter)]
    return scene_from_dict({"task": "bench", "location": "kitchen", "objects": objects},
                           source="<bench>")


def measure(drawers: int, clutter: int) -> dict[str, float]:
    scene = drawers_scene(drawers, clutter)
    world = make_world(scene, None)
    domain = load_domain("household")
    engine = PromptOnlyEngine()
    agent = BCRAgent(domain, [parse_literal("inside(Apple|1, Fridge|1)")], engine,
                     max_actions=10_000)
    per_decision: list[tuple[int, float]] = []
    last = None
    while True:
        before = agent.stats.decisions
        counts_before = len(agent.stats.candidates_per_decision)
        metadata = world.metadata  # the world's cost, not the decision's
        t0 = time.perf_counter()
        proposal = agent.next_action(metadata, last)
        elapsed = time.perf_counter() - t0
        made = agent.stats.decisions - before
        if made:
            for n in agent.stats.candidates_per_decision[counts_before:]:
                per_decision.append((n, elapsed / made))
        if proposal is None:
            break
        _, call = proposal
        metadata = world.step(call.action, **call.step_kwargs())
        ok = bool(metadata.get("lastActionSuccess"))
        last = ActionOutcome(call, ok, "" if ok else str(metadata.get("errorMessage") or ""))
    wide = [t for n, t in per_decision if n >= 0.9 * max(n for n, _ in per_decision)]
    return {
        "objects": len(world.metadata["objects"]),
        "max_candidates": max(n for n, _ in per_decision),
        "decisions": len(per_decision),
        "median_ms": statistics.median(t for _, t in per_decision) * 1000,
        "median_ms_widest": statistics.median(wide) * 1000,
        "success": agent.status == "success",
        "prompt_chars": engine.prompt_chars,
    }


print = functools.partial(print, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    args = parser.parse_args()

    print(f"== success in {args.trials} seeded trials, LLM engine on the offline model (not a "
          "language model), both modes, beside the BCR paper's Table 1 (GPT-3.5, 50 trials)")
    print(f"{'task':>16} {'paper mode':>11} {'failures (paper mode)':>28} {'guarded':>9} "
          f"{'loops broken':>13} {'paper':>6}")
    for task in TASKS:
        row = {}
        for mode in ("paper", "guarded"):
            client = make_client("offline", cache=None)
            row[mode] = summarize([run_trial("bcr_kitchen", task, "llm", client, seed=s, mode=mode)
                                   for s in range(args.trials)])
        fails = ", ".join(f"{k} {v}" for k, v in sorted(row["paper"]["failures"].items())) or "-"
        print(f"{task:>16} {row['paper']['successes']:>7}/{args.trials:<3} {fails:>28} "
              f"{row['guarded']['successes']:>5}/{args.trials:<3} {row['guarded']['loops_broken']:>13} "
              f"{PAPER_TABLE_1[task]:>3}/50")

    print("\n== decision overhead without the LLM (tree update + blocking + prompt build)")
    row = measure(drawers=98, clutter=0)
    print(f"100 candidates: {row['max_candidates']} max, median {row['median_ms_widest']:.3f} ms "
          f"per decision at >= 90% of max width (target < 2 ms), {row['decisions']} decisions, "
          f"success {row['success']}")

    print("\n== growth with the scene size")
    print(f"{'objects':>8} {'kind':>10} {'max cand.':>10} {'median ms':>10} {'widest ms':>10}")
    for total in (10, 100, 1000):
        clutter_row = measure(drawers=3, clutter=max(0, total - 6))
        print(f"{clutter_row['objects']:>8} {'clutter':>10} {clutter_row['max_candidates']:>10} "
              f"{clutter_row['median_ms']:>10.3f} {clutter_row['median_ms_widest']:>10.3f}")
        drawer_row = measure(drawers=max(1, total - 3), clutter=0)
        print(f"{drawer_row['objects']:>8} {'drawers':>10} {drawer_row['max_candidates']:>10} "
              f"{drawer_row['median_ms']:>10.3f} {drawer_row['median_ms_widest']:>10.3f}")

    print(f"\n== candidates per decision (Table 3 measure), {args.trials} trials per task")
    client = make_client("offline", cache=None)
    print(f"{'task':>16} {'engine':>10} {'success':>8} {'actions':>8} {'cand/dec':>9} "
          f"{'runtime s':>10}")
    for task in TASKS:
        for engine in ("heuristic", "llm"):
            results = [run_trial("bcr_kitchen", task, engine, client if engine == "llm" else None,
                                 seed=s) for s in range(args.trials)]
            s = summarize(results)
            print(f"{task:>16} {engine:>10} {s['successes']:>4}/{s['trials']:<3} "
                  f"{s['mean_actions']:>8.1f} {s['mean_candidates_per_decision']:>9.2f} "
                  f"{s['mean_runtime_s']:>10.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
