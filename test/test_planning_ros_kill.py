"""Kill the planner node (SIGKILL, a real process) in the middle of learning a task through the
ROS graph; after a restart on the same knowledge base no confirmed goal is lost, no question
already answered is put to the operator again, and the task completes."""
from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from task_learning.kb import KnowledgeBase

ros_testing = pytest.importorskip("test.ros_testing")
from task_learning_interfaces.action import PerformTask  # noqa: E402

DOMAIN = 23
SCENE = "organize_office"
NODES = ["perception", "grounding", "oversight", "goal_elicitation", "planner"]


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the direct children of a process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append((int(entry.name), cmd))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _answers(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(db, timeout=5)
    try:
        return conn.execute("SELECT q.question, a.answer, a.operator FROM questions q JOIN answers a "
                            "ON a.request_id = q.request_id ORDER BY a.answered_at").fetchall()
    finally:
        conn.close()


def _graph(db: Path) -> list:
    cli = str(ros_testing.VENV_BIN / "task-learning")
    return [ros_testing.start_process([cli, "bringup", "--scene", SCENE, "--db", str(db), "--nodes", *NODES],
                                      DOMAIN),
            ros_testing.start_process([cli, "operator", "--simulated", SCENE, "--wait", "60"], DOMAIN)]


def test_killed_planner_node_loses_nothing_and_asks_nothing_twice(tmp_path):
    db = tmp_path / "kb.sqlite"
    bringup, operator = _graph(db)
    client = ros_testing.RosClient(DOMAIN, "kill_test")
    try:
        from rclpy.action import ActionClient

        action = ActionClient(client.node, PerformTask, "perform_task")
        assert action.wait_for_server(timeout_sec=60), "planner did not come up"
        action.send_goal_async(PerformTask.Goal(task="organize office", scene=SCENE, condition="STARS+O"))
        deadline = time.time() + 120
        answered: list = []
        while time.time() < deadline and len(answered) < 4:
            time.sleep(0.1)
            if db.exists():
                try:
                    answered = _answers(db)
                except sqlite3.OperationalError:
                    pass
        assert len(answered) >= 4, "the operator was not asked"
        planners = [pid for pid, cmd in _children(bringup.pid) if "task_learning_nodes.planner" in cmd]
        assert len(planners) == 1
        os.kill(planners[0], signal.SIGKILL)
        code, out = ros_testing.stop_process(bringup, sig=None, timeout=30)  # bringup stops the rest
        assert code == 1 and "planner" in out and "SIGKILL" in out, out
    finally:
        client.close()
        ros_testing.stop_process(operator, signal.SIGINT, timeout=15)
        if bringup.poll() is None:
            ros_testing.stop_process(bringup, signal.SIGINT, timeout=30)

    with KnowledgeBase(db) as kb:
        learned_before = {g.context: g.text for g in kb.goals()}
    asked_before = [q for q, answer, _ in _answers(db) if answer != "timeout"]

    bringup, operator = _graph(db)
    client = ros_testing.RosClient(DOMAIN, "kill_test2")
    try:
        result, _ = client.send_goal(PerformTask, "perform_task",
                                     PerformTask.Goal(task="organize office", scene=SCENE, condition="STARS+O"),
                                     timeout=300)
        assert result.success, result.message
        assert result.satisfied == result.total == 14
    finally:
        client.close()
        ros_testing.stop_process(operator, signal.SIGINT, timeout=15)
        ros_testing.stop_process(bringup, signal.SIGINT, timeout=30)

    with KnowledgeBase(db) as kb:
        learned_after = {g.context: g.text for g in kb.goals()}
    for context, text in learned_before.items():
        assert learned_after[context] == text
    assert len(learned_after) == 12
    asked_live = [q for q, answer, _ in _answers(db) if answer != "timeout"]
    assert len(asked_live) == len(set(asked_live)), "a question was put to the operator twice"
    assert set(asked_before) <= set(asked_live)
