"""The web_operator node in a real graph: a phone paired with `task-learning operator --web`
answers a stack node's question through the oversight node's services, signed as the paired
operator; the robot's camera frame is shown with the question; the oversight node stores who
answered, through which client, and when."""
from __future__ import annotations

import re
import socket
import threading

import numpy as np
import pytest

from task_learning.kb import KnowledgeBase
from task_learning.types import AnswerKind
from test.ros_testing import CLI
from test.web_panel_helpers import PageClient, mug_request

pytest.importorskip("rclpy")
from sensor_msgs.msg import Image

from task_learning_nodes.clients.oversight_client import OversightClient
from task_learning_nodes.plumbing.camera_topics import image_msg


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.timeout(180)
def test_a_phone_answers_through_the_oversight_node(ros_graph, tmp_path) -> None:
    db = tmp_path / "kb.sqlite"
    port = free_port()
    oversight = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=60.0")
    oversight.wait_for_line("oversight ready", timeout=60)
    web = ros_graph.start_node("web_operator", "-p", f"db_path:={db}", "-p", f"port:={port}")
    url = web.wait_for_line(r"web operator panel at (http://127\.0\.0\.1:\d+/)", timeout=60).group(1)
    assert url == f"http://127.0.0.1:{port}/"

    # `task-learning operator --web` asks the node where it listens and which knowledge base it pairs in
    printed = ros_graph.run([CLI, "operator", "--web", "--name", "alice-phone", "--wait", "30"], timeout=60)
    assert printed.returncode == 0, printed.stderr
    link = re.search(r"open \(or scan\): (\S+#pair=(\S+))", printed.stdout)
    assert link and link.group(1).startswith(url) and "█" in printed.stdout

    client = ros_graph.client("web_test")
    camera = client.node.create_publisher(Image, "camera/color/image_raw", 1)
    frame = np.zeros((48, 64, 3), np.uint8)
    frame[:, :32] = (200, 30, 30)
    stop = threading.Event()

    def publish() -> None:  # the camera keeps publishing, as a real one does
        while not stop.is_set():
            camera.publish(image_msg(frame, "rgb8", client.node.get_clock().now().to_msg(), "camera"))
            stop.wait(0.1)

    threading.Thread(target=publish, daemon=True).start()
    planner = OversightClient(client.node, name="planner", asker="planner", service_wait_s=30)
    asked: dict = {}
    try:
        phone = PageClient(url)
        assert phone.pair(link.group(2)).status_code == 200
        assert phone.session().json()["operator"] == "alice-phone"
        thread = threading.Thread(target=lambda: asked.setdefault("answer", planner.ask(mug_request("mine"))))
        thread.start()
        states = phone.states()
        try:
            # the question, then (at once, or when the first frame comes) with the camera's frame
            state = next(s for s in states if s["pending"] and s["pending"][0]["has_image"])
            (question,) = state["pending"]
            assert question["object"] == "mug" and question["asked_by"] == "planner"
            assert question["id"] != "mine"  # the oversight node's own id
            image = phone.http.get(f"/api/questions/{question['id']}/image")
            assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
            assert image.content[:2] == b"\xff\xd8"
            assert PageClient(url).http.get(f"/api/questions/{question['id']}/image").status_code == 401
            reply = phone.answer(question["id"], question["nonce"], "yes")
            assert reply.status_code == 200, reply.text
        finally:
            states.close()
        thread.join(timeout=30)
    finally:
        stop.set()
    answer = asked["answer"]
    assert answer.answer is AnswerKind.YES and answer.operator == "alice-phone"
    assert answer.client == "/web_operator (web 127.0.0.1)" and answer.confirmation_id
    with KnowledgeBase(db) as kb:
        (row,) = [r for r in kb.question_log() if r["answer"]]
    assert row["operator"] == "alice-phone" and row["verified"] == 1
    assert row["client"] == "/web_operator (web 127.0.0.1)" and row["answered_at"] > 0

