"""ROS graph fault probes for `task-learning faults` (its `ros` category), in their own process:
the core library never imports rclpy, so it runs `python -m task_learning_nodes.probes.fault_probes`
and reads the JSON lines this prints (one ProbeResult each).

The graph is started with `task-learning bringup` on a scratch knowledge base; a client node then
acts as a hostile or careless client would: malformed and oversized requests, motion requests
nobody confirmed, questions that never expire, a node killed in the middle of a task. Every probe
has a deadline; a probe that gets no answer within it is "not handled" (a hang), never waited out.
Run it in an isolated network namespace (`scripts/isolated.sh`) when other graphs share the host.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rclpy.action.client import ClientGoalHandle
from rclpy.client import Client as ServiceClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.task import Future

from task_learning_interfaces.action import PerformTask, ReachGoal
from task_learning_interfaces.msg import (
    ActionCall,
    ConfirmationRequest,
    GoalLiteral,
    KeyValue,
)
from task_learning_interfaces.srv import (
    Confirm,
    ExecuteAction,
    ListPendingConfirmations,
    QueryWorld,
)
from task_learning_nodes.plumbing.node_base import ActionClient, spinning_node, stop_process_groups

CATEGORY = "ros"
SCENE = "tidy_kitchen"


def result(name: str, handled: bool, detail: str, **counts: int) -> dict[str, Any]:
    return {"category": CATEGORY, "name": name, "handled": bool(handled), "detail": detail.replace("\n", " ")[:300],
            "unconfirmed_executed": counts.get("unconfirmed_executed", 0),
            "confirmed_lost": counts.get("confirmed_lost", 0), "skipped": False}


class Client:
    """The probes' node, spun in a thread, with calls that give up at a deadline."""

    def __init__(self) -> None:
        self._spinning = ExitStack()
        self.node = self._spinning.enter_context(spinning_node("fault_probes", MultiThreadedExecutor))

    def close(self) -> None:
        self._spinning.close()

    @staticmethod
    def wait(future: Future, timeout: float) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            return None
        return future.result()

    def call(self, srv: Any, name: str, request: Any, timeout: float = 30.0) -> Any:
        client: ServiceClient = self.node.create_client(srv, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f"service {name} not available")
            return self.wait(client.call_async(request), timeout)
        finally:
            self.node.destroy_client(client)

    def goal(self, action: Any, name: str, goal: Any, timeout: float = 60.0,
             on_accepted: Callable[[ClientGoalHandle], None] | None = None) -> tuple[str, Any]:
        """("rejected", None) | ("timeout", None) | ("done", result)."""
        client = ActionClient(self.node, action, name)
        try:
            if not client.wait_for_server(timeout_sec=timeout):
                raise TimeoutError(f"action {name} not available")
            handle = self.wait(client.send_goal_async(goal), timeout)
            if handle is None:
                return "timeout", None
            if not handle.accepted:
                return "rejected", None
            if on_accepted is not None:
                on_accepted(handle)
            wrapped = self.wait(handle.get_result_async(), timeout)
            return ("timeout", None) if wrapped is None else ("done", wrapped.result)
        finally:
            client.destroy()


# ----------------------------------------------------------------------------------- probes
def probe_query_size(c: Client) -> dict[str, Any]:
    name = "query_world with a 2 MB query"
    response = c.call(QueryWorld, "query_world", QueryWorld.Request(query="mug " * 500_000))
    if response is None:
        return result(name, False, "no answer (hang)")
    ok = not response.success and len(response.message) < 2000
    return result(name, ok, f"success={response.success}, message of {len(response.message)} chars: "
                            f"{response.message[:120]}")


def probe_force_action_json(c: Client) -> dict[str, Any]:
    name = "execute_action forceAction '{not json'"
    call = ActionCall(action="PickupObject", object_id="Mug|1",
                      params=[KeyValue(key="forceAction", value="{not json")])
    response = c.call(ExecuteAction, "execute_action", ExecuteAction.Request(call=call))
    if response is None:
        return result(name, False, "no answer (hang)")
    ok = not response.outcome.success and bool(response.outcome.error_message)
    return result(name, ok, f"success={response.outcome.success}: {response.outcome.error_message[:160]}",
                  unconfirmed_executed=int(response.outcome.success))


