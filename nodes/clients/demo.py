"""The `make demo` job: learn a task through the ROS graph, then perform it again alone.

1. `task-learning bringup` starts every node as its own OS process (perception on the symbolic
   world, grounding, oversight, goal elicitation with the offline model, action selector,
   planner), and a simulated operator answers the oversight node's questions as the scene's user.
2. A PerformTask goal (STARS+O) is sent to the planner; its result says, per object, the goal
   learned (in words and as literals), who confirmed it and whether it was reached.
3. The graph is stopped and started again on the same knowledge base (a new day, the world as it
   was): the same PerformTask is Trial #2, with no LLM call and no question.
4. For contrast, the baselines TBP and TBP+O run in-process on the same scene.
The measures are printed in the STARS paper's Table 2 layout beside the paper's, and plotted.

Every run starts from nothing: the demo's own files in its folder (the knowledge base and the
baselines' knowledge bases, with their SQLite companions) are removed first, so a second run in the
same folder prints what the first one printed.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, cast

from action_msgs.msg import GoalStatus
from rclpy.task import Future

from task_learning.errors import TaskLearningError
from task_learning.experiments.table import OFFLINE_NOTE, format_table, plot_rows
from task_learning.inputs.safe_text import printable
from task_learning.kb import remove_knowledge_base
from task_learning.lifecycle.child_process import die_with_parent
from task_learning.planning.session import RunSpec, run_in_process
from task_learning.world.scene import load_scene
from task_learning_interfaces.action import PerformTask
from task_learning_nodes.plumbing.node_base import ActionClient, result_of, spinning_node
from task_learning_nodes.plumbing.qos import action_client_qos

BIN = Path(sys.executable).parent


def _start(cmd: list[str], log_path: Path) -> subprocess.Popen:
    """A child of the run (the simulator, bringup, the operator) that gets SIGTERM when the run
    dies, however it dies: a run killed with SIGTERM left its simulator and graph running."""
    log = open(log_path, "w", encoding="utf-8")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=die_with_parent())  # noqa: PLW1509 - only a prctl call


def _stop(procs: list[subprocess.Popen], timeout_s: float = 20.0) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.time() + timeout_s
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def nodes_on_domain(domain_id: int, wait_s: float = 2.0) -> list[str]:
    """The nodes a graph already has on `domain_id` (looked for during up to `wait_s` of discovery)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    context = Context()
    rclpy.init(context=context, domain_id=domain_id)
    node = Node("demo_graph_check", context=context)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            names = [n for n in node.get_node_names() if n != "demo_graph_check"]
            if names or time.monotonic() >= deadline:
                return names
            time.sleep(0.1)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


CANCEL_WAIT_S = 180.0  # how long a cancelled PerformTask may take to stop its motion and answer


def perform_task(scene: str, task: str, condition: str, timeout_s: float, *,
                 cancel_at_timeout: bool = False) -> dict[str, Any]:
    """Send one PerformTask goal and wait for its result, printing a line per object. With
    `cancel_at_timeout` a goal still running after `timeout_s` is cancelled (the planner stops
    the motion and keeps what was learned) and its result comes back marked `stopped`; without
    it, or when the cancel is not answered within CANCEL_WAIT_S, no result is an error."""
    with spinning_node("demo_client") as node:
        client = ActionClient(node, PerformTask, "perform_task", **action_client_qos())
        if not client.wait_for_server(timeout_sec=60.0):
            raise TaskLearningError("the planner node did not come up (see the bringup log)")
        done = threading.Event()
        box: dict[str, Any] = {}

        def feedback(msg: Any) -> None:
            if sys.stdout.isatty():  # a progress line; what was learned is printed from the result
                f = msg.feedback
                print(f"\r  [{f.objects_done:>2}/{f.objects_total}] {f.current_object[:70]:<70}",
                      end="", flush=True)

        def on_result(future: Future) -> None:
            wrapped = result_of(future)
            box["result"] = wrapped.result
            box["status"] = wrapped.status
            done.set()

        def on_goal(future: Future) -> None:
            handle = result_of(future)
            if not handle.accepted:
                box["error"] = "the planner rejected the goal"
                done.set()
                return
            box["handle"] = handle
            handle.get_result_async().add_done_callback(on_result)

        goal = PerformTask.Goal(task=task, scene=scene, condition=condition)
        client.send_goal_async(goal, feedback_callback=feedback).add_done_callback(on_goal)
        stopped = ""
        if not done.wait(timeout_s):
            if not cancel_at_timeout or "handle" not in box:
                raise TaskLearningError(f"no result within {timeout_s:.0f} s")
            box["handle"].cancel_goal_async()
            stopped = f"time limit: cancelled after {timeout_s:.0f} s"
            if not done.wait(CANCEL_WAIT_S):
                raise TaskLearningError(f"no result within {timeout_s:.0f} s, nor {CANCEL_WAIT_S:.0f} s after "
                                        "cancelling")
        if "error" in box:
            raise TaskLearningError(box["error"])
        result = box["result"]
        # after our cancel any end is the stopped task's (a cancel that stops a motion mid-action
        # comes back aborted, "the task was cancelled", from the robot-skills layer)
        if box["status"] != GoalStatus.STATUS_SUCCEEDED and not stopped:  # aborted: the task did not run to its end
            raise TaskLearningError(f"perform task failed: {result.message}")
        if sys.stdout.isatty():
            print("\r" + " " * 80 + "\r", end="")
        return {**({"stopped": f"{stopped} ({printable(result.message)})" if result.message else stopped}
                   if stopped else {}),
            "success": result.success, "message": result.message,
            "incomplete": list(result.incomplete),
            "objects": [object_row(o) for o in result.objects],
            "completion": round(100.0 * result.satisfied / max(result.total, 1), 1),
            "satisfied": result.satisfied, "assertions": result.total,
            "retrieved": result.counts.retrieved, "proposed": result.counts.proposed,
            "sourced": result.counts.sourced, "instructions": result.counts.instructions,
            "yes_no": result.counts.yes_no, "words": result.counts.words,
            "prompt_tokens": result.usage.prompt_tokens,
            "completion_tokens": result.usage.completion_tokens,
            "total_tokens": result.usage.prompt_tokens + result.usage.completion_tokens,
            "calls": result.usage.calls,
        }


