"""Task anticipation through the ROS graph's oversight node: the robot's day proposes every
anticipated task over `oversight/confirm`; a simulated operator answers over `oversight/answer`;
only confirmed tasks are performed, and a question nobody answers (a timeout) confirms nothing."""
from __future__ import annotations

import json
import signal

import pytest

from task_learning.kb import KnowledgeBase

pytest.importorskip("rclpy")

pytestmark = pytest.mark.slow  # a ROS graph and two CLI runs: about 10 s on a loaded machine


def _run_day(ros_graph, day: str, *extra: str) -> dict:
    proc = ros_graph.start_cli("anticipate", "--day", day, "--robot", "--oversight", "ros", "--wait", "30",
                               "--json", *extra)
    assert proc.wait(120) == 0, proc.report()
    return json.loads(proc.stdout)


def test_robot_day_through_the_oversight_node(ros_graph, tmp_path):
    db = tmp_path / "oversight.sqlite"
    node = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=1.0")
    try:
        # the simulated operator answers through the node, paired in its knowledge base
        confirmed = _run_day(ros_graph, "trace_01", "--oversight-db", str(db))
        assert confirmed["finished"] and confirmed["unconfirmed_executions"] == 0
        assert confirmed["confirmed"] and {p["task"] for p in confirmed["performed"]} <= set(confirmed["confirmed"])
        assert confirmed["done_by_robot"]
        # Another day (the node remembers answers to the same day's questions, so that a robot
        # restarted mid-day does not ask twice; the day and date in each question keep yesterday's
        # answers out of today).
        unanswered = _run_day(ros_graph, "trace_03", "--operator", "terminal")  # nobody answers: every question times out
        assert unanswered["finished"] and unanswered["asked"]
        assert unanswered["confirmed"] == [] and unanswered["performed"] == [] and unanswered["done_by_robot"] == []
    finally:
        code, out = node.stop(signal.SIGINT, timeout=20)
    assert code == 0, out
    with KnowledgeBase(db) as kb:
        log = kb.question_log()
    questions = [row["question"] for row in log]
    assert all(q.startswith("Shall I ") and ("(trace_01, " in q or "(trace_03, " in q) for q in questions)
    answers = [row["answer"] for row in log]
    assert answers.count("yes") == len(confirmed["confirmed"])
    assert answers.count("timeout") == len(unanswered["asked"])