def probe_simulator_commands(c: Client) -> dict[str, Any]:
    """Only robot actions may reach a backend (world.action_check.ROBOT_ACTIONS): a simulator
    command such as `Reset {sceneName: FloorPlan306}` would swap the AI2-THOR kitchen for a bedroom."""
    name = "execute_action Reset / ChangeResolution / TeleportFull"
    sent = [ActionCall(action="Reset", params=[KeyValue(key="sceneName", value='"FloorPlan306"')]),
            ActionCall(action="ChangeResolution", params=[KeyValue(key="x", value="64"), KeyValue(key="y", value="64")]),
            ActionCall(action="TeleportFull", params=[KeyValue(key="horizon", value="10")])]
    answered = refused = executed = 0
    for call in sent:
        response = c.call(ExecuteAction, "execute_action", ExecuteAction.Request(call=call))
        if response is None:
            continue
        answered += 1
        executed += int(response.outcome.success)
        refused += int(not response.outcome.success and "not a robot action" in response.outcome.error_message)
    return result(name, answered == refused == len(sent),
                  f"{answered} of {len(sent)} answered, {refused} refused as not robot actions, {executed} executed",
                  unconfirmed_executed=executed)


def _refused_or_hung(name: str, status: str) -> dict[str, Any]:
    """A goal the planner rejected passes (it did nothing); one that never ended fails."""
    return result(name, status == "rejected", "rejected" if status == "rejected" else "no result (hang)")


def probe_scene_path(c: Client) -> dict[str, Any]:
    name = "perform_task scene '/etc/passwd'"
    status, res = c.goal(PerformTask, "perform_task", PerformTask.Goal(task="tidy kitchen", scene="/etc/passwd",
                                                                       condition="STARS+O"), timeout=60)
    if status != "done":
        return _refused_or_hung(name, status)
    # Scenes come over ROS by name only: an error that comes from parsing the file means the
    # planner opened a path a client chose.
    read_it = any(w in res.message for w in ("root:", "expected a mapping", "malformed YAML", "not UTF-8"))
    ok = not res.success and bool(res.message) and not read_it
    return result(name, ok, f"success={res.success}: {res.message[:160]}"
                            + (" (the planner opened the file)" if read_it else ""))


def probe_truth_maybe(c: Client) -> dict[str, Any]:
    name = "reach_goal with truth 'maybe'"
    goal = ReachGoal.Goal(goal=[GoalLiteral(predicate="inside", args=["Mug|1", "Cabinet|1"], truth="maybe")])
    status, res = c.goal(ReachGoal, "reach_goal", goal, timeout=60)
    if status != "done":
        return _refused_or_hung(name, status)
    ok = not res.success and bool(res.message)
    return result(name, ok, f"success={res.success}: {res.message[:160] or '(empty message)'}",
                  unconfirmed_executed=int(bool(res.outcomes)))


def probe_unconfirmed_reach(c: Client) -> dict[str, Any]:
    name = "reach_goal nobody confirmed"
    goal = ReachGoal.Goal(goal=[GoalLiteral(predicate="inside", args=["Mug|1", "GarbageCan|1"], truth="true")])
    status, res = c.goal(ReachGoal, "reach_goal", goal, timeout=120)
    if status != "done":
        return _refused_or_hung(name, status)
    moved = sum(1 for o in res.outcomes if o.success)
    ok = moved == 0 and not res.success
    return result(name, ok, f"success={res.success}, {moved} action(s) executed: {res.message[:120]}",
                  unconfirmed_executed=int(moved > 0))


