"""A question the operator already answered is not put to them again: in-process, and across a
SIGKILL of the oversight node (restarted on the same knowledge base)."""
from __future__ import annotations

import json
import signal
import sys
import textwrap

from task_learning.kb import KnowledgeBase
from task_learning.oversight.memory import RememberingOperator
from task_learning.oversight.operator import ScriptedOperator
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest
from test.ros_testing import RosGraph, wait_until

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


ASK = textwrap.dedent("""
    import json, sys
    from task_learning.types import ConfirmationRequest
    from task_learning_nodes.clients.oversight_client import OversightClient
    client = OversightClient(name="planner", asker="planner", service_wait_s=20)
    answer = client.ask(ConfirmationRequest(sys.argv[1], sys.argv[2], "Stapler|1", "stapler in the bag",
                                            timeout_s=float(sys.argv[3])))
    print(json.dumps({"answer": answer.answer.value, "by": answer.operator}), flush=True)
    client.close()
""")


def _node(graph: RosGraph, db):
    return graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=30.0")


def _ask(graph: RosGraph, request_id: str, timeout_s: float):
    return graph.start([sys.executable, "-c", ASK, request_id, QUESTION, str(timeout_s)], name=f"asker {request_id}")


def test_oversight_node_restarted_after_sigkill_does_not_ask_again(ros_graph, tmp_path):
    from task_learning_interfaces.srv import ListPendingConfirmations
    from task_learning_nodes.clients.oversight_client import OversightClient
    from test.oversight_identity import paired

    db = tmp_path / "kb.sqlite"
    node = _node(ros_graph, db)
    client = ros_graph.client("memory_test")
    operator = OversightClient(client.node, name="alice", credentials=paired(db, "alice"), service_wait_s=30)
    asker = _ask(ros_graph, "first", 30.0)
    pending = wait_until(lambda: client.call(ListPendingConfirmations, "oversight/list_pending",
                                             ListPendingConfirmations.Request()).pending, 30,
                         "the question reaching the oversight node")
    assert [p.question for p in pending] == [QUESTION] and pending[0].asked_by == "planner"
    reply = operator.submit(pending[0].request_id, "yes")
    assert reply.accepted, reply.message
    operator.close()
    client.close()
    assert asker.wait(20) == 0, asker.output
    assert json.loads(asker.stdout.strip().splitlines()[-1])["answer"] == "yes"
    node.send_signal(signal.SIGKILL)
    node.wait(10)

    node = _node(ros_graph, db)  # the same knowledge base after a crash
    asker = _ask(ros_graph, "again", 10.0)  # nobody will answer: only memory can say yes
    assert asker.wait(30) == 0, asker.output
    result = json.loads(asker.stdout.strip().splitlines()[-1])
    # answered from memory ("remembered"), not by the 10 s timeout (whose answer is "timeout")
    assert result["answer"] == "yes" and "remembered" in result["by"], result
    code, out = node.stop(signal.SIGINT, timeout=15)
    assert code == 0, out
