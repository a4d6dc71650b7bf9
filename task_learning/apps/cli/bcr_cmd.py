"""`task-learning bcr`: run BCR action-selection trials (the BCR paper §V) on a scene's task.

    task-learning bcr --scene bcr_kitchen --task make_coffee --engine llm --llm offline \
        --trials 50 --seed 0 --mode paper --json

`--mode paper` runs the BCR paper as published (all resolutions, re-send only, no loop breaking, no
heuristic fallback); `--mode guarded` (the default, what the robot uses) is this project's
extension: loops are broken and the heuristic answers when the LLM cannot.

JSON: {"trials": [{"success", "actions", "failure" (null on success, else loop | max_actions |
no_candidates | llm_error | invalid_answer), "failure_detail", "mode", "decisions",
"candidates_per_decision", "runtime_s", ...}], "summary": {...}}. `--dot FILE` writes the last trial's final tree (Graphviz DOT); a FILE
ending in .png is drawn (graphviz `dot` if installed, else matplotlib) next to FILE.dot.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from task_learning.apps.cli.options import (
    MAX_ACTIONS,
    MAX_TRIALS,
    SEED,
    add_llm_arguments,
    bounded_int,
    grounded_or_free,
    llm_options,
)
from task_learning.bcr.agent import MODES
from task_learning.bcr.engines import ENGINES
from task_learning.bcr.runner import run_trial, summarize
from task_learning.bcr.tasks import load_tasks
from task_learning.bcr.tree import render_png
from task_learning.errors import TaskLearningError
from task_learning.inputs.files import AtomicOutput, write_text_atomic
from task_learning.llm.answer_bounds import ANSWER_PROTOCOLS, resolve


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bcr",
        help="run BCR action-selection trials (make_coffee, apple_in_fridge, wash_mug, make_toast)",
        description="Blocking conditions and resolutions (the BCR paper): select one action at a time "
        "from a candidate tree until the task's goal literals hold or 100 actions are spent.",
    )
    parser.add_argument("--scene", default="bcr_kitchen", help="scene name or path")
    parser.add_argument("--task", required=True, help="task name (config/domains/bcr_tasks.yaml)")
    parser.add_argument("--engine", choices=ENGINES, default="llm", help="selection engine")
    add_llm_arguments(parser)  # for --engine llm
    parser.add_argument("--trials", type=bounded_int(1, MAX_TRIALS), default=1,
                        help=f"number of seeded trials (1-{MAX_TRIALS})")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the first trial")
    parser.add_argument("--max-actions", type=bounded_int(1, MAX_ACTIONS), default=100,
                        help=f"action limit per trial (1-{MAX_ACTIONS})")
    parser.add_argument("--mode", choices=MODES, default="guarded",
                        help="paper: the BCR paper as published; guarded (default): loop breaking and "
                             "heuristic fallback, this project's extension")
    parser.add_argument("--answers", choices=ANSWER_PROTOCOLS, default="auto",
                        help="bounded: a base model's answers (a cue, a stop at the line's end, 48 tokens: "
                             "config/prompts/bounded_answers.yaml); paper: the paper's $$ format, 300 tokens, "
                             "no stop; auto (default): bounded with --llm local, paper otherwise")
    parser.add_argument("--dot", metavar="FILE", help="write the last trial's tree (DOT, or PNG)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.trials < 1:
        raise TaskLearningError(f"--trials must be >= 1, got {args.trials}")
    if args.max_actions < 1:
        raise TaskLearningError(f"--max-actions must be >= 1, got {args.max_actions}")
    load_tasks().task(args.task)  # unknown task: clear error before any work
    client = None
    answers = resolve(args.answers, args.llm if args.engine == "llm" else None)
    if args.engine == "llm":
        from task_learning.llm.client import make_client

        client = make_client(args.llm, **llm_options(args))
    decoding = grounded_or_free(args, client) if client is not None else "free"
    results = []
    try:
        for i in range(args.trials):
            results.append(run_trial(args.scene, args.task, args.engine, client, args.seed + i,
                                     max_actions=args.max_actions, mode=args.mode, answers=answers,
                                     decoding=decoding))
            if client is not None:
                client.raise_if_unavailable()
    finally:
        if client is not None:
            client.close()  # a local server started for this command stops here
    summary = summarize(results)
    summary.update(task=args.task, engine=args.engine, scene=args.scene, mode=args.mode,
                   llm=args.llm if args.engine == "llm" else "", answers=answers if args.engine == "llm" else "",
                   decoding=decoding)
    if client is not None:
        summary["llm_usage"] = client.usage.to_dict()
    if args.dot:
        _write_tree(results[-1].dot, args.dot)
    try:
        if args.json:
            print(json.dumps({"trials": [r.to_dict() for r in results], "summary": summary},
                             indent=2))
        else:
            for r in results:
                mark = "ok  " if r.success else "FAIL"
                print(f"{mark} seed {r.seed}: {r.actions} actions, {r.decisions} decisions, "
                      f"{r.candidates_per_decision:.2f} candidates/decision, {r.runtime_s:.3f} s"
                      + (f" ({r.failure}: {r.failure_detail})" if r.failure else ""))
            print(f"{args.task} [{args.engine}, {args.mode} mode"
                  + (f", {answers} answers" if args.engine == "llm" else "") + "]: "
                  f"{summary['successes']}/{summary['trials']} "
                  f"succeeded, mean {summary['mean_actions']:.1f} actions, "
                  f"{summary['mean_candidates_per_decision']:.2f} candidates/decision")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _write_tree(dot_text: str, target: str) -> None:
    path = Path(target)
    if path.suffix.lower() == ".png":
        dot_path = path.with_suffix(".dot")
        write_text_atomic(dot_path, dot_text)
        output = AtomicOutput(path)
        drawn = render_png(dot_text, str(output.path))
        output.commit() if drawn else output.discard()
        if not drawn:
            print(f"note: could not draw {path} (no graphviz, no matplotlib); wrote {dot_path}",
                  file=sys.stderr)
        return
    write_text_atomic(path, dot_text)