def probe_oversight_exhaustion(c: Client) -> dict[str, Any]:
    name = "oversight: 12 questions with timeout inf"
    client: ServiceClient = c.node.create_client(Confirm, "oversight/confirm")
    try:
        if not client.wait_for_service(timeout_sec=30):
            return result(name, False, "oversight node not available")
        futures = []
        for i in range(12):
            request = Confirm.Request(request=ConfirmationRequest(
                request_id=f"fault-{i}", question=f"probe question {i}?", object_id="Mug|1",
                object_description="mug in dish rack", timeout_s=math.inf))
            futures.append(client.call_async(request))
        # Until every request has reached the node (pending, or answered at once), list_pending
        # must keep answering; then every waiting question must have a finite timeout.
        listed = None
        for _ in range(15):
            listed = c.call(ListPendingConfirmations, "oversight/list_pending", ListPendingConfirmations.Request(),
                            timeout=20)
            answered = sum(1 for f in futures if f.done())
            if listed is None:
                return result(name, False, f"list_pending got no answer while {12 - answered} questions wait")
            if len(listed.pending) + answered >= 12:
                break
            time.sleep(1.0)  # the requests are still on their way to the node
        answered = sum(1 for f in futures if f.done())
        pending = list(listed.pending) if listed is not None else []
        max_pending = _oversight_param("max_pending")
        # Bounded: list_pending never blocked (above), and no more questions wait than the node's
        # max_pending (the rest refused at once). Each waiting question's own deadline is the
        # node's max_timeout_s; the list shows the requests as sent (timeout inf).
        ok = max_pending is not None and len(pending) <= int(max_pending)
        return result(name, ok, f"list_pending kept answering: {len(pending)} waiting (max_pending "
                                f"{max_pending}), {answered} refused at once")
    finally:
        c.node.destroy_client(client)


def probe_node_kill(c: Client, bringup: subprocess.Popen) -> dict[str, Any]:
    name = "perception killed during perform_task"
    killed: list[int] = []

    def kill(_handle: ClientGoalHandle) -> None:
        time.sleep(1.0)  # let the task start working before the kill
        victim = _child_with(bringup.pid, "task_learning_nodes.nodes.perception")
        if victim is not None:
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    status, res = c.goal(PerformTask, "perform_task", PerformTask.Goal(task="tidy kitchen", scene=SCENE,
                                                                       condition="STARS"), timeout=120,
                         on_accepted=kill)
    if status == "rejected":
        return result(name, False, "rejected before the kill")
    if not killed:
        return result(name, False, "perception process not found")
    if status == "timeout":
        return result(name, False, "no result within 120 s after the kill (client left waiting)")
    ok = not res.success and "percep" in res.message.lower()
    return result(name, ok, f"success={res.success}: {res.message[:160]}")


def probe_reuse_over_ros(c: Client, workdir: Path, env: dict[str, str]) -> dict[str, Any]:
    """Reuse without confirmation, through the graph: PerformTask with STARS learns goals nobody
    confirmed; the graph restarts on the same knowledge base (the world as it was) and PerformTask
    with STARS+O must ask before executing any of them."""
    from task_learning.oversight.audit import operator_confirmations

    name = "PerformTask STARS, then STARS+O on its goals"
    db = workdir / "ros_reuse.sqlite"
    for stale in workdir.glob("ros_reuse.sqlite*"):
        stale.unlink()
    cli = [sys.executable, "-m", "task_learning.apps.cli"]
    executed: list[str] = []
    for step, condition in enumerate(("STARS", "STARS+O")):
        log = workdir / f"ros_reuse_{step}.log"
        # The first graph learns without anyone confirming (require_confirmation off, as an older
        # graph or a careless setup would); the second is the default, locked-down graph.
        permissive = ["--param", "planner.require_confirmation:=false"] if step == 0 else []
        with open(log, "w", encoding="utf-8") as out:
            procs = [subprocess.Popen(cli + ["bringup", "--scene", SCENE, "--db", str(db), *permissive], stdout=out,
                                      stderr=subprocess.STDOUT, env=env, start_new_session=True)]
            if condition.endswith("+O"):
                procs.append(subprocess.Popen(cli + ["operator", "--simulated", SCENE, "--wait", "60", "--db", str(db)], stdout=out,
                                              stderr=subprocess.STDOUT, env=env, start_new_session=True))
            try:
                status, res = c.goal(PerformTask, "perform_task",
                                     PerformTask.Goal(task="tidy kitchen", scene=SCENE, condition=condition),
                                     timeout=900)
            finally:
                stop_process_groups(procs)
        if status != "done":
            return result(name, status == "rejected" and step == 1, f"{condition}: {status}")
        if step == 1:
            executed = [f"{o.object_id}: {o.goal.text}" for o in res.objects if _executed(o)]
    confirmations = operator_confirmations(db)

    def confirmed(entry: str) -> bool:
        object_id, _, text = entry.partition(": ")
        said = confirmations.get(object_id, set())
        return "*" in said or " ".join(text.lower().strip().rstrip(".").split()) in said

    bad = [e for e in executed if not confirmed(e)]
    return result(name, not bad, f"{len(bad)} of {len(executed)} goals executed under STARS+O without the "
                                 f"operator's yes" + (f", e.g. {bad[0]}" if bad else ""),
                  unconfirmed_executed=len(bad))


