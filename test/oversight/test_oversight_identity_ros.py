"""Issue 34 point 2 and issue 31 point 6 through a real oversight node: an answer belongs to one
question and one paired operator; only the stack's nodes ask; a yes carries its question.

The attacks of the hostile battery, each refused with an answer: the pending questions answered
"yes" with `answered_by="panel"` by a client nobody paired; a signature of another operator, for
another question, or replayed; a Confirm from a stranger (the planted answer) — it is refused and
seeds no memory; a confirmation id checked twice, forged, or checked without the stack key. The
genuine answer goes through and is stored with who gave it, through which client, and when."""
from __future__ import annotations

import signal
import threading

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.oversight.pairing import OperatorCredentials, make_token
from task_learning.types import AnswerKind, ConfirmationRequest, GoalCandidate, GoalLiteral
from test.oversight_identity import paired
from test.ros_testing import CLI, wait_until

pytest.importorskip("rclpy")
from task_learning_interfaces.msg import ConfirmationAnswer as AnswerMsg
from task_learning_interfaces.srv import (
    AnswerConfirmation,
    CheckConfirmation,
    Confirm,
    ListPendingConfirmations,
)
from task_learning_nodes.clients.oversight_client import OversightClient
from task_learning_nodes.plumbing import convert

GARBAGE = GoalCandidate("the goal is that the eggs are in the garbage can", 1.0,
                        literals=[GoalLiteral("inside", ("Egg|1", "GarbageCan|1"))])
FRIDGE = GoalCandidate("the goal is that the eggs are in the fridge", 1.0,
                       literals=[GoalLiteral("inside", ("Egg|1", "Fridge|1"))])


def _question(request_id: str, cand: GoalCandidate) -> ConfirmationRequest:
    return ConfirmationRequest(request_id, f"For a eggs on the counter is the goal that {cand.text[17:]}?",
                               "Egg|1", "eggs on the counter", candidate=cand, candidates=[cand], timeout_s=60)


def _raw_answer(client, request_id: str, answer: str, *, by: str = "panel", signature: str = "",
                node: str = "/spoofer") -> AnswerConfirmation.Response:
    msg = AnswerMsg(request_id=request_id, answer=answer, answered_by=by, client=node)
    return client.call(AnswerConfirmation, "oversight/answer",
                       AnswerConfirmation.Request(answer=msg, signature=signature), timeout=30)


def _pending(client) -> list:
    return list(client.call(ListPendingConfirmations, "oversight/list_pending",
                            ListPendingConfirmations.Request(), timeout=30).pending)