# `task-learning bringup`'s option for each make_client option of --llm-model / --base-url.
BRINGUP_LLM_OPTIONS = {"base_url": "--base-url", "completion_model": "--llm-model",
                       "selection_model": "--llm-selection-model"}


def object_row(msg: Any) -> dict[str, Any]:
    """One TaskObjectOutcome as the demo prints it."""
    return {"object_id": msg.object_id, "goal": msg.goal.text,
            "literals": [_literal(lit) for lit in msg.goal.literals], "confirmed_by": msg.confirmed_by,
            "reached": bool(msg.success), "outcome": msg.outcome, "goal_source": msg.goal_source,
            "message": msg.message}


def _literal(msg: Any) -> str:
    """A literal written the one way the project prints them (GoalLiteral: `false:open(Fridge|1)`)."""
    from task_learning_nodes.plumbing.convert import goal_literal_from_msg

    try:
        return str(goal_literal_from_msg(msg))
    except ValueError:  # a truth value this client does not know: shown as it came
        return f"{msg.truth}:{msg.predicate}({', '.join(msg.args)})"


def print_learned(objects: list[dict[str, Any]]) -> None:
    """Per object: the goal in words, its literals, who confirmed it, reached or not."""
    for row in objects:
        where = row["message"].split(":", 1)[0]
        reached = "reached" if row["reached"] else f"NOT reached ({row['outcome']})"
        who = row["confirmed_by"] or "nobody"
        source = {"learned": "from the knowledge base", "described": "described by the operator"}.get(
            row["goal_source"], row["goal_source"] or "-")
        print(f"  {where}: {row['goal'] or '(no goal)'}", flush=True)
        print(f"      {' & '.join(row['literals']) or '-'}; {source}; confirmed by {who}; {reached}",
              flush=True)


def bringup_command(cli: str, scene: str, db: Path, backend: str, llm: str,
                    llm_options: dict[str, str] | None = None, decoding: str = "auto") -> list[str]:
    """The `task-learning bringup` command line of the demo's graph: the demo's model, where it is
    and its `--decoding`, given to every node that has an LLM."""
    command = [cli, "bringup", "--scene", scene, "--db", str(db), "--backend", backend, "--llm", llm,
               "--decoding", decoding]
    for option, value in (llm_options or {}).items():
        command += [BRINGUP_LLM_OPTIONS[option], value]
    return command