def _executed(outcome: Any) -> bool:
    """Whether PerformTask acted on this object's goal (reached it, or tried and failed)."""
    return (bool(outcome.success) or any(a.success for a in outcome.actions)
            or ": unreachable, goal from" in outcome.message)


def probe_cancel(c: Client) -> dict[str, Any]:
    name = "perform_task canceled"
    box: dict[str, Any] = {}

    def cancel(handle: ClientGoalHandle) -> None:
        time.sleep(1.0)  # let it start moving
        box["cancel"] = handle.cancel_goal_async()

    client = ActionClient(c.node, PerformTask, "perform_task")
    try:
        if not client.wait_for_server(timeout_sec=60):
            return result(name, False, "planner not available")
        handle = c.wait(client.send_goal_async(PerformTask.Goal(task="tidy kitchen", scene=SCENE,
                                                                condition="STARS")), 60)
        if handle is None or not handle.accepted:
            return result(name, False, "goal not accepted")
        cancel(handle)
        wrapped = c.wait(handle.get_result_async(), 300)  # an ignored cancel: the whole task
    finally:
        client.destroy()
    if wrapped is None:
        return result(name, False, "no result within 300 s of the cancel")
    canceled = wrapped.status == 5  # action_msgs/GoalStatus.STATUS_CANCELED
    return result(name, canceled, f"status {wrapped.status}, success={wrapped.result.success}: "
                                  f"{wrapped.result.message[:120]}")


def _oversight_param(name: str) -> Any:
    from task_learning.inputs.config import config_path, load_yaml

    data = load_yaml(config_path("nodes", "oversight.yaml")) or {}
    return (data.get("oversight") or {}).get("ros__parameters", {}).get(name)


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the direct children of a process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append((int(entry.name), cmdline))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _child_with(parent: int, needle: str) -> int | None:
    return next((pid for pid, cmdline in children(parent) if needle in cmdline), None)


def probe_stop(bringup: subprocess.Popen) -> dict[str, Any]:
    name = "SIGINT to the graph"
    bringup.send_signal(signal.SIGINT)
    try:
        bringup.wait(timeout=30)
    except subprocess.TimeoutExpired:
        bringup.kill()
        bringup.wait()
        return result(name, False, "the graph was still running 30 s after SIGINT")
    return result(name, True, f"stopped (exit {bringup.returncode})")


def probe_backend_choice(cli: list[str], env: dict[str, str], workdir: Path) -> dict[str, Any]:
    """A perception node started with backend:=unity (a parameter, past the CLI's own choices):
    refused at start with one line naming the parameter, and bringup ends, within seconds."""
    name = "perception node with backend unity"
    started = time.monotonic()
    try:
        proc = subprocess.run(cli + ["bringup", "--nodes", "perception", "--param", "perception.backend:=unity"],
                              capture_output=True, text=True, env=env, timeout=90, cwd=workdir)
    except subprocess.TimeoutExpired:
        return result(name, False, "bringup still running 90 s after the node was given backend unity (hang)")
    refusal = next((line for line in (proc.stdout + proc.stderr).splitlines()
                    if "parameter backend: 'unity' is not one of" in line), "")
    handled = proc.returncode != 0 and bool(refusal) and "Traceback" not in proc.stdout + proc.stderr
    return result(name, handled, f"bringup exit {proc.returncode} after {time.monotonic() - started:.1f} s: "
                                 + (refusal.split("]: ", 1)[-1] or "no refusal naming the parameter"))


