"""The paired operator's latency during a connection flood of the web panel, and the run's memory.

    .venv/bin/python bench/bench_web_flood.py [--rounds 5] [--connections 800]

Starts `task-learning run --scene store_groceries --condition STARS+O --operator web` on a free
loopback port (task_learning/apps/faults/web_probes.py), pairs an operator with the run's code,
then, per round: the operator's page follows its event stream until a question is shown, another
thread opens `--connections` connections that never send a request, and halfway through the
operator reads its session and answers the question ("no": nothing is confirmed), each on a new
connection. Prints per round the connections the server closed and the two latencies, then
their median and maximum and the run's peak RSS (VmHWM). Only 127.0.0.1 is reached; every
flood is bounded by `--connections`. Asserts nothing.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from task_learning.apps.faults import web_probes  # noqa: E402
from task_learning.apps.faults.base import ProbeContext  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, choices=range(1, 51), metavar="1-50")
    parser.add_argument("--connections", type=int, default=800, choices=range(10, 5001), metavar="10-5000")
    args = parser.parse_args()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    count = min(args.connections, max(10, soft - 200))
    with tempfile.TemporaryDirectory() as tmp:
        run = web_probes.start_run(ProbeContext(workdir=Path(tmp)))
        try:
            operator = web_probes.Page(run.port)
            if operator.pair(run.code) != 200:
                print("the operator could not pair")
                return 1
            sessions, answers = [], []
            for i in range(args.rounds):
                stream = operator.follow(web_probes.QUESTION_S)
                try:
                    got = web_probes.flood_and_answer(run.port, operator, count, stream.question)
                finally:
                    stream.close()
                sessions.append(got.session[1] * 1000)
                answers.append(got.answer[1] * 1000)
                print(f"round {i + 1}: {got.opened} connections, {got.closed} closed by the server; session "
                      f"HTTP {got.session[0]} in {sessions[-1]:.0f} ms, answer HTTP {got.answer[0]} in "
                      f"{answers[-1]:.0f} ms", flush=True)
            print(f"operator's session mid-flood: median {statistics.median(sessions):.0f} ms, max "
                  f"{max(sessions):.0f} ms; answer: median {statistics.median(answers):.0f} ms, max "
                  f"{max(answers):.0f} ms; the run's peak RSS {run.peak_mb():.0f} MB")
        finally:
            run.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
