"""`task-learning faults`: inject every category of fault (docs/safety.md) and print a table of
tried / handled / not handled, with the goals executed without confirmation and the confirmed
goals lost (both must be 0).

    task-learning faults                      # everything (several minutes)
    task-learning faults --fast               # a quick subset
    task-learning faults --category llm cli   # some categories

The `ros` category starts the ROS graph: run it in an isolated network namespace when other
graphs share the machine (`scripts/isolated.sh task-learning faults`). Exit status: 0 when every
fault tried was handled and both counts are 0, else 1.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

from task_learning.apps.cli.options import SEED
from task_learning.apps.faults import (
    CATEGORIES,
    ProbeContext,
    ProbeResult,
    format_details,
    format_table,
    run_probes,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("faults", help="inject faults of every kind and report how each was handled",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--category", nargs="+", choices=CATEGORIES, default=list(CATEGORIES),
                   help="categories to run (default: all)")
    p.add_argument("--fast", action="store_true", help="a quick subset, with shorter waits")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the random kill moments and corrupt bytes")
    p.add_argument("--workdir", default=None, help="scratch folder (default: a new temporary folder)")
    p.add_argument("--json", action="store_true", help="print every result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="task_learning_faults_"))
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = ProbeContext(workdir=workdir.resolve(), seed=args.seed, fast=args.fast)
    core_log = logging.getLogger("task_learning")
    level = core_log.level
    if not args.verbose:  # the probes provoke failures on purpose: their log lines are noise here
        core_log.setLevel(logging.CRITICAL)
    try:
        return _run(args, ctx, workdir)
    finally:
        core_log.setLevel(level)


def _run(args: argparse.Namespace, ctx: ProbeContext, workdir: Path) -> int:
    def progress(result: ProbeResult) -> None:
        if not args.json:
            mark = "skip" if result.skipped else ("ok  " if result.handled else "FAIL")
            print(f"{mark} {result.category:<11} {result.name}", file=sys.stderr, flush=True)

    results = run_probes(ctx, args.category, on_result=progress)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(format_details(results))
        print()
        print(format_table(results))
        print(f"\n(scratch files in {workdir})")
    tried = [r for r in results if not r.skipped]
    clean = all(r.handled for r in tried) and not any(r.unconfirmed_executed or r.confirmed_lost for r in tried)
    return 0 if clean else 1
