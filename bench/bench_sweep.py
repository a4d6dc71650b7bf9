"""Bench: sweep throughput on an embedded local Ray with 1 and 2 workers, against the same trials
run serially in this process, and Ray's own cost (issue 29, point 4).

The trials are a STARS grid on store_groceries with the offline model (NOT a language model: a
deterministic stand-in; the bench measures the sweep machinery, not the figures), default
conditions STARS and STARS+O x seeds 0..3 = 8 trials of a few seconds each. Printed:
  - serial: the trials one after another in this process (`sweeps.trial.run_trial`, what a Ray
    worker runs), after one warm-up trial so imports and config loading are not counted;
  - ray N workers: ray.init (start-up), the trials through `sweeps.ray_runner.run_sweep` (as
    `task-learning sweep` runs them), ray.shutdown; trials per minute; the Ray processes' memory
    (resident set, summed) while the trials ran;
  - the per-trial overhead of Ray: (1-worker run - serial run) / trials, and a no-op task's round
    trip (submit, run, get) on a warm worker.

    .venv/bin/python bench/bench_sweep.py [--seeds 4] [--conditions STARS,STARS+O] [--workers 1 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.apps.sweeps.grid import expand
from task_learning.apps.sweeps.ray_runner import RaySession, run_sweep
from task_learning.apps.sweeps.reaper import descendants
from task_learning.apps.sweeps.results import ResultsStore
from task_learning.apps.sweeps.spec import parse_sweep
from task_learning.apps.sweeps.trial import run_trial


def noop() -> None:
    """A task that does nothing: its round trip is Ray's own cost."""


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


class MemoryPeak:
    """The largest summed RSS of this process's descendants, sampled every half second."""

    def __init__(self) -> None:
        self.peak = 0.0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            pids = [pid for pid, _ in descendants(os.getpid())]
            mb = rss_mb(pids)
            if mb > self.peak:
                self.peak, self.processes = mb, len(pids)

    def __enter__(self) -> "MemoryPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--conditions", default="STARS,STARS+O")
    parser.add_argument("--scene", default="store_groceries")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    sweep = parse_sweep({"name": "bench", "experiments": [{
        "kind": "stars", "scenes": [args.scene], "conditions": args.conditions.split(","),
        "seeds": args.seeds}]}, "bench_sweep.py")
    trials = expand(sweep)
    work = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    print(f"{len(trials)} trials ({args.scene}, {args.conditions}, seeds 0..{args.seeds - 1}; offline model, "
          f"not a language model); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")

    warm = run_trial(trials[0].kind, trials[0].params, str(work / "warm"), trials[0].key)
    assert warm["status"] == "done", warm
    started = time.monotonic()
    per_trial = []
    for trial in trials:
        result = run_trial(trial.kind, trial.params, str(work / "serial"), trial.key)
        assert result["status"] == "done", result
        per_trial.append(result["seconds"])
    serial = time.monotonic() - started
    print(f"\n{'run':<16}{'start s':>9}{'trials s':>10}{'stop s':>8}{'trials/min':>12}{'Ray MB':>9}{'procs':>7}")
    print(f"{'serial':<16}{'-':>9}{serial:>10.1f}{'-':>8}{60 * len(trials) / serial:>12.1f}{'-':>9}{'-':>7}"
          f"   (median trial {statistics.median(per_trial):.1f} s)")

    runs = {}
    for workers in args.workers:
        out = work / f"ray{workers}"
        with MemoryPeak() as memory, ResultsStore(out / "results.sqlite") as store:
            t0 = time.monotonic()
            session = RaySession(address=None, workers=workers, log_dir=out / "ray")
            session.__enter__()
            t1 = time.monotonic()
            try:
                outcome = run_sweep(trials, store, kb_dir=out / "kb", session=session, retries=0)
                t2 = time.monotonic()
                noop_s = None
                if workers == args.workers[0]:
                    ray = session.ray
                    remote = ray.remote(num_cpus=1)(noop)
                    ray.get(remote.remote())  # a warm worker
                    rounds = []
                    for _ in range(50):
                        a = time.perf_counter()
                        ray.get(remote.remote())
                        rounds.append(time.perf_counter() - a)
                    noop_s = statistics.median(rounds)
            finally:
                t3 = time.monotonic()
                session.__exit__()
                t4 = time.monotonic()
        assert outcome.counts.done == len(trials) and not outcome.failures, outcome
        runs[workers] = (t2 - t1, noop_s)
        print(f"{f'ray {workers} worker' + ('s' if workers > 1 else ''):<16}{t1 - t0:>9.1f}{t2 - t1:>10.1f}"
              f"{t4 - t3:>8.1f}{60 * len(trials) / (t2 - t1):>12.1f}{memory.peak:>9.0f}{memory.processes:>7}")
    if 1 in runs:
        one, noop_s = runs[1]
        print(f"\nRay's overhead per trial (1 worker vs serial, start-up excluded): "
              f"{(one - serial) / len(trials):+.2f} s; a no-op task's round trip on a warm worker: "
              f"{1000 * (noop_s or 0):.1f} ms (median of 50)")
    if 1 in runs and 2 in runs:
        print(f"2 workers vs 1: {runs[1][0] / runs[2][0]:.2f}x the throughput")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
