"""The robot's day through the whole ROS graph, run by the anticipation node (AnticipateDay, asked by
`anticipate --graph`): the simulated human does its routine in the perception node's world, the
node anticipates after each finished task, proposes every anticipated task through the oversight
node, and the planner node performs only the confirmed ones (ReachGoal on perception's world). A "no" and an unanswered question confirm nothing, and the planner itself
refuses literals no operator confirmed."""
from __future__ import annotations

import json
import signal

import pytest

from task_learning.anticipation.config import load_anticipation_config
from task_learning.anticipation.robot_day import load_robot_goals
from task_learning.kb import KnowledgeBase
from test.ros_testing import ROOT, wait_until

pytest.importorskip("rclpy")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCENE = ROOT / "config" / "anticipation" / "home_scene.yaml"


def _bringup(ros_graph, db, oversight_db, timeout_s: float):
    return ros_graph.start_cli(
        "bringup", "--nodes", "oversight", "perception", "planner", "anticipation", "--db", str(db),
        "--param", f"perception.scene:={SCENE}", "--param", f"oversight.db_path:={oversight_db}",
        "--param", f"oversight.timeout_s:={timeout_s}")


def _day(ros_graph, day: str, *extra: str):
    return ros_graph.start_cli("anticipate", "--day", day, "--robot", "--oversight", "ros", "--graph",
                               "--wait", "60", "--json", *extra)


def _world(client) -> dict:
    from task_learning_interfaces.srv import QueryWorld
    from task_learning_nodes import convert

    response = client.call(QueryWorld, "query_world", QueryWorld.Request(query="", include_world=True), timeout=60)
    return convert.metadata_from_world_state_msg(response.world)


def _holds(metadata: dict, literals) -> bool:
    from task_learning.bcr.literals import StateView, holds

    state = StateView(metadata)
    return all(holds(lit, state) for lit in literals)


def test_confirmed_tasks_are_performed_by_the_planner(ros_graph, tmp_path):
    goals = load_robot_goals(tasks=load_anticipation_config().tasks)
    db = tmp_path / "planner.sqlite"
    graph = _bringup(ros_graph, db, tmp_path / "oversight.sqlite", 30.0)
    client = ros_graph.client("anticipation_test")
    try:
        proc = _day(ros_graph, "trace_01")  # the simulated operator answers through the node
        assert proc.wait(300) == 0, proc.report()
        data = json.loads(proc.stdout)
        assert data["finished"] and data["unconfirmed_executions"] == 0
        assert data["anticipations"] and data["asked"] and data["confirmed"]
        assert data["performed"] and all(p["via"] == "planner" and p["success"] for p in data["performed"])
        assert {p["task"] for p in data["performed"]} <= set(data["confirmed"])
        assert data["done_by_robot"] and data["done"] == data["routine"]
        # The perception node's world is where it happened: every task of the routine holds there.
        world = _world(client)
        assert all(_holds(world, goals.tasks[t]) for t in data["routine"])
    finally:
        client.close()
        code, out = graph.stop(signal.SIGINT, timeout=60)
    assert code == 0, out
    with KnowledgeBase(db) as kb:  # each yes served one execution: nothing stays confirmed
        anticipated = [g for g in kb.goals() if g.task == "task anticipation"]
    assert {g.text for g in anticipated} == set(p["task"] for p in data["performed"])
    assert not any(g.confirmed for g in anticipated)


