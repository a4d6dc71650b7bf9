"""Issue 30 on the ROS graph: /diagnostics from every node (a killed LLM endpoint shows as ERROR
within 5 s), a PerformTask recorded by the planner (episode_dir) and replayed in-process, and
the live view node serving the STARS tree to a Foxglove WebSocket client while it grows."""
from __future__ import annotations

import asyncio
import json
import re
import struct
import threading
import time

import pytest

from task_learning.episode import messages as msgs
from task_learning.episode.reader import open_episode
from task_learning.planning.replay import replay_episode
from task_learning.testing.fake_server import FakeOpenAIServer
from task_learning_interfaces.action import PerformTask
from test.ros_testing import CLI, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCENE = "store_groceries"
GRAPH = ["perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner", "live_view"]
ERROR = b"\x02"


def test_every_node_reports_on_diagnostics_and_a_dead_llm_endpoint_turns_error(ros_graph, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray

    server = FakeOpenAIServer().start()
    # goal_elicitation with an OpenAI-compatible endpoint: the fake server (its nodes inherit
    # bringup's environment, OPENAI_BASE_URL included)
    ros_graph.start([CLI, "bringup", "--scene", SCENE, "--db", str(tmp_path / "kb.sqlite"), "--nodes", *GRAPH,
                     "--param", "goal_elicitation.llm:=openai", "--param", "live_view.port:=0"],
                    name="bringup", OPENAI_BASE_URL=server.base_url)
    client = ros_graph.client("diagnostics_test")
    latest: dict[str, tuple[bytes, str, float]] = {}
    lock = threading.Lock()

    def on_array(array: DiagnosticArray) -> None:
        with lock:
            for status in array.status:
                latest[status.name] = (bytes(status.level), status.message, time.monotonic())

    client.node.create_subscription(DiagnosticArray, "/diagnostics", on_array, 50)
    try:
        nodes = {"perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner", "live_view"}
        wait_until(lambda: nodes <= {name.split(":")[0] for name in dict(latest)}, 180, "a status from every node")
        llm = "goal_elicitation: llm"
        wait_until(lambda: latest.get(llm, (b"",))[0] == b"\x00", 30, "the LLM endpoint reachable")
        assert "reachable" in latest[llm][1]
        assert latest["planner: knowledge base"][0] == b"\x00"
        assert latest["oversight: oversight queue"][1].startswith("0 question")
        server.stop()
        killed = time.monotonic()
        wait_until(lambda: latest[llm][0] == ERROR and latest[llm][2] > killed, 5.0,
                   "goal_elicitation's llm status ERROR within 5 s of the endpoint's death")
        assert "unreachable" in latest[llm][1], latest[llm]
    finally:
        server.stop()


def test_a_recorded_perform_task_replays_and_the_live_view_serves_the_tree(ros_graph, tmp_path):
    import websockets

    episodes = tmp_path / "episodes"
    episodes.mkdir()
    db = tmp_path / "kb.sqlite"
    proc = ros_graph.start_cli("bringup", "--scene", SCENE, "--db", str(db), "--nodes",
                               "perception", "grounding", "oversight", "goal_elicitation", "planner", "live_view",
                               "--param", f"planner.episode_dir:={episodes}", "--param", "live_view.port:=0",
                               name="bringup")
    # paired in the oversight node's knowledge base: its signed answers count
    ros_graph.start_cli("operator", "--simulated", SCENE, "--wait", "60", "--db", str(db))
    url = proc.wait_for_line(r"live view on (ws://127\.0\.0\.1:\d+)", timeout=180).group(1)
    trees: list[dict] = []
    subscribed = threading.Event()
    done = threading.Event()

    async def watch() -> None:
        async with websockets.connect(url, subprotocols=["foxglove.websocket.v1", "foxglove.sdk.v1"]) as ws:
            while not done.is_set():
                try:
                    frame = await asyncio.wait_for(ws.recv(), 1.0)
                except asyncio.TimeoutError:
                    continue
                if isinstance(frame, str):
                    op = json.loads(frame)
                    if op["op"] == "advertise":
                        for channel in op["channels"]:
                            if channel["topic"] == msgs.STARS_TREE:
                                await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                                    {"id": 3, "channelId": channel["id"]}]}))
                                subscribed.set()
                elif frame[0] == 1:
                    trees.append(json.loads(frame[struct.calcsize("<BIQ"):]))

    viewer = threading.Thread(target=lambda: asyncio.run(watch()), daemon=True)
    viewer.start()
    client = ros_graph.client("episode_test")
    try:
        assert subscribed.wait(120), "the live view never advertised /stars_tree"
        goal = PerformTask.Goal(task="store groceries", scene=SCENE, condition="STARS+O")
        result, _feedback = client.send_goal(PerformTask, "perform_task", goal, timeout=400)
        assert result.success, result.message
        path = re.search(r"episode (\S+\.mcap)", result.message).group(1)
    finally:
        done.set()
        viewer.join(10)
    # The live view: the first object's tree, level by level, as STARS expanded it.
    first = trees[0]["goal"].split(" | ")[1]
    sizes = [len(t["nodes"]) for t in trees if t["goal"].split(" | ")[1] == first and t["goal"].endswith("| level")]
    assert len(sizes) >= 2 and sizes == sorted(sizes) and sizes[-1] > sizes[0]

    episode = open_episode(path)
    assert episode.metadata["recorded_by"] == "planner (PerformTask)" and episode.metadata["backend"] == "symbolic"
    counts = {topic: row["count"] for topic, row in episode.topics.items()}
    for topic in (msgs.WORLD_STATE, msgs.STARS_TREE, msgs.BCR_TREE, msgs.QUESTION, msgs.ANSWER, msgs.ACTION,
                  msgs.ACTION_OUTCOME, msgs.LEARNED_GOAL, msgs.LLM_CALLS, msgs.KB_CHANGES):
        assert counts.get(topic, 0) > 0, (topic, counts)
    assert counts[msgs.LEARNED_GOAL] == 15
    report = replay_episode(path)
    assert report.same, report.differences
    assert report.model_calls == 0 and report.operator_questions == 0 and report.answers_from_file >= 15
