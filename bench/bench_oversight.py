"""Oversight timings: the in-process dialogue, the pending queue, and a Confirm round trip over ROS.

    .venv/bin/python bench/bench_oversight.py [--ros]

Prints figures; asserts nothing. --ros also starts an oversight_node (ROS_DOMAIN_ID 17 unless
set) and measures Confirm -> AnswerConfirmation -> reply across processes.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from task_learning.oversight.flow import OversightSubject, run_oversight  # noqa: E402
from task_learning.oversight.pending import QueueOperator  # noqa: E402
from task_learning.oversight.simulated import SimulatedOperator  # noqa: E402
from task_learning.types import ConfirmationRequest, GoalCandidate, GoalLiteral, Truth  # noqa: E402

OPTIONS = [("dish rack", False), ("drawer", True), ("dishwasher", True), ("dishwasher", False),
           ("cupboard", True), ("cupboard", False)]


def mug_options() -> list[GoalCandidate]:
    out = []
    for number, (place, closed) in enumerate(OPTIONS, start=1):
        dest = "".join(w.capitalize() for w in place.split()) + "|1"
        literals = [GoalLiteral("inside", ("Mug|1", dest))]
        text = f"the goal is that the mug is in the {place}"
        if closed:
            literals.append(GoalLiteral("open", (dest,), Truth.FALSE))
            text += f" and the {place} is closed"
        out.append(GoalCandidate(text, 1.0 - number / 100, candidate_id=number, viable=True,
                                 literals=literals))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_flow(runs: int = 2000) -> None:
    user = SimulatedOperator({"Mug|1": ["Cupboard|1"]}, closable={"Cupboard|1", "Drawer|1", "Dishwasher|1"})
    options = mug_options()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        outcome = run_oversight(ranked=options, reselect=lambda r: r[0], operator=user, analyze=lambda s: None,
                                subject=OversightSubject("mug in the dish rack", object_id="Mug|1"))
        times.append(time.perf_counter() - start)
        assert outcome.confirmed
    print(f"flow (5 proposals, simulated user, no KB): median {statistics.median(times) * 1e6:.0f} us, "
          f"p95 {percentile(times, 0.95) * 1e6:.0f} us over {runs} runs "
          f"(proposed {outcome.counts.proposed}, yes/no {outcome.counts.yes_no})")


def bench_queue(runs: int = 500) -> None:
    queue = QueueOperator(timeout_s=5)
    latencies = []
    for i in range(runs):
        request = ConfirmationRequest(f"q{i}", "question?")
        box = {}
        thread = threading.Thread(target=lambda box=box, request=request: box.setdefault("a", queue.ask(request)))
        thread.start()
        while not queue.pending():
            time.sleep(0)
        start = time.perf_counter()
        queue.submit(request.request_id, "yes")
        thread.join()
        latencies.append(time.perf_counter() - start)
    print(f"queue submit -> waiting ask returns: median {statistics.median(latencies) * 1e6:.0f} us, "
          f"p95 {percentile(latencies, 0.95) * 1e6:.0f} us over {runs}")


def bench_ros(runs: int = 50) -> None:
    os.environ.setdefault("ROS_DOMAIN_ID", "17")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_HOME", str(REPO / ".ros"))
    import tempfile

    from task_learning.kb import KnowledgeBase
    from task_learning.oversight.pairing import OperatorCredentials, OperatorRegistry

    db = Path(tempfile.mkdtemp()) / "bench.sqlite"
    with KnowledgeBase(db) as kb:  # the answering operator is paired, as every operator must be
        creds = OperatorCredentials.from_token(OperatorRegistry(kb).pair_locally("bench"))
    node = subprocess.Popen([sys.executable, "-m", "task_learning_nodes.nodes.oversight", "--ros-args",
                             "-p", "timeout_s:=10.0", "-p", f"db_path:={db}", "-p", "remember_answers:=false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from task_learning_nodes.clients.oversight_client import OversightClient

        asker = OversightClient(name="bench_asker", asker="goal_elicitation", service_wait_s=15)
        answerer = OversightClient(name="bench_answerer", service_wait_s=15, credentials=creds)
        round_trips = []
        for i in range(runs):
            request = ConfirmationRequest(f"bench{i}", "For a mug in the dish rack is the goal ...?",
                                          object_description=f"mug (bench{i})")
            box = {}
            start = time.perf_counter()
            thread = threading.Thread(target=lambda box=box, request=request: box.setdefault("a", asker.ask(request)))
            thread.start()
            while not (mine := [r for r in answerer.pending(fresh=True)
                                if r.object_description == request.object_description]):
                time.sleep(0.001)
            answered = time.perf_counter()
            answerer.submit(mine[0].request_id, "yes")
            thread.join()
            done = time.perf_counter()
            round_trips.append((answered - start, done - answered))
        seen = [a for a, _ in round_trips[1:]]
        back = [b for _, b in round_trips[1:]]
        print(f"ROS: question visible to a panel after {statistics.median(seen) * 1e3:.1f} ms (median), "
              f"answer -> asker has it {statistics.median(back) * 1e3:.1f} ms (median, p95 "
              f"{percentile(back, 0.95) * 1e3:.1f}) over {len(back)}")
        asker.close()
        answerer.close()
    finally:
        node.terminate()
        node.wait(10)


if __name__ == "__main__":
    bench_flow()
    bench_queue()
    if "--ros" in sys.argv:
        bench_ros()
