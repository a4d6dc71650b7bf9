"""`task-learning experiment --paper anticipation`: the traces' days for the proposed agent and
Base8 (the task-anticipation paper prints no table of its own, and the output says so)."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from task_learning.experiments.anticipation import (
    NO_TABLE,
    OFFLINE_NOTE,
    STANDIN_LABEL,
    format_table,
    run_experiment,
    standin_by_row,
)


def _days(args: argparse.Namespace) -> list[str] | None:
    """--days: the named days only; a day the household file lacks is refused (one line, exit 2)."""
    if not getattr(args, "days", None):
        return None
    from task_learning.anticipation.household import load_household
    from task_learning.errors import TaskLearningError

    days = [d.strip() for d in args.days.split(",") if d.strip()]
    known = [day["name"] for day in load_household().days]
    unknown = [d for d in days if d not in known]
    if unknown:
        raise TaskLearningError(f"--days: unknown day(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return days


def run(args: argparse.Namespace) -> int:
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    from task_learning.apps.cli.options import llm_options
    from task_learning.llm.local_provider import shared_server

    with shared_server(args.llm, llm_options(args)) as options:  # --llm local: one server for every day
        rows = run_experiment(llm=args.llm, seed=args.seed or 0, report=report, wording=args.prompts,
                              llm_options=options, days=_days(args))
    offline = args.llm == "offline"
    # beside a language model, the offline stand-in on the same days and conditions (seconds)
    standin = None if offline else run_experiment(llm="offline", seed=args.seed or 0, wording=args.prompts,
                                                   days=_days(args))
    if args.json:
        if standin is not None:
            twins = standin_by_row(standin)
            rows = [r | {"offline_standin": twins.get((r["day"], r["condition"]))} for r in rows]
        print(json.dumps({"paper": "anticipation", "llm": args.llm, "prompts": args.prompts,
                          "note": OFFLINE_NOTE if offline else "",
                          "standin_note": "" if offline else STANDIN_NOTE,
                          "paper_table": None, "paper_note": NO_TABLE, "rows": rows}, indent=2))
    else:
        print(format_table(rows, llm=args.llm, standin=standin) + f"\nprompts: {args.prompts}")
        print("\n" + textwrap.fill(NO_TABLE, width=100))
        if offline:
            print(textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
        else:
            print(textwrap.fill(STANDIN_NOTE, width=100))
    return 0


STANDIN_NOTE = (f"Rows marked {STANDIN_LABEL} are NOT a language model; they ran in the same command on the same "
                "days and conditions. " + OFFLINE_NOTE + " The traces' LLM was GPT-4-class; a 270M base model is far "
                "weaker.")
