"""`task-learning experiment --paper bcr`: the BCR paper's Table 1, success of `--trials` seeded
trials per task (default 50, the paper's) in paper mode, each task's row beside the paper's
(GPT-3.5). With a language model (`--llm local`, ...) each row is followed by the offline
stand-in's row for the same seeded worlds (run in the same command, labelled: not a language
model), then each task's trials, wall time, requests, tokens and the machine's load; `--answers`
(auto: bounded with `--llm local`) says how a base model's answers are bounded
(llm/answer_bounds.py). `--tasks` runs a subset."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from task_learning.experiments.bcr_table import (
    OFFLINE_NOTE,
    PAPER_TABLE_1,
    STANDIN_NOTE,
    check_tasks,
    format_table,
    format_trials,
    run_table,
)
from task_learning.experiments.table import describe_model


def run(args: argparse.Namespace) -> int:
    from task_learning.apps.cli.options import grounded_or_free, llm_options
    from task_learning.experiments.machine import LoadSampler
    from task_learning.llm.answer_bounds import resolve
    from task_learning.llm.client import make_client
    from task_learning.llm.local_provider import shared_server

    try:
        tasks = check_tasks([t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    offline = args.llm == "offline"
    answers = resolve(args.answers, args.llm)
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    with LoadSampler() as load, shared_server(args.llm, llm_options(args)) as options:
        with make_client(args.llm, **options) as client:
            decoding = grounded_or_free(args, client)
            rows = run_table(client, tasks, args.trials, answers=answers, sample_load=not offline, report=report,
                             decoding=decoding)
    standin = None
    if not offline:  # the stand-in on the same seeded worlds (seconds; not a language model)
        with make_client("offline") as offline_client:
            standin = run_table(offline_client, tasks, args.trials)
    model = "" if offline else describe_model(args.llm, options)
    if args.json:
        print(json.dumps({
            "paper": "bcr", "llm": args.llm, "model": model, "mode": "paper", "answers": answers, "decoding": decoding,
            "trials_per_task": args.trials, "note": OFFLINE_NOTE if offline else STANDIN_NOTE,
            "wall_s": round(load.wall_s, 1), "machine": load.summary(),
            "rows": [{**row.to_dict(),
                      **({"offline_standin": standin[i].to_dict()} if standin is not None else {}),
                      "paper": {"successes": PAPER_TABLE_1[row.task], "trials": 50},
                      **({"model_answers": [a for r in row.results for a in r.model_answers][:60]} if not offline else {})}
                     for i, row in enumerate(rows)],
        }, indent=2))
        return 0
    print(f"BCR paper's Table 1, paper mode: successes of {args.trials} seeded trials per task; LLM: {args.llm}"
          + ("" if offline else f"; answers: {answers}; decoding: {decoding}"))
    print(format_table(rows, standin))
    if not offline:
        print()
        print(format_trials(rows))
        print("\n" + load.describe_command(model))
    print(textwrap.fill("Note: " + (OFFLINE_NOTE if offline else STANDIN_NOTE), width=100))
    return 0
