"""goal_elicitation_node as a separate process answering LearnGoal goals (replayed mug example)."""
from __future__ import annotations

from pathlib import Path

import pytest

from test.ros_testing import wait_future, wait_until

REPO = Path(__file__).resolve().parents[2]
CUPBOARD_CLOSED = "the goal is that the mug is in the cupboard and the cupboard is closed"


@pytest.fixture(scope="module")
def node(ros_module_graph, tmp_path_factory):
    from task_learning.testing.mug_example import build_mug_cassette

    cassette = build_mug_cassette(tmp_path_factory.mktemp("cassette") / "mug.jsonl")
    proc = ros_module_graph.start_node("goal_elicitation", "-p", "scene:=tidy_kitchen",
                                       "-p", f"llm:=replay:{cassette}", "-p", "llm_cache:=none",
                                       params_file="goal_elicitation.yaml")
    yield proc
    code, out = proc.stop()
    assert code == 0, out


@pytest.fixture(scope="module")
def action_client(ros_module_graph, node):
    from task_learning_interfaces.action import LearnGoal
    from task_learning_nodes.plumbing.node_base import ActionClient

    ros = ros_module_graph.client("stars_node_test")
    client = ActionClient(ros.node, LearnGoal, "learn_goal")
    assert client.wait_for_server(timeout_sec=60.0), "goal_elicitation_node did not come up"
    yield client
    client.destroy()


def send(client, object_id, condition="STARS", task="tidy kitchen"):
    """The result, and the feedback received by then (the last messages may come after it)."""
    from task_learning_interfaces.action import LearnGoal

    goal = LearnGoal.Goal(task=task, object_id=object_id, context=[], condition=condition)
    feedback = []
    handle = wait_future(client.send_goal_async(goal, feedback_callback=lambda fb: feedback.append(fb.feedback)),
                         30.0, "LearnGoal goal")
    assert handle.accepted
    result = wait_future(handle.get_result_async(), 90.0, "LearnGoal result")
    return result.result, list(feedback)


def test_learn_goal_for_the_mug_in_the_dish_rack(action_client):
    result, feedback = send(action_client, "Mug|2")
    assert result.success, result.message
    assert result.chosen.text == CUPBOARD_CLOSED
    assert len(result.candidates) == 17 and result.counts.retrieved == 17
    by_text = {c.text: c for c in result.candidates}
    drawer = by_text["the goal is that the mug is in the drawer and the drawer is closed"]
    assert drawer.source == "repair" and drawer.repair_feedback == "No. Cannot see a cabinet."
    assert drawer.parent_id == by_text["the goal is that the mug is in the cabinet and the cabinet is closed"].id
    cabinet = by_text["the goal is that the mug is in the cabinet and the cabinet is closed"]
    assert cabinet.analyzed and not cabinet.viable and cabinet.mismatches[0].kind == "ungrounded_object"
    assert result.usage.calls == 24 and {u.prompt_type for u in result.usage.by_type} >= {
        "initial", "recurse", "repair", "repair_recurse", "selection"}
    # Feedback is not ordered against the result: only what arrived is checked (in order, known stages)
    stages = [f.stage for f in feedback]
    assert set(stages) <= {"retrieve", "recurse", "analyze", "repair", "select", "done"}, stages
    assert "done" not in stages[:-1] and "retrieve" not in stages[1:]


def test_bad_goals_and_llm_failures_are_outcomes_and_the_node_keeps_serving(action_client, node):
    result, _ = send(action_client, "Cabinet|9")
    assert not result.success and "Cabinet|9" in result.message
    result, _ = send(action_client, "Mug|2", condition="STARZ")
    assert not result.success and "unknown condition" in result.message
    # An object the cassette knows nothing about: every request fails like a dead endpoint.
    result, _ = send(action_client, "Plate|1")
    assert not result.success and "llm_failed" in result.message
    assert result.usage.failures >= 1 and len(result.candidates) == 0
    result, _ = send(action_client, "Mug|2", condition="ST")
    assert result.success and result.chosen.text.endswith("cabinet is closed")
    assert node.poll() is None


@pytest.fixture(scope="module")
def oversight_node(ros_module_graph, tmp_path_factory, node):
    db = tmp_path_factory.mktemp("oversight_db") / "kb.sqlite"
    proc = ros_module_graph.start_node("oversight", "-p", "timeout_s:=30.0", "-p", f"db_path:={db}",
                                       "-p", "task:=tidy kitchen")
    proc.db = db
    yield proc
    code, out = proc.stop()
    assert code == 0, out


def test_stars_plus_o_asks_the_operator_through_the_oversight_node(ros_module_graph, action_client,
                                                                   oversight_node):
    import rclpy

    from task_learning_interfaces.action import LearnGoal
    from task_learning_nodes.clients.oversight_client import OversightClient

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_module_graph.domain_id)
    from test.oversight_identity import paired

    operator = OversightClient(name="test_operator", context=context, service_wait_s=30,
                               credentials=paired(oversight_node.db, "alice"))
    try:
        goal = LearnGoal.Goal(task="tidy kitchen", object_id="Mug|2", context=[], condition="stars_plus_o")
        handle = wait_future(action_client.send_goal_async(goal), 30.0, "LearnGoal goal")
        result_future = handle.get_result_async()
        asked: list = []

        def answer_questions() -> bool:
            for request in operator.pending(fresh=True):
                if request.request_id not in {r.request_id for r in asked}:
                    asked.append(request)
                    operator.submit(request.request_id, "yes")
            return result_future.done()

        wait_until(answer_questions, 90.0, "the LearnGoal result", interval=0.1)
        result = result_future.result().result
    finally:
        operator.close()
        rclpy.shutdown(context=context)
    assert result.success, result.message
    assert [r.question for r in asked] == [
        "For a mug in the dish rack is the goal that the mug is in the cupboard and the cupboard is closed?"]
    assert result.chosen.text == CUPBOARD_CLOSED
    assert len(result.confirmation_id) == 32  # the oversight node's id of alice's yes, for the planner
    assert result.counts.proposed == 1 and result.counts.yes_no == 1
