"""LearnGoals from another client: a hostile or careless client's batch sent while a task
runs must be refused and must not spoil the task.

Two probes: the batch rules themselves (`planning.batches`, no graph: fast), and the same attack on
a graph (`task-learning bringup` with a simulated operator): a PerformTask runs, and while its
batch elicits another client sends goal elicitation a LearnGoals of its own. Handled: that goal is
refused, the task succeeds, and no object of it ends canceled. The graph probe runs this module's
`main` in a process of its own, so `task-learning faults` itself never imports rclpy; it prints
its result as one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from task_learning.apps.faults.base import Probe, ProbeContext, ProbeResult

if TYPE_CHECKING:
    from rclpy.node import Node
    from rclpy.task import Future

CATEGORY = "ros"
SCENE = "tidy_kitchen"
TASK = "tidy kitchen"
GRAPH_NAME = "learn_goals from another client during perform_task"
RULE_NAME = "learn_goals from another client while a batch is open (batch rules)"
DEADLINE_S = 900.0


def _rule(ctx: ProbeContext) -> ProbeResult:
    """The rule without a graph: a second sender's batch is refused; the open batch's objects are
    all taken from it, each with a goal."""
    from task_learning.llm.client import make_client
    from task_learning.llm.usage import copy_usage
    from task_learning.planning.batches import BatchBook, BatchRefused, start_batch
    from task_learning.planning.session import task_order
    from task_learning.stars.conditions import Condition
    from task_learning.stars.together import CrossObjectElicitor
    from task_learning.world.scene import load_scene

    scene = load_scene(SCENE)
    metadata = {"objects": [dict(o) for o in scene.objects]}
    order = task_order(scene, metadata)
    client = make_client("offline")
    book = BatchBook(600.0)
    book.accepted("a" * 32)
    book.claim("a" * 32)
    batch = start_batch("a" * 32, scene.task, Condition.STARS, order, CrossObjectElicitor(client, scene, "STARS"),
                        metadata, copy_usage(client.usage))
    book.install(batch)
    try:
        try:
            book.claim("b" * 32)
            return ProbeResult(CATEGORY, RULE_NAME, False, "the other client's batch took the slot")
        except BatchRefused as exc:
            refusal = str(exc)
        goals = [book.take(batch, task=scene.task, object_id=o, metadata=metadata, stopping=lambda: False)
                 for o in order]
    finally:
        book.close(batch)
    missing = [o for o, t in zip(order, goals) if t.outcome.chosen is None or not t.in_batch]
    detail = f"{refusal[:120]}; {len(order) - len(missing)}/{len(order)} objects taken from the open batch"
    return ProbeResult(CATEGORY, RULE_NAME, not missing, detail)


def _graph(ctx: ProbeContext) -> ProbeResult:
    run_main = "import sys; from task_learning.apps.faults.batch_probes import main; sys.exit(main(sys.argv[1:]))"
    command = [ctx.python, "-c", run_main, "--workdir", str(ctx.path("batch"))]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, check=False, env=dict(ctx.env),
                              timeout=DEADLINE_S, cwd=ctx.workdir, errors="replace")
    except subprocess.TimeoutExpired:
        return ProbeResult(CATEGORY, GRAPH_NAME, False, f"still running after {DEADLINE_S:g} s (hang)")
    if "No module named 'rclpy'" in proc.stderr or "No module named 'task_learning_interfaces'" in proc.stderr:
        return ProbeResult(CATEGORY, GRAPH_NAME, False, "rclpy or the interfaces are not installed", skipped=True)
    for line in reversed(proc.stdout.splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("name") == GRAPH_NAME:
            return ProbeResult(**data)
    tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
    return ProbeResult(CATEGORY, GRAPH_NAME, False, f"the probe process failed: {tail[0]}")


def probes() -> list[Probe]:
    return [Probe(CATEGORY, RULE_NAME, _rule), Probe(CATEGORY, GRAPH_NAME, _graph, fast=False)]


# ------------------------------------------------------------------ the graph probe's own process
def _attack(node: Node) -> ProbeResult:
    """PerformTask; while its batch elicits, another client's LearnGoals; both results judged."""
    from task_learning.planning.session import task_order
    from task_learning.world.factory import make_backend
    from task_learning.world.scene import load_scene
    from task_learning_interfaces.action import LearnGoals, PerformTask
    from task_learning_nodes.plumbing.node_base import ActionClient, wait_for_future

    def wait(future: Future, seconds: float, what: str) -> Any:
        if wait_for_future(future, seconds) != "done":
            raise TimeoutError(f"no {what} within {seconds:g} s")
        return future.result()

    task_action = ActionClient(node, PerformTask, "perform_task")
    batch_action = ActionClient(node, LearnGoals, "learn_goals")
    if not (task_action.wait_for_server(timeout_sec=180) and batch_action.wait_for_server(timeout_sec=60)):
        return ProbeResult(CATEGORY, GRAPH_NAME, False, "the graph did not come up")
    eliciting = threading.Event()

    def on_feedback(message: Any) -> None:
        if any(p.state == "eliciting" for p in message.feedback.objects):
            eliciting.set()

    handle = wait(task_action.send_goal_async(PerformTask.Goal(task=TASK, scene=SCENE, condition="STARS+O"),
                                              feedback_callback=on_feedback), 60, "perform_task acceptance")
    result_future = handle.get_result_async()
    if not eliciting.wait(180):
        return ProbeResult(CATEGORY, GRAPH_NAME, False, "the task's batch never started eliciting")
    scene = load_scene(SCENE)
    order = task_order(scene, make_backend("symbolic", scene, None).metadata)
    attack = wait(batch_action.send_goal_async(LearnGoals.Goal(task=TASK, object_ids=order[:2],
                                                               condition="STARS+O")), 60, "learn_goals acceptance")
    refused = wait(attack.get_result_async(), 60, "learn_goals result").result
    task = wait(result_future, 800, "perform_task result").result
    canceled = [o.object_id for o in task.objects if "cancel" in o.message]
    unconfirmed = sum(1 for o in task.objects if o.success and not o.confirmed_by)
    handled = not refused.success and refused.message.startswith("refused") and task.success and not canceled
    detail = (f"other client: {refused.message[:90]}; task: {task.completion * 100:.1f} % "
              f"({task.satisfied}/{task.total}), {len(canceled)} object(s) canceled")
    return ProbeResult(CATEGORY, GRAPH_NAME, handled, detail, unconfirmed_executed=unconfirmed)


