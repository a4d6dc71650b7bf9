"""goal_elicitation_node as a separate process answering LearnGoal goals (replayed mug example)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
DOMAIN_ID = "16"
ROS_ENV = {"ROS_DOMAIN_ID": DOMAIN_ID, "ROS_HOME": str(REPO / ".ros"),
           "ROS_LOG_DIR": str(REPO / ".ros" / "log"), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
CUPBOARD_CLOSED = "the goal is that the mug is in the cupboard and the cupboard is closed"


@pytest.fixture(scope="module")
def ros_env():
    """This file's ROS graph."""
    from test.ros_testing import ros_environ

    with ros_environ(ROS_ENV) as env:
        yield env


@pytest.fixture(scope="module")
def node(ros_env, tmp_path_factory):
    from task_learning.stars.mug_example import build_mug_cassette

    cassette = build_mug_cassette(tmp_path_factory.mktemp("cassette") / "mug.jsonl")
    proc = subprocess.Popen(
        [PY, "-m", "task_learning_nodes.goal_elicitation", "--ros-args",
         "--params-file", str(REPO / "config" / "nodes" / "goal_elicitation.yaml"),
         "-p", "scene:=tidy_kitchen", "-p", f"llm:=replay:{cassette}", "-p", "llm_cache:=none"],
        env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    yield proc
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="module")
def action_client(ros_env, node):
    import rclpy
    from rclpy.action import ActionClient

    from task_learning_interfaces.action import LearnGoal

    context = rclpy.Context()
    rclpy.init(context=context)
    ros_node = rclpy.create_node("stars_node_test", context=context)
    client = ActionClient(ros_node, LearnGoal, "learn_goal")
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(ros_node)
    if not client.wait_for_server(timeout_sec=30.0):
        node.terminate()
        out = node.communicate(timeout=10)[0]
        pytest.fail(f"goal_elicitation_node did not come up:\n{out}")
    yield client, executor
    client.destroy()
    ros_node.destroy_node()
    rclpy.shutdown(context=context)


def send(action_client, object_id, condition="STARS", task="tidy kitchen"):
    from task_learning_interfaces.action import LearnGoal

    client, executor = action_client
    goal = LearnGoal.Goal(task=task, object_id=object_id, context=[], condition=condition)
    feedback = []
    future = client.send_goal_async(goal, feedback_callback=lambda fb: feedback.append(fb.feedback))
    executor.spin_until_future_complete(future, timeout_sec=30.0)
    handle = future.result()
    assert handle is not None and handle.accepted
    result_future = handle.get_result_async()
    executor.spin_until_future_complete(result_future, timeout_sec=60.0)
    assert result_future.done(), "no result in time"
    executor.spin_once(timeout_sec=0.2)  # late feedback messages
    return result_future.result().result, feedback


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
    stages = [f.stage for f in feedback]
    assert stages[0] == "retrieve" and stages[-1] == "done"
    assert {"recurse", "analyze", "repair", "select"} <= set(stages)


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
def oversight_node(ros_env, tmp_path_factory, node):
    db = tmp_path_factory.mktemp("oversight_db") / "kb.sqlite"
    proc = subprocess.Popen(
        [PY, "-m", "task_learning_nodes.oversight", "--ros-args", "-p", "timeout_s:=30.0",
         "-p", f"db_path:={db}", "-p", "task:=tidy kitchen"],
        env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    yield proc
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_stars_plus_o_asks_the_operator_through_the_oversight_node(action_client, oversight_node):
    import rclpy

    from task_learning_interfaces.action import LearnGoal
    from task_learning_nodes.oversight_client import OversightClient

    context = rclpy.Context()
    rclpy.init(context=context)
    operator = OversightClient(name="test_operator", context=context, service_wait_s=15)
    try:
        client, executor = action_client
        goal = LearnGoal.Goal(task="tidy kitchen", object_id="Mug|2", context=[], condition="stars_plus_o")
        future = client.send_goal_async(goal)
        executor.spin_until_future_complete(future, timeout_sec=30.0)
        result_future = future.result().get_result_async()
        asked = []
        deadline = time.monotonic() + 60
        while not result_future.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            for request in operator.pending(fresh=True):
                if request.request_id not in {r.request_id for r in asked}:
                    asked.append(request)
                    operator.submit(request.request_id, "yes")
        assert result_future.done(), "no result in time"
        result = result_future.result().result
    finally:
        operator.close()
        rclpy.shutdown(context=context)
    assert result.success, result.message
    assert [r.question for r in asked] == [
        "For a mug in the dish rack is the goal that the mug is in the cupboard and the cupboard is closed?"]
    assert result.chosen.text == CUPBOARD_CLOSED
    assert result.counts.proposed == 1 and result.counts.yes_no == 1
