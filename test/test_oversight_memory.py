"""A question the operator already answered is not put to them again: in-process, and across a
SIGKILL of the oversight node (restarted on the same knowledge base)."""
from __future__ import annotations

import json
import signal
import sys
import textwrap
import time

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.oversight.memory import RememberingOperator
from task_learning.oversight.operator import ScriptedOperator
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest

QUESTION = "For a stapler in the bag is the goal that the stapler is in the drawer and the drawer is closed?"


def _ask_and_record(operator, kb, request_id: str) -> ConfirmationAnswer:
    """What the +O flow does: record the question, ask, record the answer."""
    request = ConfirmationRequest(request_id, QUESTION, "Stapler|1", "stapler in the bag")
    kb.record_question(request, task="organize office")
    answer = operator.ask(request)
    kb.record_answer(answer)
    return answer


def test_answered_question_is_answered_from_memory_and_timeouts_are_asked_again(tmp_path):
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb:
        person = ScriptedOperator(["timeout", "yes"])  # two answers; a third ask would fail
        memory = RememberingOperator(person, kb, task="organize office")
        first = _ask_and_record(memory, kb, "q1")
        assert first.answer is AnswerKind.TIMEOUT
        second = _ask_and_record(memory, kb, "q2")  # a timeout is no answer: asked again
        assert second.answer is AnswerKind.YES and memory.remembered == 0
        third = _ask_and_record(memory, kb, "q3")
        assert third.answer is AnswerKind.YES and third.request_id == "q3"
        assert memory.remembered == 1 and "remembered" in third.operator
        assert len(person.asked) == 2
        other = RememberingOperator(ScriptedOperator(["no"]), kb, task="tidy kitchen")
        assert _ask_and_record(other, kb, "q4").answer is AnswerKind.NO  # another task: asked


ros_testing = pytest.importorskip("test.ros_testing")
DOMAIN = 24

ASK = textwrap.dedent("""
    import json, sys
    from task_learning.types import ConfirmationRequest
    from task_learning_nodes.oversight_client import OversightClient
    client = OversightClient(name="asker", service_wait_s=20)
    answer = client.ask(ConfirmationRequest(sys.argv[1], sys.argv[2], "Stapler|1", "stapler in the bag",
                                            timeout_s=float(sys.argv[3])))
    print(json.dumps({"answer": answer.answer.value, "by": answer.operator}), flush=True)
    client.close()
""")


def _node(db):
    return ros_testing.start_process(
        [sys.executable, "-m", "task_learning_nodes.oversight", "--ros-args", "-p", f"db_path:={db}",
         "-p", "timeout_s:=30.0"], DOMAIN)


def _ask(request_id: str, timeout_s: float):
    return ros_testing.start_process([sys.executable, "-c", ASK, request_id, QUESTION, str(timeout_s)], DOMAIN)


def test_oversight_node_restarted_after_sigkill_does_not_ask_again(tmp_path):
    from task_learning_interfaces.srv import AnswerConfirmation, ListPendingConfirmations

    db = tmp_path / "kb.sqlite"
    node = _node(db)
    client = ros_testing.RosClient(DOMAIN, "memory_test")
    try:
        asker = _ask("first", 30.0)
        deadline = time.time() + 30
        while time.time() < deadline:
            pending = client.call(ListPendingConfirmations, "oversight/list_pending",
                                  ListPendingConfirmations.Request()).pending
            if pending:
                break
            time.sleep(0.2)
        assert [p.request_id for p in pending] == ["first"]
        from task_learning_nodes import convert

        answer = convert.confirmation_answer_to_msg(ConfirmationAnswer("first", AnswerKind.YES, operator="panel"))
        reply = client.call(AnswerConfirmation, "oversight/answer", AnswerConfirmation.Request(answer=answer))
        assert reply.accepted, reply.message
        code, out = ros_testing.stop_process(asker, sig=None, timeout=20)
        assert json.loads(out.strip().splitlines()[-1])["answer"] == "yes"
        node.send_signal(signal.SIGKILL)
        node.wait(timeout=10)

        node = _node(db)  # the same knowledge base after a crash
        started = time.time()
        asker = _ask("again", 10.0)  # nobody will answer: only memory can say yes
        code, out = ros_testing.stop_process(asker, sig=None, timeout=30)
        result = json.loads(out.strip().splitlines()[-1])
        assert result["answer"] == "yes" and "remembered" in result["by"], result
        assert time.time() - started < 10.0  # answered at once, not after the timeout
    finally:
        client.close()
        ros_testing.stop_process(node, signal.SIGINT, timeout=15)
