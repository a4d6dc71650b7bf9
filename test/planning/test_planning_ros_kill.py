"""Kill the planner node (SIGKILL, a real process) in the middle of learning a task through the
ROS graph; after a restart on the same knowledge base no confirmed goal is lost, no question
already answered is put to the operator again, and the task completes."""
from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path

import pytest

from task_learning.kb import KnowledgeBase
from task_learning_interfaces.action import PerformTask
from task_learning_nodes.probes.fault_probes import children
from test.ros_testing import RosGraph, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCENE = "organize_office"
NODES = ["perception", "grounding", "oversight", "goal_elicitation", "planner"]


def _answers(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(db, timeout=5)
    try:
        return conn.execute("SELECT q.question, a.answer, a.operator FROM questions q JOIN answers a "
                            "ON a.request_id = q.request_id ORDER BY a.answered_at").fetchall()
    finally:
        conn.close()


def _answers_so_far(db: Path) -> list[tuple[str, str, str]]:
    """The answers recorded so far; none while the database or its tables do not exist yet."""
    if not db.exists():
        return []
    try:
        return _answers(db)
    except sqlite3.OperationalError:
        return []


def _graph(graph: RosGraph, db: Path) -> list:
    return [graph.start_cli("bringup", "--scene", SCENE, "--db", str(db), "--nodes", *NODES),
            graph.start_cli("operator", "--simulated", SCENE, "--wait", "60", "--db", str(db))]


def test_killed_planner_node_loses_nothing_and_asks_nothing_twice(ros_graph, tmp_path):
    db = tmp_path / "kb.sqlite"
    bringup, operator = _graph(ros_graph, db)
    client = ros_graph.client("kill_test")
    try:
        from task_learning_nodes.plumbing.node_base import ActionClient

        action = ActionClient(client.node, PerformTask, "perform_task")
        assert action.wait_for_server(timeout_sec=60), "planner did not come up"
        action.send_goal_async(PerformTask.Goal(task="organize office", scene=SCENE, condition="STARS+O"))
        answered = wait_until(lambda: len(_answers_so_far(db)) >= 4 and _answers_so_far(db), 120,
                              "the operator answering four questions")
        assert len(answered) >= 4
        planners = [pid for pid, cmd in children(bringup.pid) if "task_learning_nodes.nodes.planner" in cmd]
        assert len(planners) == 1
        os.kill(planners[0], signal.SIGKILL)
        code, out = bringup.stop(sig=None, timeout=30)  # bringup stops the rest
        assert code == 1 and "planner" in out and "SIGKILL" in out, out
    finally:
        client.close()
        operator.stop(signal.SIGINT, timeout=15)
        if bringup.poll() is None:
            bringup.stop(signal.SIGINT, timeout=30)

    with KnowledgeBase(db) as kb:
        learned_before = {g.context: g.text for g in kb.goals()}
    asked_before = [q for q, answer, _ in _answers(db) if answer != "timeout"]

    bringup, operator = _graph(ros_graph, db)
    client = ros_graph.client("kill_test2")
    try:
        result, _ = client.send_goal(PerformTask, "perform_task",
                                     PerformTask.Goal(task="organize office", scene=SCENE, condition="STARS+O"),
                                     timeout=300)
        assert result.success, result.message
        assert result.satisfied == result.total == 14
    finally:
        client.close()
        operator.stop(signal.SIGINT, timeout=15)
        bringup.stop(signal.SIGINT, timeout=30)

    with KnowledgeBase(db) as kb:
        learned_after = {g.context: g.text for g in kb.goals()}
    for context, text in learned_before.items():
        assert learned_after[context] == text
    assert len(learned_after) == 12
    asked_live = [q for q, answer, _ in _answers(db) if answer != "timeout"]
    assert len(asked_live) == len(set(asked_live)), "a question was put to the operator twice"
    assert set(asked_before) <= set(asked_live)