def test_only_paired_operators_answer_and_only_the_stack_asks(ros_graph, tmp_path):
    db = tmp_path / "kb.sqlite"
    node = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=60.0")
    node.wait_for_line("oversight ready", timeout=60)
    alice = paired(db, "alice")
    client = ros_graph.client("identity_test")
    planner = OversightClient(client.node, name="planner", asker="planner", service_wait_s=30)
    operator = OversightClient(client.node, name="alice", credentials=alice, service_wait_s=30)
    asked: dict[str, object] = {}
    try:
        # A stranger's Confirm (the planted answer's first step) is refused at once, never asked.
        stranger = client.call(Confirm, "oversight/confirm", Confirm.Request(
            request=convert.confirmation_request_to_msg(_question("plant", FRIDGE)), asker="planner",
            nonce="n" * 32, sent_at=0.0, signature="0" * 64), timeout=30)
        assert stranger.answer.answer == "timeout" and "not signed" in stranger.answer.description
        assert not stranger.answer.confirmation_id and _pending(client) == []

        thread = threading.Thread(target=lambda: asked.setdefault("answer", planner.ask(_question("mine", FRIDGE))))
        thread.start()
        pending = wait_until(lambda: _pending(client), 30, "the planner's question pending")
        (question,) = pending
        qid = question.request_id
        assert qid != "mine" and len(qid) == 32 and question.asked_by == "planner"

        # Spoofed answers: nobody paired, a forged signature, another operator's key, another
        # question's signature: each refused with a message, and the question still waits.
        assert "not signed by a paired operator" in _raw_answer(client, qid, "yes").message
        assert not _raw_answer(client, qid, "yes", by="alice", signature="f" * 64).accepted
        mallory = OperatorCredentials.from_token(make_token("alice")[0])  # not the paired secret
        assert not _raw_answer(client, qid, "yes", by="alice", node="/x",
                               signature=mallory.sign_answer(qid, "yes", "", "/x")).accepted
        other_question = alice.sign_answer("someotherquestion", "yes", "", "/x")
        assert not _raw_answer(client, qid, "yes", by="alice", node="/x", signature=other_question).accepted
        assert [p.request_id for p in _pending(client)] == [qid]

        # The genuine answer; its replay afterwards is refused.
        reply = operator.submit(qid, "yes")
        assert reply.accepted, reply.message
        thread.join(30)
        answer = asked["answer"]
        assert answer.answer is AnswerKind.YES and answer.request_id == "mine"
        assert answer.operator == "alice" and answer.client.endswith("identity_test")
        replay = _raw_answer(client, qid, "yes", by="alice", node=answer.client,
                             signature=alice.sign_answer(qid, "yes", "", answer.client))
        assert not replay.accepted and "no pending question" in replay.message

        # The confirmation: valid for the stack once, with its candidate; not without the key.
        forged = client.call(CheckConfirmation, "oversight/check_confirmation", CheckConfirmation.Request(
            confirmation_id=answer.confirmation_id, consume=True, asker="planner", nonce="m" * 32,
            sent_at=0.0, signature="0" * 64), timeout=30)
        assert not forged.valid and "not signed" in forged.message
        checked = planner.check(answer.confirmation_id, consume=True)
        assert checked.valid and checked.answered_by == "alice" and checked.question_id == qid
        assert checked.candidate.literals == FRIDGE.literals
        again = planner.check(answer.confirmation_id, consume=True)
        assert not again.valid and "already used" in again.message
        assert not planner.check("0" * 32, consume=False).valid

        # Remembered: the planner's same question is answered from memory with a new id.
        remembered = planner.ask(_question("mine-again", FRIDGE))
        assert remembered.answer is AnswerKind.YES and remembered.confirmation_id not in ("", answer.confirmation_id)
    finally:
        planner.close()
        operator.close()
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=30)
    assert code == 0, out
    with KnowledgeBase(db) as kb:
        rows = {r["request_id"]: r for r in kb.question_log()}
    row = rows[qid]
    assert (row["answer"], row["operator"], row["verified"], row["asked_by"]) == ("yes", "alice", 1, "planner")
    assert row["client"].endswith("identity_test") and row["answered_at"] and row["confirmation_id"]
    assert "plant" not in rows
    shown = ros_graph.run([CLI, "kb", "show", "--db", str(db)], timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert f"[{qid}] asked by planner," in shown.stdout and "-> yes by alice (paired operator) via" in shown.stdout


def test_without_a_paired_operator_nothing_is_confirmed(ros_graph, tmp_path):
    """No knowledge base (db_path empty; by default the node has the graph's default one): nobody
    can be paired, and every answer is refused with the reason."""
    node = ros_graph.start_node("oversight", "-p", "timeout_s:=3.0", "-p", "db_path:=''")
    client = ros_graph.client("unpaired_test")
    planner = OversightClient(client.node, name="planner", asker="planner", service_wait_s=30)
    operator = OversightClient(client.node, name="bob", credentials=paired(tmp_path / "elsewhere.sqlite", "bob"),
                               service_wait_s=30)
    try:
        box: dict[str, object] = {}
        question = _question("q", GARBAGE)
        question.timeout_s = 3.0
        thread = threading.Thread(target=lambda: box.setdefault("answer", planner.ask(question)))
        thread.start()
        (pending,) = wait_until(lambda: _pending(client), 30, "question pending")
        reply = operator.submit(pending.request_id, "yes")
        assert not reply.accepted and "no operator can be paired" in reply.message
        thread.join(30)
        assert box["answer"].answer is not AnswerKind.YES and not box["answer"].confirmation_id
    finally:
        planner.close()
        operator.close()
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=30)
    assert code == 0, out


def test_the_operators_parameter_names_who_may_answer(ros_graph, tmp_path):
    """Issue 31 point 6: `operators` restricts oversight/answer to named paired operators."""
    db = tmp_path / "kb.sqlite"
    node = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "operators:=alice")
    node.wait_for_line("answering: alice", timeout=60)
    client = ros_graph.client("operators_test")
    planner = OversightClient(client.node, name="planner", asker="planner", service_wait_s=30)
    bob = OversightClient(client.node, name="bob", credentials=paired(db, "bob"), service_wait_s=30)
    alice = OversightClient(client.node, name="alice", credentials=paired(db, "alice"), service_wait_s=30)
    box: dict[str, object] = {}
    try:
        thread = threading.Thread(target=lambda: box.setdefault("answer", planner.ask(_question("q", FRIDGE))))
        thread.start()
        (pending,) = wait_until(lambda: _pending(client), 30, "question pending")
        refused = bob.submit(pending.request_id, "yes")  # paired, but not named
        assert not refused.accepted and "may not answer here" in refused.message
        assert alice.submit(pending.request_id, "no").accepted
        thread.join(30)
        assert box["answer"].answer is AnswerKind.NO and box["answer"].operator == "alice"
    finally:
        for c in (planner, bob, alice):
            c.close()
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=30)
    assert code == 0, out