def trial_through_ros(scene: str, condition: str, db: Path, logs: Path, label: str,
                      backend: str = "symbolic", llm: str = "offline",
                      llm_options: dict[str, str] | None = None, decoding: str = "auto") -> dict[str, Any]:
    cli = str(BIN / "task-learning")
    command = bringup_command(cli, scene, db, backend, llm, llm_options, decoding)
    procs = [_start(command, logs / f"bringup_{label}.log")]
    if condition.endswith("+O"):
        procs.append(_start([cli, "operator", "--simulated", scene, "--wait", "60", "--db", str(db)],
                            logs / f"operator_{label}.log"))
    try:
        task = load_scene(scene).task
        return perform_task(scene, task, condition, timeout_s=1800.0)
    finally:
        _stop(procs)
        for proc in procs:
            if proc.returncode not in (0, 130, -signal.SIGINT):  # 130: stopped by SIGINT
                print(f"  note: {cast(list[str], proc.args)[1]} exited with {proc.returncode} (see {logs})", flush=True)


def run_demo(scene: str = "tidy_kitchen", condition: str = "STARS+O", workdir: str | Path = "artifacts/demo",
             baselines: tuple[str, ...] = ("TBP", "TBP+O"), backend: str = "symbolic", llm: str = "offline",
             llm_options: dict[str, str] | None = None, decoding: str = "auto") -> int:
    """`llm`, `llm_options`, `decoding`: the model of the graph (bringup --llm ... --decoding ...)
    and of the baselines."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "knowledge.sqlite"
    baseline_dbs = {b: workdir / f"baseline_{b.replace('+', 'plus').replace('*', 'star')}.sqlite"
                    for b in baselines}
    plot_path = workdir / f"table2_{scene}.png"
    for stale in (db, *baseline_dbs.values()):  # a second run must not be a Trial #2 of the first
        remove_knowledge_base(stale)
    # The plot is of a finished run: an earlier run's would stand beside this run's knowledge base
    # (partial, if this run is interrupted) as if it were its result.
    plot_path.unlink(missing_ok=True)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    try:
        return _run_demo(scene, condition, workdir, db, baseline_dbs, plot_path, backend, llm, llm_options, decoding)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {workdir} holds this run's partial knowledge base and no plot "
              "(the next demo starts from nothing)", flush=True)
        raise


def _run_demo(scene: str, condition: str, workdir: Path, db: Path, baseline_dbs: dict[str, Path], plot_path: Path,
              backend: str, llm: str, llm_options: dict[str, str] | None, decoding: str = "auto") -> int:
    rows: list[tuple[str, dict[str, Any]]] = []
    model = "offline model (not a language model)" if llm == "offline" else f"LLM {llm}"
    print(f"== {scene}: learning the task through the ROS graph ({condition}, {model}, "
          f"simulated operator, {backend} world)", flush=True)
    started = time.time()
    rows.append((f"{condition} (ROS)", trial_through_ros(scene, condition, db, workdir, "trial1", backend,
                                                          llm, llm_options, decoding)))
    print("   what was learned, per object:", flush=True)
    print_learned(rows[-1][1]["objects"])
    print(f"   {rows[-1][1]['message']} ({time.time() - started:.0f} s)", flush=True)
    print("== Trial #2: the graph restarted on the same knowledge base", flush=True)
    started = time.time()
    rows.append(("Trial #2 (ROS)", trial_through_ros(scene, condition, db, workdir, "trial2", backend,
                                                     llm, llm_options, decoding)))
    print_learned(rows[-1][1]["objects"])
    print(f"   {rows[-1][1]['message']} ({time.time() - started:.0f} s), "
          f"{rows[-1][1]['calls']} LLM calls, {rows[-1][1]['yes_no']} questions", flush=True)
    for baseline in baseline_dbs:
        print(f"== baseline {baseline} (in-process)", flush=True)
        operator = "simulated" if baseline.endswith("+O") else "none"
        metrics, _ = run_in_process(RunSpec(scene=scene, condition=baseline, operator=operator, backend=backend,
                                            db=baseline_dbs[baseline], llm=llm,
                                            llm_options=dict(llm_options or {}), decoding=decoding))
        data = metrics.to_dict()
        rows.insert(len(rows) - 2, (baseline, data))
    print()
    print(format_table(scene, rows, llm=llm))
    if llm == "offline":
        print("\n" + textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
    plot = plot_rows(scene, rows, plot_path)
    print(f"\nplot: {plot}\nknowledge base: {db} (inspect with `{cli_command()} kb show --db {db}`)")
    return 0


def cli_command(bin_dir: Path = BIN) -> str:
    """How to call `task-learning` from the shell the demo ran in: its bare name when that finds
    this very script, else its path (`.venv/bin/task-learning` after `make demo`, whose venv the
    shell has not activated)."""
    script = bin_dir / "task-learning"
    found = shutil.which("task-learning")
    if not script.exists() or (found and Path(found).resolve() == script.resolve()):
        return "task-learning"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)
