"""The ROS path (nodes as separate OS processes) learns the same goals as the in-process path,
reaches extra goals through ReachGoal, and performs the task again alone (Trial #2)."""
from __future__ import annotations

import signal

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.planning.session import RunSpec, run_in_process

ros_testing = pytest.importorskip("test.ros_testing")
from task_learning_interfaces.action import PerformTask, ReachGoal  # noqa: E402
from task_learning_interfaces.msg import GoalLiteral as GoalLiteralMsg  # noqa: E402
from task_learning_interfaces.srv import GetCompletion  # noqa: E402

DOMAIN = 20
SCENE = "store_groceries"
NODES = ["perception", "grounding", "goal_elicitation", "planner"]


def _bringup(db) -> object:
    # A test bench without an operator: require_confirmation off (test_safety_planner_ros checks
    # the default, on).
    cmd = [str(ros_testing.VENV_BIN / "task-learning"), "bringup", "--scene", SCENE, "--db", str(db),
           "--nodes", *NODES, "--param", "planner.require_confirmation:=false"]
    return ros_testing.start_process(cmd, DOMAIN)


def _goals(db) -> dict[str, str]:
    with KnowledgeBase(db) as kb:
        return {g.context: g.text for g in kb.goals()}


def test_ros_path_learns_what_the_in_process_path_learns(tmp_path):
    ros_db = tmp_path / "ros.sqlite"
    local_db = tmp_path / "local.sqlite"
    local, _ = run_in_process(RunSpec(scene=SCENE, condition="STARS", operator="none", db=local_db))

    proc = _bringup(ros_db)
    client = ros_testing.RosClient(DOMAIN, "planner_test")
    try:
        goal = PerformTask.Goal(task="store groceries", scene=SCENE, condition="STARS")
        result, feedback = client.send_goal(PerformTask, "perform_task", goal, timeout=300)
        assert result.success, result.message
        assert result.satisfied == local.satisfied and result.total == local.assertions
        assert result.usage.calls == local.usage.calls
        assert result.counts.retrieved == local.retrieved
        assert feedback and feedback[-1].objects_done == len(result.objects) == 15
        assert _goals(ros_db) == _goals(local_db)

        # ReachGoal: put the chips wherever the user wants them, through the same executor.
        literals = [GoalLiteralMsg(predicate="inside", args=["Chips|1", "Pantry|1"], truth=GoalLiteralMsg.TRUE),
                    GoalLiteralMsg(predicate="open", args=["Pantry|1"], truth=GoalLiteralMsg.FALSE)]
        reached, steps = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=literals), timeout=60)
        assert reached.success, reached.message
        assert len(steps) == len(reached.outcomes) > 0
        score = client.call(GetCompletion, "get_completion", GetCompletion.Request())
        assert not any("Chips|1" in f for f in score.failures)

        # Bad input: a task this scene does not define is refused with a clear message.
        wrong, _ = client.send_goal(PerformTask, "perform_task",
                                    PerformTask.Goal(task="tidy kitchen", scene=SCENE), timeout=30)
        assert not wrong.success and "defines the task" in wrong.message
    finally:
        client.close()
        code, out = ros_testing.stop_process(proc, signal.SIGINT, timeout=30)
    assert code == 0, out

    # Trial #2: a fresh world, the same knowledge base: no LLM call, same completion.
    proc = _bringup(ros_db)
    client = ros_testing.RosClient(DOMAIN, "planner_test2")
    try:
        result, _ = client.send_goal(PerformTask, "perform_task",
                                     PerformTask.Goal(task="store groceries", scene=SCENE, condition="STARS"),
                                     timeout=120)
        assert result.success, result.message
        assert result.usage.calls == 0
        assert result.satisfied == local.satisfied
    finally:
        client.close()
        code, out = ros_testing.stop_process(proc, signal.SIGINT, timeout=30)
    assert code == 0, out