def main(argv: list[str] | None = None) -> int:
    from rclpy.executors import MultiThreadedExecutor

    from task_learning_nodes.plumbing.node_base import spinning_node, stop_process_groups

    parser = argparse.ArgumentParser(description="the graph probe of " + __name__)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "task_learning.apps.cli"]
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    db = workdir / "batch.sqlite"
    started = time.monotonic()
    with open(workdir / "batch_bringup.log", "w", encoding="utf-8") as log:
        # 0.2 s per round trip: the task's batch is still eliciting when the other client's arrives.
        procs = [subprocess.Popen(cli + ["bringup", "--scene", SCENE, "--db", str(db), "--keep-going",
                                         "--param", "goal_elicitation.llm_latency_s:=0.2"],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True),
                 subprocess.Popen(cli + ["operator", "--simulated", SCENE, "--wait", "180", "--db", str(db)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)]
        try:
            with spinning_node("batch_probes", MultiThreadedExecutor) as node:
                outcome = _attack(node)
        except Exception as exc:  # noqa: BLE001 - the probe's finding, reported as its result
            outcome = ProbeResult(CATEGORY, GRAPH_NAME, False, f"{type(exc).__name__}: {exc}")
        finally:
            stop_process_groups(procs)
    outcome.detail += f" ({time.monotonic() - started:.0f} s)"
    print(json.dumps(asdict(outcome)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
