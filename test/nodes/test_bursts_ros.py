"""Issue 34 point 4, no silent drops, with the bursts the hostile battery sent: 200 concurrent
Confirm, 8 genuine operator answers among 300 junk ones, 1,000 QueryWorld, 20 simultaneous
PerformTask. rclpy's default service depth of 10 lost most of each burst without an answer; here
every request is answered (refused when over capacity), the operator's answers all arrive, and a
Confirm flood does not shut the planner's questions out.

The callers send 10 requests each, with the stack's client profile (nodes/plumbing/qos.py service_qos). Why
not rclpy's default client profile: every client's response reader receives the responses to all
clients of the service, and keeping 10 it loses its own behind the others' (measured: 20 default
clients x 10 Confirm got 137-161 of 200 answers from this node, all 200 with the stack's profile).
That loss is the caller's own; with the node's depth set back to 10 (`queue_depth:=10`) the same
burst got 11 and 16 of 200 answers: that loss is the server's, and these tests catch it.
OVERSIGHT_ARGS (extra node arguments) lets that be checked: `OVERSIGHT_ARGS="-p queue_depth:=10"`."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from task_learning.types import AnswerKind, ConfirmationRequest, GoalCandidate, GoalLiteral
from test.oversight_identity import paired
from test.ros_testing import wait_until

pytest.importorskip("rclpy")
from task_learning_interfaces.action import PerformTask
from task_learning_interfaces.msg import ConfirmationAnswer as AnswerMsg
from task_learning_interfaces.msg import ConfirmationRequest as RequestMsg
from task_learning_interfaces.srv import (
    AnswerConfirmation,
    Confirm,
    ListPendingConfirmations,
    QueryWorld,
)
from task_learning_nodes.clients.oversight_client import OversightClient
from task_learning_nodes.plumbing.node_base import ActionClient, wait_for_future
from task_learning_nodes.plumbing.qos import action_client_qos, service_qos

pytestmark = pytest.mark.timeout(600)
PER_CLIENT = 10


def _burst(node, srv, name: str, requests: list, deadline_s: float) -> list:
    """Send every request at once, PER_CLIENT per client; the replies (None: never answered)."""
    clients = [node.create_client(srv, name, qos_profile=service_qos()) for _ in range(0, len(requests), PER_CLIENT)]
    for client in clients:
        assert client.wait_for_service(timeout_sec=60)
    futures = [clients[i // PER_CLIENT].call_async(r) for i, r in enumerate(requests)]
    end = time.monotonic() + deadline_s
    for future in futures:
        wait_for_future(future, max(0.0, end - time.monotonic()))
    return [f.result() if f.done() else None for f in futures]


def _question(i: int) -> ConfirmationRequest:
    cand = GoalCandidate(f"the goal is that the mug is in the cupboard {i}", 1.0,
                         literals=[GoalLiteral("inside", ("Mug|1", "Cupboard|1"))])
    return ConfirmationRequest(f"q{i}", f"For a mug is the goal that the mug is in the cupboard ({i})?",
                               "Mug|1", "mug", candidate=cand, timeout_s=120)


def test_confirm_and_answer_bursts_are_all_answered(ros_graph, tmp_path):
    db = tmp_path / "kb.sqlite"
    node = ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "max_pending:=8",
                                "-p", "max_pending_per_asker:=0", "-p", "threads:=12",
                                *os.environ.get("OVERSIGHT_ARGS", "").split())
    node.wait_for_line("oversight ready", timeout=60)
    operator_creds = paired(db, "alice")
    client = ros_graph.client("burst_test")
    planner = OversightClient(client.node, name="planner", asker="planner", service_wait_s=30)
    operator = OversightClient(client.node, name="alice", credentials=operator_creds, service_wait_s=30)
    answers: dict[int, object] = {}
    threads: list[threading.Thread] = []
    try:
        # 200 concurrent Confirm from strangers: every one answered (refused at once), and the
        # planner's question asked in the middle of the flood gets through to the operator.
        junk = [Confirm.Request(request=RequestMsg(request_id=f"junk{i}", question=f"junk {i}?"))
                for i in range(200)]
        flood = threading.Thread(target=lambda: answers.setdefault(-1, _burst(client.node, Confirm,
                                                                               "oversight/confirm", junk, 120)))
        flood.start()
        for i in range(8):
            threads.append(threading.Thread(target=lambda i=i: answers.setdefault(i, planner.ask(_question(i)))))
            threads[-1].start()
        flood.join(180)
        replies = answers[-1]
        assert sum(r is None for r in replies) == 0, "Confirm requests left without an answer"
        assert all(r.answer.answer == "timeout" and "only the stack's nodes may ask" in r.answer.description
                   for r in replies)

        def listed() -> list[str]:
            return [p.request_id for p in client.call(ListPendingConfirmations, "oversight/list_pending",
                                                      ListPendingConfirmations.Request()).pending]

        pending = wait_until(lambda: (lambda ids: ids if len(ids) == 8 else None)(listed()), 60,
                             "the planner's 8 questions pending")

        # 300 junk answers and the operator's 8 genuine ones, all at once.
        junk_answers = [AnswerConfirmation.Request(answer=AnswerMsg(request_id=pending[i % 8], answer="yes",
                                                                    answered_by="panel"))
                        for i in range(300)]
        genuine: dict[str, object] = {}
        junk_thread = threading.Thread(target=lambda: genuine.setdefault("junk", _burst(
            client.node, AnswerConfirmation, "oversight/answer", junk_answers, 120)))
        junk_thread.start()
        for request_id in pending:
            genuine[request_id] = operator.submit(request_id, "yes")
        junk_thread.join(180)
        assert all(genuine[r].accepted for r in pending), [genuine[r].message for r in pending]
        assert sum(r is None for r in genuine["junk"]) == 0, "answers left without a reply"
        assert not any(r.accepted for r in genuine["junk"])
        for thread in threads:
            thread.join(60)
        assert all(answers[i].answer is AnswerKind.YES and answers[i].operator == "alice" for i in range(8))
    finally:
        planner.close()
        operator.close()
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=30)
    assert code == 0, out


def test_a_thousand_query_world_are_all_answered(ros_graph):
    node = ros_graph.start_node("perception", "-p", "scene:=tidy_kitchen")
    node.wait_for_line("perception", timeout=60)
    client = ros_graph.client("query_burst")
    try:
        replies = _burst(client.node, QueryWorld, "query_world",
                         [QueryWorld.Request(query="mug") for _ in range(1000)], 300)
    finally:
        client.close()
        code, out = node.stop(signal.SIGINT, timeout=30)
    assert sum(r is None for r in replies) == 0, f"{sum(r is None for r in replies)} of 1000 never answered"
    assert all(r.success for r in replies)
    assert code == 0, out


def test_twenty_simultaneous_perform_task_all_get_a_result(ros_graph, tmp_path):
    """One body: one goal runs (here it ends at once: no goal elicitation node, named), the other
    19 are refused busy; every client gets a result, nothing moves."""
    db = tmp_path / "kb.sqlite"
    nodes = [ros_graph.start_node("perception", "-p", "scene:=tidy_kitchen"),
             ros_graph.start_node("oversight", "-p", f"db_path:={db}"),
             ros_graph.start_node("planner", "-p", f"db_path:={db}", "-p", "scene:=tidy_kitchen",
                                  "-p", "service_timeout_s:=5.0")]
    nodes[2].wait_for_line("planner ready", timeout=60)
    client = ros_graph.client("perform_burst")
    try:
        actions = [ActionClient(client.node, PerformTask, "perform_task", **action_client_qos()) for _ in range(20)]
        for action in actions:
            assert action.wait_for_server(timeout_sec=60)
        goal = PerformTask.Goal(task="tidy kitchen", scene="tidy_kitchen", condition="STARS")
        sent = [a.send_goal_async(goal) for a in actions]
        handles = [client.wait_future(f, 120, "goal response") for f in sent]
        results = [client.wait_future(h.get_result_async(), 180, "result").result for h in handles if h.accepted]
    finally:
        client.close()
        for node in nodes:
            node.stop(signal.SIGINT, timeout=30)
    assert len(results) == 20, f"{20 - len(results)} goals rejected without a result"
    busy = [r for r in results if "busy" in r.message]
    assert len(busy) >= 19 - 1 and not any(r.success for r in results)
    assert all(not o.actions or not any(a.success for a in o.actions) for r in results for o in r.objects)
