"""Issue 10, oversight node on a real graph: a Confirm request's timeout is bounded (inf, NaN,
negative), the questions that may wait are bounded and a request beyond them is refused at once
while list/answer stay served, and a timeout is stored as a timeout (never replayed as a "no")."""
from __future__ import annotations

import math
import signal
import threading

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest

pytest.importorskip("rclpy")
from task_learning_interfaces.srv import ListPendingConfirmations
from task_learning_nodes.clients.oversight_client import OversightClient
from test.oversight_identity import paired
from test.ros_testing import wait_until as _wait


def test_oversight_bounds_timeouts_and_capacity_and_stores_timeouts_as_timeouts(ros_graph, tmp_path):
    db = tmp_path / "kb.sqlite"
    node = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=2.0",
                                "-p", "max_timeout_s:=4.0", "-p", "max_pending:=2",
                                "-p", "max_pending_per_asker:=0", "-p", "task:=store groceries")
    operator_creds = paired(db, "alice")
    client = ros_graph.client("oversight_bounds")
    planner = OversightClient(client.node, name="planner", asker="planner", service_wait_s=30,
                              confirm_margin_s=30)
    operator = OversightClient(client.node, name="alice", credentials=operator_creds, service_wait_s=30)
    answers: dict[str, ConfirmationAnswer] = {}
    threads: list[threading.Thread] = []

    def ask(request_id: str, timeout_s: float, question: str = "") -> threading.Thread:
        request = ConfirmationRequest(request_id, question or f"For a stapler in the bag is the goal "
                                      f"that the stapler is in the drawer ({request_id})?", "Stapler|1",
                                      "stapler in the bag", timeout_s=timeout_s)
        thread = threading.Thread(target=lambda: answers.setdefault(request_id, planner.ask(request)))
        thread.start()
        threads.append(thread)
        return thread

    def pending() -> list[str]:
        reply = client.call(ListPendingConfirmations, "oversight/list_pending",
                            ListPendingConfirmations.Request())
        return [p.question for p in reply.pending]

    try:
        assert planner.available(30)
        forever = ask("forever", math.inf)
        nan = ask("nan", math.nan)
        _wait(lambda: len(pending()) == 2, 30, "two questions waiting")
        # Beyond capacity: refused at once, with a reason, and the node still lists and answers.
        ask("third", 5.0).join(10)
        refused = answers["third"]
        assert refused.answer is AnswerKind.TIMEOUT and "max_pending 2" in refused.description
        assert len(pending()) <= 2
        nan.join(30)  # NaN: the node's default timeout, not forever
        assert answers["nan"].operator == "timeout" and answers["nan"].answer is AnswerKind.NO
        forever.join(30)  # inf: cut to max_timeout_s; it resolves on its own, stored as a timeout
        assert answers["forever"].operator == "timeout" and answers["forever"].answer is not AnswerKind.YES
        with KnowledgeBase(db) as kb:
            log = {row["question"]: row for row in kb.question_log()}
        question = next(q for q in log if "(forever)" in q)
        assert log[question]["answer"] == "timeout" and next(r for q, r in log.items() if "(nan)" in q)["answer"] == "timeout"
        assert not any("(third)" in q for q in log)

        # The same question again is put to the operator (a timeout is not remembered as "no"),
        # and the operator's answer goes through.
        again = ask("again", -1.0, question)
        _wait(lambda: pending() == [question], 30, "the question asked again")
        (waiting,) = client.call(ListPendingConfirmations, "oversight/list_pending",
                                 ListPendingConfirmations.Request()).pending
        reply = operator.submit(waiting.request_id, "yes")
        assert reply.accepted, reply.message
        again.join(30)
        assert answers["again"].answer is AnswerKind.YES
    finally:
        for thread in threads:
            thread.join(30)
        planner.close()
        operator.close()
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=20)
    assert code == 0, out
