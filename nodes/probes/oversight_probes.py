"""Fault probes of who answers, who asks, bursts and stalls, for `task-learning
faults` (its `ros` category): run by task_learning_nodes.probes.fault_probes on its graph, with its client.

Each probe acts as the hostile battery did — answers from a client nobody paired, a Confirm from
outside the stack, a forged confirmation id, bursts of 200 Confirm / 300 junk answers / 1,000
QueryWorld / 20 PerformTask, a SIGSTOPped oversight node, a 5 MB field, security on without an
enclave — and reports handled only when every request was answered and nothing unconfirmed ran.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from task_learning_interfaces.action import PerformTask, ReachGoal
from task_learning_interfaces.msg import ConfirmationAnswer as AnswerMsg
from task_learning_interfaces.msg import ConfirmationRequest, GoalLiteral
from task_learning_interfaces.srv import AnswerConfirmation, Confirm, ListPendingConfirmations, QueryWorld
from task_learning_nodes.plumbing.node_base import ActionClient
from task_learning_nodes.plumbing.qos import action_client_qos, service_qos
from task_learning_nodes.probes.fault_probes import SCENE, Client, _child_with, _executed, _refused_or_hung, result

if TYPE_CHECKING:
    from rclpy.client import Client as ServiceClient

    from task_learning.oversight.pairing import OperatorCredentials

CANCELED = 5  # action_msgs/GoalStatus.STATUS_CANCELED


def _burst(c: Client, srv: Any, name: str, requests: list, per_client: int = 10, deadline_s: float = 120.0) -> list:
    """Every request at once, `per_client` per client (the stack's client profile); the replies,
    None for a request never answered."""
    clients: list[ServiceClient] = [c.node.create_client(srv, name, qos_profile=service_qos()) for _ in range(0, len(requests), per_client)]
    try:
        for client in clients:
            if not client.wait_for_service(timeout_sec=60):
                raise TimeoutError(f"service {name} not available")
        futures = [clients[i // per_client].call_async(r) for i, r in enumerate(requests)]
        end = time.monotonic() + deadline_s
        for future in futures:
            c.wait(future, max(0.0, end - time.monotonic()))
        return [f.result() if f.done() else None for f in futures]
    finally:
        for client in clients:
            c.node.destroy_client(client)


def _pending(c: Client) -> list:
    listed = c.call(ListPendingConfirmations, "oversight/list_pending", ListPendingConfirmations.Request(), timeout=30)
    return list(listed.pending) if listed is not None else []


def _wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.2) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def _paired(db: Path, name: str) -> OperatorCredentials:
    from task_learning.kb import KnowledgeBase
    from task_learning.oversight.pairing import OperatorCredentials, OperatorRegistry

    with KnowledgeBase(db) as kb:
        return OperatorCredentials.from_token(OperatorRegistry(kb).pair_locally(name, created_by="fault probes"))


def _raw_answer(c: Client, request_id: str, *, signature: str = "", by: str = "panel") -> Any:
    msg = AnswerMsg(request_id=request_id, answer="yes", answered_by=by, client="/fault_probes")
    return c.call(AnswerConfirmation, "oversight/answer", AnswerConfirmation.Request(answer=msg, signature=signature),
                  timeout=30)


def probe_spoofed_answers_and_cancel(c: Client, db: Path) -> list[dict[str, Any]]:
    """The spoofed answers (the pending question answered "yes" as "panel" by a client nobody
    paired, and with a forged signature), then a cancel: the question withdrawn, a paired
    operator's late yes refused, nothing executed."""
    from task_learning.oversight.pairing import OperatorCredentials, make_token
    from task_learning_nodes.clients.oversight_client import OversightClient

    spoof = "oversight: a pending question answered yes by unpaired clients"
    cancel = "perform_task canceled: its question withdrawn"
    forger = OperatorCredentials.from_token(make_token("alice")[0])
    operator = OversightClient(c.node, name="alice", credentials=_paired(db, "alice"), service_wait_s=30)
    client = ActionClient(c.node, PerformTask, "perform_task", **action_client_qos())
    try:
        if not client.wait_for_server(timeout_sec=60):
            return [result(spoof, False, "planner not available"), result(cancel, False, "planner not available")]
        handle = c.wait(client.send_goal_async(PerformTask.Goal(task="tidy kitchen", scene=SCENE,
                                                                condition="STARS+O")), 60)
        if handle is None or not handle.accepted:
            return [result(spoof, False, "goal not accepted"), result(cancel, False, "goal not accepted")]
        pending = _wait_for(lambda: _pending(c), 180)
        if not pending:
            c.wait(handle.cancel_goal_async(), 30)
            return [result(spoof, False, "no question reached the oversight node"), result(cancel, False, "no question")]
        qid = pending[0].request_id
        replies = [_raw_answer(c, qid),
                   _raw_answer(c, qid, by="alice", signature=forger.sign_answer(qid, "yes", "", "/fault_probes"))]
        accepted = sum(1 for r in replies if r is not None and r.accepted)
        unanswered = sum(1 for r in replies if r is None)
        still = [p.request_id for p in _pending(c)] == [qid]
        c.wait(handle.cancel_goal_async(), 30)
        wrapped = c.wait(handle.get_result_async(), 120)
        gone = bool(_wait_for(lambda: not _pending(c), 30))
        late = operator.submit(qid, "yes")
        executed = sum(1 for o in (wrapped.result.objects if wrapped is not None else []) if _executed(o))
        return [
            result(spoof, accepted == 0 and unanswered == 0 and still,
                   f"{accepted} of {len(replies)} spoofed answers accepted, {unanswered} without a reply; the question "
                   f"still waited: {still}", unconfirmed_executed=executed),
            result(cancel, wrapped is not None and wrapped.status == CANCELED and gone and not late.accepted,
                   f"status {wrapped.status if wrapped else 'none'}, withdrawn: {gone}, a paired operator's late yes: "
                   f"{late.message[:80]}", unconfirmed_executed=executed),
        ]
    finally:
        client.destroy()
        operator.close()


def probe_stranger_confirm(c: Client) -> dict[str, Any]:
    """The planted answer's first step: a Confirm from outside the stack, in a planner's words."""
    name = "oversight: a stranger's Confirm (planted answer)"
    request = Confirm.Request(request=ConfirmationRequest(
        request_id="plant", question="For a butter on the counter is the goal that the butter is in the fridge?",
        object_id="Butter|1", object_description="butter on the counter", timeout_s=600.0), asker="planner",
        nonce="n" * 32, sent_at=time.time(), signature="0" * 64)
    started = time.monotonic()
    reply = c.call(Confirm, "oversight/confirm", request, timeout=30)
    if reply is None:
        return result(name, False, "no answer (hang)")
    took = time.monotonic() - started
    ok = reply.answer.answer == "timeout" and "not signed" in reply.answer.description and not reply.answer.confirmation_id
    return result(name, ok and took < 10, f"refused in {took:.1f} s: {reply.answer.description[:120]}")


def probe_bursts(c: Client, db: Path) -> list[dict[str, Any]]:
    """200 concurrent Confirm, genuine answers among 300 junk ones, 1,000 QueryWorld."""
    from task_learning.types import ConfirmationRequest as Question
    from task_learning_nodes.clients.oversight_client import OversightClient

    out = []
    junk = [Confirm.Request(request=ConfirmationRequest(request_id=f"junk{i}", question=f"junk {i}?")) for i in range(200)]
    replies = _burst(c, Confirm, "oversight/confirm", junk)
    missing = sum(r is None for r in replies)
    out.append(result("oversight: 200 concurrent Confirm", missing == 0,
                      f"{200 - missing} of 200 answered (refused: not from the stack)",
                      unconfirmed_executed=sum(1 for r in replies if r is not None and r.answer.answer == "yes")))
    asker = OversightClient(c.node, name="planner", asker="planner", service_wait_s=30)
    operator = OversightClient(c.node, name="alice", credentials=_paired(db, "alice"), service_wait_s=30)
    threads = []
    try:
        for i in range(4):  # one asker's share of the waiting places (max_pending_per_asker)
            question = Question(f"b{i}", f"For a mug is the goal that the mug is in the cupboard ({i})?", "Mug|1",
                                f"mug ({i})", timeout_s=60)
            threads.append(threading.Thread(target=asker.ask, args=(question,), daemon=True))
            threads[-1].start()
        waiting = _wait_for(lambda: (lambda ids: ids if len(ids) >= 4 else None)(
            [q.request_id for q in _pending(c) if q.asked_by == "planner"]), 60) or []
        noise = [AnswerConfirmation.Request(answer=AnswerMsg(request_id=waiting[i % len(waiting)] if waiting else "x",
                                                             answer="yes", answered_by="panel")) for i in range(300)]
        box: dict[str, Any] = {}
        flood = threading.Thread(target=lambda: box.setdefault(
            "junk", _burst(c, AnswerConfirmation, "oversight/answer", noise)), daemon=True)
        flood.start()
        genuine = [operator.submit(qid, "yes") for qid in waiting]
        flood.join(180)
        for thread in threads:
            thread.join(60)
        junk_replies = box.get("junk") or []
        lost = sum(r is None for r in junk_replies) + (300 - len(junk_replies))
        got = sum(1 for g in genuine if g.accepted)
        forged = sum(1 for r in junk_replies if r is not None and r.accepted)
        out.append(result("oversight: genuine answers among 300 junk", len(waiting) == 4 and got == 4 and lost == 0
                          and forged == 0, f"{got} of {len(waiting)} genuine answers arrived; {300 - lost} of 300 junk "
                          f"answered, {forged} accepted", unconfirmed_executed=forged))
    finally:
        asker.close()
        operator.close()
    replies = _burst(c, QueryWorld, "query_world", [QueryWorld.Request(query="mug") for _ in range(1000)], deadline_s=300)
    missing = sum(r is None for r in replies)
    out.append(result("query_world: 1,000 at once", missing == 0, f"{1000 - missing} of 1000 answered"))
    return out


def probe_perform_burst(c: Client) -> dict[str, Any]:
    """20 simultaneous PerformTask: one body; every client gets a result (busy, or the one that
    runs, canceled here), none is left without one."""
    name = "perform_task: 20 at once"
    clients = [ActionClient(c.node, PerformTask, "perform_task", **action_client_qos()) for _ in range(20)]
    try:
        for client in clients:
            if not client.wait_for_server(timeout_sec=60):
                return result(name, False, "planner not available")
        goal = PerformTask.Goal(task="tidy kitchen", scene=SCENE, condition="STARS+O")
        handles = [c.wait(f, 120) for f in [client.send_goal_async(goal) for client in clients]]
        accepted = [h for h in handles if h is not None and h.accepted]
        futures = [h.get_result_async() for h in accepted]
        first = [c.wait(f, 60) for f in futures]
        for handle, got in zip(accepted, first):
            if got is None:  # the one that runs: canceled, so the probe does not wait out its questions
                c.wait(handle.cancel_goal_async(), 30)
        done = [c.wait(f, 120) for f in futures]
        answered = sum(1 for d in done if d is not None)
        executed = sum(1 for d in done if d is not None for o in d.result.objects if _executed(o))
        busy = sum(1 for d in done if d is not None and "busy" in d.result.message)
        return result(name, answered == 20 and busy >= 19, f"{answered} of 20 got a result, {busy} refused busy",
                      unconfirmed_executed=executed)
    finally:
        for client in clients:
            client.destroy()


def probe_forged_confirmation(c: Client) -> dict[str, Any]:
    name = "reach_goal with a forged confirmation id"
    goal = ReachGoal.Goal(goal=[GoalLiteral(predicate="inside", args=["Mug|1", "GarbageCan|1"], truth="true")],
                          confirmation_id="0" * 32)
    status, res = c.goal(ReachGoal, "reach_goal", goal, timeout=120)
    if status != "done":
        return _refused_or_hung(name, status)
    moved = sum(1 for o in res.outcomes if o.success)
    return result(name, not res.success and moved == 0 and "no such confirmation" in res.message,
                  f"success={res.success}: {res.message[:140]}", unconfirmed_executed=int(moved > 0))


def probe_analyze_goal_size(c: Client) -> dict[str, Any]:
    from task_learning_interfaces.msg import GoalCandidate as CandidateMsg
    from task_learning_interfaces.srv import AnalyzeGoal

    name = "analyze_goal with a 5 MB task"
    request = AnalyzeGoal.Request(candidate=CandidateMsg(text="the goal is that the mug is in the sink"),
                                  task="x" * 5_000_000)
    reply = c.call(AnalyzeGoal, "grounding/analyze_goal", request, timeout=60)
    if reply is None:
        return result(name, False, "no answer (hang)")
    return result(name, not reply.success and "at most" in reply.message, reply.message[:140])


def probe_security_without_enclave(env: dict[str, str]) -> dict[str, Any]:
    name = "a node with ROS security on and no enclave"
    proc = subprocess.run([sys.executable, "-m", "task_learning_nodes.plumbing.entry", "task_learning_nodes.nodes.grounding"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(env, ROS_SECURITY_ENABLE="true", ROS_SECURITY_STRATEGY="Enforce"))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    ok = proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr + proc.stdout
    return result(name, ok, f"exit {proc.returncode}: {(lines or ['(no output)'])[0][:200]}")


def probe_oversight_stopped(c: Client, bringup: subprocess.Popen) -> dict[str, Any]:
    """A SIGSTOPped oversight node during a +O task: the task ends naming it (once DDS drops the
    stopped node after its lease) instead of eliciting every other object."""
    name = "oversight SIGSTOPped during perform_task"
    client = ActionClient(c.node, PerformTask, "perform_task", **action_client_qos())
    victim = None
    try:
        if not client.wait_for_server(timeout_sec=60):
            return result(name, False, "planner not available")
        handle = c.wait(client.send_goal_async(PerformTask.Goal(task="tidy kitchen", scene=SCENE, condition="STARS+O")), 60)
        if handle is None or not handle.accepted:
            return result(name, False, "goal not accepted")
        if not _wait_for(lambda: _pending(c), 180):
            return result(name, False, "no question reached the oversight node")
        victim = _child_with(bringup.pid, "task_learning_nodes.nodes.oversight")
        if victim is None:
            return result(name, False, "oversight process not found")
        os.kill(victim, signal.SIGSTOP)
        started = time.monotonic()
        wrapped = c.wait(handle.get_result_async(), 240)
        if wrapped is None:
            return result(name, False, "no result within 240 s of the stop")
        res = wrapped.result
        executed = sum(1 for o in res.objects if _executed(o))
        return result(name, not res.success and "oversight" in res.message,
                      f"ended {time.monotonic() - started:.0f} s after the stop: {res.message[:140]}",
                      unconfirmed_executed=executed)
    finally:
        if victim is not None:
            os.kill(victim, signal.SIGCONT)
        client.destroy()


def graph_probes(client: Client, db: Path, env: dict[str, str], *, fast: bool) -> list[tuple[str, Callable[[], Any]]]:
    """The probes that run on the fault probes' main graph (a probe may return several results)."""
    probes: list[tuple[str, Callable[[], Any]]] = [
        ("reach_goal with a forged confirmation id", lambda: probe_forged_confirmation(client)),
        ("oversight: a stranger's Confirm (planted answer)", lambda: probe_stranger_confirm(client)),
        ("analyze_goal with a 5 MB task", lambda: probe_analyze_goal_size(client)),
        ("a node with ROS security on and no enclave", lambda: probe_security_without_enclave(env)),
    ]
    if not fast:
        probes += [
            ("oversight: spoofed answers, then cancel", lambda: probe_spoofed_answers_and_cancel(client, db)),
            ("bursts", lambda: probe_bursts(client, db)),
            ("perform_task: 20 at once", lambda: probe_perform_burst(client)),
        ]
    return probes
