"""The ROS graph on the `ai2thor` backend (`bringup --backend ai2thor`): perception drives the real
ai2thor Controller against the stand-in simulator process, publishes the camera topics stamped
like world_state, the planner learns tidy_floorplan1 to 100 % with STARS+O, Trial #2 makes no LLM
call and asks nothing, and a simulator that crashes mid-task aborts the goal with a reason naming
it, leaves the knowledge base intact, and a restarted perception node recovers."""
from __future__ import annotations

import signal
import sqlite3

import pytest

from ..thor_helpers import thor_env  # noqa: F401  (a fixture)

pytest.importorskip("ai2thor")
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image

from task_learning_interfaces.action import PerformTask
from task_learning_interfaces.msg import ActionCall as ActionCallMsg
from task_learning_interfaces.msg import WorldState
from task_learning_interfaces.srv import ExecuteAction
from test.ros_testing import CLI, RosGraph

pytestmark = [pytest.mark.usefixtures("thor_env"), pytest.mark.slow, pytest.mark.timeout(1200)]

SCENE = "tidy_floorplan1"
NODES = ["perception", "grounding", "oversight", "goal_elicitation", "planner"]
# Latched like the publishers, with room for every message: a busy test process must not lose the
# world_state published with a frame (KEEP_LAST with depth 1 would overwrite it, on either side).
LATCHED = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _graph(graph: RosGraph, db, nodes=NODES, **env: str):
    # world_state keeps its last 100 messages for reliable delivery (the node's default is 1): at
    # 10 Hz a busy test process would otherwise lose the one published with the last frame.
    procs = [graph.start([CLI, "bringup", "--backend", "ai2thor", "--scene", SCENE, "--db", str(db), "--nodes", *nodes,
                          "--param", "perception.qos_depth:=100"], name="bringup", **env)]
    if "oversight" in nodes:
        procs.append(graph.start_cli("operator", "--simulated", SCENE, "--wait", "60", "--db", str(db)))
    return procs


def _stop(procs):
    return [proc.stop(signal.SIGINT, timeout=30) for proc in reversed(procs)]


def _counts(db):
    conn = sqlite3.connect(db, timeout=5)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("goals", "policies")}
    finally:
        conn.close()


def _perform(client, timeout=600):
    goal = PerformTask.Goal(task="tidy kitchen", scene=SCENE, condition="STARS+O")
    result, _ = client.send_goal(PerformTask, "perform_task", goal, timeout=timeout)
    return result


def test_ai2thor_graph_learns_the_floorplan_task_then_survives_a_simulator_crash(ros_graph, tmp_path):
    db = tmp_path / "kb.sqlite"
    procs = _graph(ros_graph, db)
    client = ros_graph.client("thor_test")
    try:
        color = client.subscribe_collect(Image, "camera/color/image_raw", LATCHED)
        depth = client.subscribe_collect(Image, "camera/depth/image_raw", LATCHED)
        info = client.subscribe_collect(CameraInfo, "camera/color/camera_info", LATCHED)
        states = client.subscribe_collect(WorldState, "world_state", LATCHED)
        result = _perform(client)
        assert result.success, result.message
        assert result.total == 10 and result.satisfied == 10, result.message
        # camera topics: the frames, their pinhole model, stamped like a world_state message
        color.wait_for(timeout=30)
        image = color.messages[-1]  # the frame after the last action (the first one predates us)
        assert (image.encoding, image.width, image.height, image.step) == ("rgb8", 300, 300, 900)
        assert len(image.data) == 300 * 300 * 3 and image.header.frame_id == "camera_color_optical_frame"
        metres = depth.wait_for(lambda m: m.header.stamp == image.header.stamp, timeout=30)
        assert metres.encoding == "32FC1" and metres.step == 1200
        camera = info.wait_for(lambda m: m.header.stamp == image.header.stamp, timeout=30)
        assert camera.k[0] == pytest.approx(150.0) and camera.k[2] == pytest.approx(149.5)
        states.wait_for(lambda m: m.header.stamp == image.header.stamp, timeout=30)
    finally:
        client.close()
        outputs = _stop(procs)
    code, out = outputs[-1]  # bringup (the operator ends with 130, its SIGINT exit code)
    assert code == 0, out
    learned = _counts(db)
    assert learned["goals"] == 9

    # Trial #2 on the same knowledge base: no LLM call, no question, still 100 %.
    procs = _graph(ros_graph, db)
    client = ros_graph.client("thor_test2")
    try:
        again = _perform(client)
        assert again.success and again.satisfied == again.total == 10, again.message
        assert again.usage.calls == 0 and again.counts.yes_no == 0 and again.counts.proposed == 0
    finally:
        client.close()
        _stop(procs)

    # The simulator crashes mid-task: the goal aborts naming it; the knowledge base is intact.
    procs = _graph(ros_graph, db, TASK_LEARNING_STANDIN_FAULT="crash:6")
    client = ros_graph.client("thor_test3")
    try:
        crashed = _perform(client, timeout=120)
        assert not crashed.success
        assert "AI2-THOR simulator" in crashed.message and "exited" in crashed.message, crashed.message
    finally:
        client.close()
        _stop(procs)
    assert _counts(db) == learned

    # A restarted perception node recovers (a new simulator process).
    procs = _graph(ros_graph, db, nodes=["perception"])
    client = ros_graph.client("thor_test4")
    try:
        call = ActionCallMsg(action="NavigateToObject", object_id="Apple|-00.47|+01.15|+00.48")
        reply = client.call(ExecuteAction, "execute_action", ExecuteAction.Request(call=call), timeout=60)
        assert reply.outcome.success, reply.outcome.error_message
    finally:
        client.close()
        _stop(procs)
