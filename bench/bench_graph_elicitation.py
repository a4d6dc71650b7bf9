"""Bench: PerformTask through the ROS graph vs the same task in process (issue 29 point 4).

tidy_kitchen (35 objects) learned end to end with STARS+O and a simulated operator, the offline
provider (NOT a language model: a deterministic stand-in, see docs/configuration.md) behind a
fixed delay per round trip (default 200 ms: FixedLatencyProvider; the goal_elicitation node's
`llm_latency_s` parameter through the graph), in up to three ways:
  in-process  `run_in_process(..., elicitation="across-objects")`, as `task-learning run
              --elicitation across-objects`
  graph       `task-learning bringup` (perception, goal_elicitation, oversight, planner as OS
              processes) + `task-learning operator --simulated`, one PerformTask goal: the
              planner's default elicitation, across-objects (one LearnGoals batch)
  graph-per-object  the same with the planner's `elicitation: per-object` (one LearnGoal per
              object, a tree level as concurrent single requests), for comparison
Printed per way: LLM round trips, model calls (prompts), wall time (in process: the run; through
the graph: from sending the goal to its result, the graph already up), completion and yes/no
answers; then whether the learned goals are the same. Exit status 1 only if the goals differ.

Each graph gets its own ROS_DOMAIN_ID and ROS_HOME; on a shared host run it in a network namespace
of its own so no other graph is discovered:

    scripts/isolated.sh .venv/bin/python bench/bench_graph_elicitation.py [--latency 0.2] [--ways ...]
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from task_learning.kb import KnowledgeBase  # noqa: E402
from task_learning.llm.client import make_client  # noqa: E402
from task_learning.planning.session import RunSpec, run_in_process  # noqa: E402
from task_learning.world.scene import load_scene  # noqa: E402

CLI = str(Path(sys.executable).parent / "task-learning")
WAYS = ("in-process", "graph", "graph-per-object")


def goals(db: Path) -> dict[str, str]:
    with KnowledgeBase(db) as kb:
        return {g.context: g.text for g in kb.goals()}


def in_process(scene: str, condition: str, latency: float, db: Path) -> dict[str, Any]:
    client = make_client("offline", latency_s=latency)
    started = time.perf_counter()
    metrics, _ = run_in_process(RunSpec(scene=scene, condition=condition, operator="simulated",
                                        elicitation="across-objects", db=db), client=client)
    wall = time.perf_counter() - started
    usage = client.usage
    client.close()
    return {"round_trips": usage.requests, "calls": usage.calls, "wall": wall,
            "completion": metrics.completion, "yes_no": metrics.yes_no}


def through_graph(scene: str, condition: str, latency: float, db: Path, work: Path, elicitation: str) -> dict[str, Any]:
    from task_learning_nodes.plumbing.node_base import stop_process_groups

    home = work / f"ros_home_{elicitation}"
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ROS_DOMAIN_ID=os.environ.get("ROS_DOMAIN_ID") or str(random.randint(30, 90)),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_HOME=str(home), ROS_LOG_DIR=str(home / "log"),
               # UDP only: shared memory (/dev/shm) is not separated by a network namespace
               FASTDDS_BUILTIN_TRANSPORTS="UDPv4")
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_HOME",
                                           "FASTDDS_BUILTIN_TRANSPORTS")})
    logs = [open(work / f"{name}_{elicitation}.log", "w", encoding="utf-8") for name in ("bringup", "operator")]
    procs = [subprocess.Popen([CLI, "bringup", "--scene", scene, "--db", str(db), "--nodes", "perception",
                               "goal_elicitation", "oversight", "planner",
                               "--param", f"goal_elicitation.llm_latency_s:={latency}",
                               "--param", f"planner.elicitation:={elicitation}"],
                              env=env, stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True)]
    if condition.endswith("+O"):
        procs.append(subprocess.Popen([CLI, "operator", "--simulated", scene, "--wait", "120", "--db", str(db)],
                                      env=env, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True))
    try:
        return perform(load_scene(scene).task, scene, condition)
    finally:
        stop_process_groups(procs)
        for log in logs:
            log.close()


def perform(task: str, scene: str, condition: str, timeout_s: float = 1800.0) -> dict[str, Any]:
    """One PerformTask goal; its wall time from sending the goal to the result."""
    from task_learning_interfaces.action import PerformTask
    from task_learning_nodes.plumbing.node_base import ActionClient, spinning_node, wait_for_future

    with spinning_node("bench_graph_elicitation") as node:
        client = ActionClient(node, PerformTask, "perform_task")
        if not client.wait_for_server(timeout_sec=120.0):
            raise SystemExit("the planner did not come up (see the bringup log)")
        # The goal elicitation and oversight nodes come up beside the planner: wait for them too,
        # so the wall time is the task's, not the start-up's.
        deadline = time.monotonic() + 120.0
        wanted = {"goal_elicitation", "oversight", "perception"}
        while not wanted <= set(node.get_node_names()) and time.monotonic() < deadline:
            time.sleep(0.2)
        started = time.perf_counter()
        handle = client.send_goal_async(PerformTask.Goal(task=task, scene=scene, condition=condition))
        if wait_for_future(handle, 60.0) != "done" or not handle.result().accepted:
            raise SystemExit("the planner did not accept the goal")
        future = handle.result().get_result_async()
        if wait_for_future(future, timeout_s) != "done":
            raise SystemExit(f"no result within {timeout_s:.0f} s")
        wall = time.perf_counter() - started
        result = future.result().result
        if not result.message.startswith(("task completed", "partial")):
            raise SystemExit(f"perform task failed: {result.message}")
        return {"round_trips": result.usage.requests, "calls": result.usage.calls, "wall": wall,
                "completion": 100.0 * result.completion, "yes_no": result.counts.yes_no}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scene", default="tidy_kitchen")
    parser.add_argument("--condition", default="STARS+O")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per round trip (default 0.2)")
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--logs", default="", help="keep the graph's logs and knowledge bases in this folder")
    args = parser.parse_args()
    print(f"{args.scene}, {args.condition}, offline provider (not a language model), "
          f"{args.latency * 1000:.0f} ms per round trip, simulated operator")
    print(f"{'way':<18} {'round trips':>11} {'calls':>6} {'wall s':>8} {'completion':>10} {'yes/no':>6}")
    learned: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_graph_") as folder:
        work = Path(args.logs or folder)
        work.mkdir(parents=True, exist_ok=True)
        for way in args.ways:
            db = work / f"{way}.sqlite"
            if way == "in-process":
                row = in_process(args.scene, args.condition, args.latency, db)
            else:
                row = through_graph(args.scene, args.condition, args.latency, db, work,
                                    "per-object" if way == "graph-per-object" else "across-objects")
            learned[way] = goals(db)
            print(f"{way:<18} {row['round_trips']:>11} {row['calls']:>6} {row['wall']:>8.1f} "
                  f"{row['completion']:>9.1f}% {row['yes_no']:>6}", flush=True)
    first = args.ways[0]
    differ = [way for way in args.ways[1:] if learned[way] != learned[first]]
    for way in args.ways[1:]:
        print(f"learned goals ({way}) identical to ({first}): {'NO' if way in differ else 'yes'}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} cores (the machine is shared: wall times move with it)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
