"""Issue 10, oversight node on a real graph: a Confirm request's timeout is bounded (inf, NaN,
negative), the questions that may wait are bounded and a request beyond them is refused at once
while list/answer stay served, and a timeout is stored as a timeout (never replayed as a "no")."""
from __future__ import annotations

import math
import signal

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest

pytest.importorskip("rclpy")
from task_learning_interfaces.srv import (  # noqa: E402
    AnswerConfirmation,
    Confirm,
    ListPendingConfirmations,
)
from task_learning_nodes import convert  # noqa: E402
from test.ros_testing import wait_until as _wait  # noqa: E402


def test_oversight_bounds_timeouts_and_capacity_and_stores_timeouts_as_timeouts(ros_graph, tmp_path):
    db = tmp_path / "kb.sqlite"
    node = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=2.0",
                                "-p", "max_timeout_s:=4.0", "-p", "max_pending:=2",
                                "-p", "task:=store groceries")
    client = ros_graph.client("oversight_bounds")
    confirm = client.node.create_client(Confirm, "oversight/confirm")

    def ask(request_id: str, timeout_s: float, question: str = ""):
        request = ConfirmationRequest(request_id, question or f"For a stapler in the bag is the goal "
                                      f"that the stapler is in the drawer ({request_id})?", "Stapler|1",
                                      "stapler in the bag", timeout_s=timeout_s)
        return confirm.call_async(Confirm.Request(request=convert.confirmation_request_to_msg(request)))

    def pending() -> list[str]:
        reply = client.call(ListPendingConfirmations, "oversight/list_pending",
                            ListPendingConfirmations.Request())
        return [p.request_id for p in reply.pending]

    def answer_of(future, timeout: float = 30.0):
        return convert.confirmation_answer_from_msg(
            client.wait_future(future, timeout, "confirm").answer)

    try:
        assert confirm.wait_for_service(timeout_sec=30)
        forever = ask("forever", math.inf)
        nan = ask("nan", math.nan)
        _wait(lambda: len(pending()) == 2, 30, "two questions waiting")
        # Beyond capacity: refused at once, with a reason, and the node still lists and answers.
        refused = answer_of(ask("third", 5.0), timeout=10.0)
        assert refused.answer is AnswerKind.TIMEOUT and "max_pending 2" in refused.description
        assert set(pending()) <= {"forever", "nan"}
        nan_answer = answer_of(nan)  # NaN: the node's default timeout, not forever
        assert nan_answer.operator == "timeout" and nan_answer.answer is AnswerKind.NO
        # inf: cut to max_timeout_s; it resolves on its own and is stored as a timeout.
        timed_out = answer_of(forever)
        assert timed_out.operator == "timeout" and timed_out.answer is not AnswerKind.YES
        with KnowledgeBase(db) as kb:
            log = {row["request_id"]: row for row in kb.question_log()}
        assert log["forever"]["answer"] == "timeout" and log["nan"]["answer"] == "timeout"
        assert "third" not in log

        # The same question again is put to the operator (a timeout is not remembered as "no"),
        # and the operator's answer goes through.
        question = log["forever"]["question"]
        again = ask("again", -1.0, question)
        _wait(lambda: pending() == ["again"], 30, "the question asked again")
        msg = convert.confirmation_answer_to_msg(ConfirmationAnswer("again", AnswerKind.YES, operator="panel"))
        reply = client.call(AnswerConfirmation, "oversight/answer", AnswerConfirmation.Request(answer=msg))
        assert reply.accepted, reply.message
        assert answer_of(again).answer is AnswerKind.YES
    finally:
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=20)
    assert code == 0, out