def test_a_no_and_an_unanswered_question_confirm_nothing(ros_graph, tmp_path):
    from task_learning_interfaces.action import ReachGoal
    from task_learning_interfaces.msg import ConfirmationAnswer
    from task_learning_interfaces.srv import AnswerConfirmation, ListPendingConfirmations
    from task_learning_nodes import convert

    goals = load_robot_goals(tasks=load_anticipation_config().tasks)
    db = tmp_path / "planner.sqlite"
    graph = _bringup(ros_graph, db, tmp_path / "oversight.sqlite", 12.0)
    client = ros_graph.client("anticipation_test")
    try:
        # Nobody but this test answers: the first question gets "no", the second none (it times
        # out at the node's 12 s), every later one "yes".
        proc = _day(ros_graph, "trace_03", "--operator", "terminal")
        answered: dict[str, str] = {}
        seen: list[str] = []

        def answer_next() -> bool:
            pending = client.call(ListPendingConfirmations, "oversight/list_pending",
                                  ListPendingConfirmations.Request(), timeout=60).pending
            for request in pending:
                if request.request_id in seen:
                    continue
                seen.append(request.request_id)
                if len(seen) == 2:
                    continue  # left unanswered
                reply = "no" if len(seen) == 1 else "yes"
                msg = ConfirmationAnswer(request_id=request.request_id, answer=reply, answered_by="test")
                accepted = client.call(AnswerConfirmation, "oversight/answer",
                                       AnswerConfirmation.Request(answer=msg), timeout=60).accepted
                assert accepted, request.question
                answered[request.object_description] = reply
            return proc.poll() is not None

        wait_until(answer_next, 300, "the robot's day to end", interval=0.1)
        assert proc.wait(60) == 0, proc.report()
        data = json.loads(proc.stdout)
        assert len(seen) == len(data["asked"]) >= 3
        refused = [t for t, a in answered.items() if a == "no"]
        unanswered = data["asked"][1]
        assert refused == [data["asked"][0]]
        assert set(data["refused"]) == {data["asked"][0], unanswered}
        assert set(data["confirmed"]) == {t for t, a in answered.items() if a == "yes"}
        assert data["unconfirmed_executions"] == 0 and data["finished"]
        performed = {p["task"] for p in data["performed"]}
        assert performed <= set(data["confirmed"]) and not performed & set(data["refused"])

        # The planner's own gate: literals of the refused task are not reached on request.
        literals = [convert.goal_literal_to_msg(lit) for lit in goals.tasks[refused[0]]]
        result, _ = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=literals), timeout=120)
        assert not result.success and "no confirmed goal covers" in result.message
    finally:
        client.close()
        code, out = graph.stop(signal.SIGINT, timeout=60)
    assert code == 0, out


def test_the_node_withdraws_confirmations_a_killed_day_left(ros_graph, tmp_path):
    """A kill between the yes written for the planner and its withdrawal leaves one goal confirmed;
    the node withdraws such leftovers when it starts (and stops), and nothing else. An unknown day
    is refused with the days there are."""
    from task_learning.kb.store import Confirmation, LearnedGoal
    from task_learning_interfaces.action import AnticipateDay

    db = tmp_path / "kb.sqlite"
    with KnowledgeBase(db) as kb:
        for task, context in (("task anticipation", "Prepare coffee (trace_01, 2026-11-22)"), ("tidy", "Mug")):
            kb.learn_goal(LearnedGoal(task=task, context=context, object_type="Mug", text="t", literals=[],
                                      condition="anticipation", confirmation=Confirmation.OPERATOR_YES))
    node = ros_graph.start_node("anticipation", "-p", f"db_path:={db}", params_file="anticipation.yaml")
    node.wait_for_line(r"withdrew 1 confirmation\(s\) of anticipated tasks", timeout=60)
    node.wait_for_line(r"anticipation ready", timeout=60)
    client = ros_graph.client("anticipation_test")
    try:
        result, _ = client.send_goal(AnticipateDay, "anticipate_day", AnticipateDay.Goal(day="someday"), timeout=60)
    finally:
        client.close()
    assert not result.success and not result.result_json
    assert "unknown day 'someday'" in result.message and "trace_01" in result.message
    code, out = node.stop(signal.SIGINT, timeout=60)
    assert code == 0, out
    with KnowledgeBase(db) as kb:
        assert {(g.task, g.confirmed) for g in kb.goals()} == {("task anticipation", False), ("tidy", True)}
