"""`task-learning sweep FILE`: every trial of a YAML grid (scenes x conditions x seeds x models,
methods and trial counts for STARS, BCR and LLM-State) as a Ray task, on an embedded local Ray
(default) or the cluster at --address; results stream into <out>/results.sqlite as trials end, a
rerun skips finished trials, and the summary prints each table's means with 95 % confidence
intervals over seeds (Student's t). See docs/sweeps.md.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from task_learning.apps.cli.options import bounded_int


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sweep", help="run a grid of experiments as Ray tasks (docs/sweeps.md)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="the sweep file (YAML; example: config/sweeps/example.yaml)")
    p.add_argument("--address", default=None,
                   help="an existing Ray cluster (e.g. ray://head:10001 or head:6379); default: a local Ray "
                        "started for this command and stopped with it")
    p.add_argument("--workers", type=bounded_int(1, 256), default=None,
                   help="local Ray workers (default: the file's `workers`, else one per core)")
    p.add_argument("--retries", type=bounded_int(0, 10), default=None,
                   help="runs again a failed or killed trial up to this often (default: the file's `retries`, 1)")
    p.add_argument("--out", default=None,
                   help="the run's folder: results.sqlite, knowledge bases, Ray's logs, plots (default: the "
                        "file's `out`, else artifacts/sweeps/<name>)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (progress still on stderr)")
    p.set_defaults(func=run)


class Progress:
    """done/running/failed on stderr: a bar redrawn in place on a terminal, else one line per
    ended trial (and every failure with its reason, on a terminal too)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._drawn = False

    def __call__(self, event: Any) -> None:
        c = event.counts
        status = (f"{c.skipped + c.done}/{c.total} done, {c.running} running, {c.failed} failed"
                  + (f", {c.retried} retried" if c.retried else ""))
        if event.what in ("failed", "killed"):
            then = "; running it again" if event.retry else "; retries spent"
            self._line(f"{event.what}: {event.trial.label}: {event.error}{then}")
        if self.tty:
            width = 30
            filled = int(width * (c.skipped + c.done) / max(c.total, 1))
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {status}  {event.trial.label[:50]:<50}")
            self.stream.flush()
            self._drawn = True
        elif event.what == "done":
            self._line(f"[{status}] {event.trial.label}: {event.seconds:.1f} s")

    def _line(self, text: str) -> None:
        if self._drawn:
            self.stream.write("\n")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def run(args: argparse.Namespace) -> int:
    from task_learning.apps.sweeps.grid import expand
    from task_learning.apps.sweeps.ray_runner import RaySession, run_sweep
    from task_learning.apps.sweeps.results import ResultsStore
    from task_learning.apps.sweeps.spec import load_sweep
    from task_learning.apps.sweeps.summary import CI_METHOD, build_tables, format_table, plot_tables
    from task_learning.experiments.table import OFFLINE_NOTE
    from task_learning.lifecycle.signals import StopSignals

    sweep = load_sweep(args.file)
    trials = expand(sweep)
    out = Path(args.out or sweep.out or Path("artifacts", "sweeps", sweep.name))
    retries = sweep.retries if args.retries is None else args.retries
    progress = Progress(sys.stderr)
    signals = StopSignals()
    with ResultsStore(out / "results.sqlite") as store:
        with RaySession(address=args.address, workers=args.workers or sweep.workers, log_dir=out / "ray") as session:
            print(f"sweep {sweep.name}: {len(trials)} trials on {session.address or 'a local Ray'} "
                  f"({session.workers} worker{'s' * (session.workers != 1)}); results in {out / 'results.sqlite'}",
                  file=sys.stderr)
            signals.install()  # after ray.init, which sets handlers of its own
            try:
                # Ray prints what its raylet reports (a worker that died) on stdout: to stderr
                # with the progress, so that stdout holds the summary (--json) alone.
                with contextlib.redirect_stdout(sys.stderr):
                    outcome = run_sweep(trials, store, kb_dir=(out / "kb").resolve(), session=session,
                                        retries=retries, report=progress, should_stop=lambda: signals.received)
            finally:
                signals.restore()
                progress.close()
        stored = list(store.trials({t.key for t in trials}))
        attempts = {t.key: store.attempt_log(t.key) for t in stored if t.attempts > 1 or t.status != "done"}
    counts = outcome.counts
    if outcome.interrupted:
        print(f"interrupted: {counts.skipped + counts.done} of {counts.total} trials done and kept in "
              f"{out / 'results.sqlite'}; run the same command again to finish the rest", file=sys.stderr)
        return 130
    tables = build_tables(stored)
    plots = plot_tables(tables, out / "plots") if tables else []
    offline = any(t.params["llm"]["provider"] == "offline" for t in trials)
    if args.json:
        print(json.dumps({
            "sweep": sweep.name, "results": str(out / "results.sqlite"), "address": outcome.address,
            "workers": outcome.workers, "seconds": round(outcome.seconds, 2), "trials": counts.to_dict(),
            "failures": [{"key": t.key, "trial": t.label, "error": e, "attempts": attempts.get(t.key, [])}
                         for t, e in outcome.failures],
            "retried": [{"key": k, "attempts": log} for k, log in attempts.items()],
            "ci": CI_METHOD, "tables": [t.to_dict() for t in tables], "plots": [str(p) for p in plots],
            "note": OFFLINE_NOTE if offline else "",
        }, indent=2))
    else:
        print(f"sweep {sweep.name}: {counts.total} trials: {counts.skipped} done before, {counts.done} run now "
              f"on {outcome.address} Ray ({outcome.workers} worker{'s' * (outcome.workers != 1)}) in {outcome.seconds:.1f} s, "
              f"{counts.failed} failed, {counts.retried} retried")
        for table in tables:
            print()
            print(format_table(table))
        if tables:
            print(f"\n± : half-width of the 95 % confidence interval of the mean ({CI_METHOD})")
        for trial, error in outcome.failures:
            print(f"FAILED {trial.label}: {error}")
        for path in plots:
            print(f"plot: {path}")
        if offline:
            print("\n" + textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
    return 1 if outcome.failures else 0