Outcome = dict[str, Any] | list[dict[str, Any]]  # a probe may report several cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "task_learning.apps.cli"]
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    db = workdir / "ros.sqlite"
    with open(workdir / "ros_bringup.log", "w", encoding="utf-8") as log:
        bringup = subprocess.Popen(cli + ["bringup", "--scene", SCENE, "--db", str(db), "--keep-going"],
                                   stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        client = Client()
        try:
            for name, probe in shared_graph_probes(client, db, env, fast=args.fast):
                _print(_guarded(name, probe))
            _print(probe_stop(bringup))
            _print(probe_backend_choice(cli, env, workdir))
            if not args.fast:
                for out in own_graph_probes(client, cli, env, workdir):
                    _print(out)
        finally:
            client.close()
            if bringup.poll() is None:
                os.killpg(bringup.pid, signal.SIGKILL)
                bringup.wait()
    return 0


def shared_graph_probes(client: Client, db: Path, env: dict[str, str], *,
                        fast: bool) -> list[tuple[str, Callable[[], Outcome]]]:
    """The probes that share the first graph, in their order (name, probe)."""
    from task_learning_nodes.probes import oversight_probes

    probes: list[tuple[str, Callable[[], Outcome]]] = [
        ("query_world with a 2 MB query", lambda: probe_query_size(client)),
        ("execute_action forceAction '{not json'", lambda: probe_force_action_json(client)),
        ("execute_action Reset / ChangeResolution / TeleportFull", lambda: probe_simulator_commands(client)),
        ("perform_task scene '/etc/passwd'", lambda: probe_scene_path(client)),
        ("reach_goal with truth 'maybe'", lambda: probe_truth_maybe(client)),
        ("reach_goal nobody confirmed", lambda: probe_unconfirmed_reach(client)),
    ]
    if not fast:
        probes.append(("perform_task canceled", lambda: probe_cancel(client)))
    probes.append(("oversight: 12 questions with timeout inf", lambda: probe_oversight_exhaustion(client)))
    return probes + oversight_probes.graph_probes(client, db, env, fast=fast)


def own_graph_probes(client: Client, cli: list[str], env: dict[str, str], workdir: Path) -> Iterator[Outcome]:
    """The probes that need a graph of their own (a fresh world), each started for it; each
    result as soon as it is known."""
    from task_learning_nodes.probes import oversight_probes

    # No questions on the kill's graph (require_confirmation off, nobody answering): the task
    # keeps calling perception, so the probe measures the dead dependency, not a question
    # waiting out its operator timeout.
    yield _on_fresh_graph("perception killed during perform_task", "kill", cli, env, workdir,
                          lambda graph: probe_node_kill(client, graph),
                          "--param", "planner.require_confirmation:=false")
    yield _on_fresh_graph("oversight SIGSTOPped during perform_task", "stop", cli, env, workdir,
                          lambda graph: oversight_probes.probe_oversight_stopped(client, graph))
    # a graph of its own, started twice on one knowledge base
    yield _guarded("PerformTask STARS, then STARS+O on its goals", lambda: probe_reuse_over_ros(client, workdir, env))


def _on_fresh_graph(name: str, label: str, cli: list[str], env: dict[str, str], workdir: Path,
                    probe: Callable[[subprocess.Popen], Outcome], *params: str) -> Outcome:
    """`probe` on a bringup of its own (log and knowledge base ros_<label>.*), stopped after it."""
    with open(workdir / f"ros_{label}.log", "w", encoding="utf-8") as log:
        graph = subprocess.Popen(cli + ["bringup", "--scene", SCENE, "--db", str(workdir / f"ros_{label}.sqlite"),
                                        "--keep-going", *params],
                                 stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            return _guarded(name, lambda: probe(graph))
        finally:
            stop_process_groups([graph])


def _guarded(name: str, probe: Callable[[], Outcome]) -> Outcome:
    """What `probe` reported; a probe that crashes is a finding, not the end of the run."""
    try:
        return probe()
    except Exception as exc:  # noqa: BLE001 - reported as the probe's result
        return result(name, False, f"{type(exc).__name__}: {exc}")


def _print(outs: Outcome) -> None:
    for out in outs if isinstance(outs, list) else [outs]:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
