"""The robot's day through the whole ROS graph, run by the anticipation node (AnticipateDay, asked by
`anticipate --graph`): the simulated human does its routine in the perception node's world, the
node anticipates after each finished task, proposes every anticipated task through the oversight
node, and the planner node performs only the confirmed ones (ReachGoal on perception's world). A "no" and an unanswered question confirm nothing, and the planner itself
refuses literals no operator confirmed. Each yes reaches the planner as the oversight node's
confirmation id (issue 31): nothing is written into the planner's knowledge base, so a kill
mid-task leaves no yes behind."""
from __future__ import annotations

import json
import signal

import pytest

from task_learning.anticipation.config import load_anticipation_config
from task_learning.anticipation.robot_day import load_robot_goals
from task_learning.kb import KnowledgeBase
from test.ros_testing import ROOT, wait_until

pytest.importorskip("rclpy")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCENE = ROOT / "config" / "anticipation" / "home_scene.yaml"


def _bringup(ros_graph, db, oversight_db, timeout_s: float, *extra: str):
    return ros_graph.start_cli(
        "bringup", "--nodes", "oversight", "perception", "planner", "anticipation", "--db", str(db),
        "--param", f"perception.scene:={SCENE}", "--param", f"oversight.db_path:={oversight_db}",
        "--param", f"oversight.timeout_s:={timeout_s}", *extra)


def _day(ros_graph, day: str, *extra: str):
    return ros_graph.start_cli("anticipate", "--day", day, "--robot", "--oversight", "ros", "--graph",
                               "--wait", "60", "--json", *extra)


def _world(client) -> dict:
    from task_learning_interfaces.srv import QueryWorld
    from task_learning_nodes.plumbing import convert

    response = client.call(QueryWorld, "query_world", QueryWorld.Request(query="", include_world=True), timeout=60)
    return convert.metadata_from_world_state_msg(response.world)


def _holds(metadata: dict, literals) -> bool:
    from task_learning.bcr.literals import StateView, holds

    state = StateView(metadata)
    return all(holds(lit, state) for lit in literals)


def test_confirmed_tasks_are_performed_by_the_planner(ros_graph, tmp_path):
    goals = load_robot_goals(tasks=load_anticipation_config().tasks)
    db = tmp_path / "planner.sqlite"
    graph = _bringup(ros_graph, db, tmp_path / "oversight.sqlite", 30.0)
    client = ros_graph.client("anticipation_test")
    try:
        # the simulated operator answers through the node (paired in its knowledge base)
        proc = _day(ros_graph, "trace_01", "--oversight-db", str(tmp_path / "oversight.sqlite"))
        assert proc.wait(300) == 0, proc.report()
        data = json.loads(proc.stdout)
        assert data["finished"] and data["unconfirmed_executions"] == 0
        assert data["anticipations"] and data["asked"] and data["confirmed"]
        assert data["performed"] and all(p["via"] == "planner" and p["success"] for p in data["performed"])
        assert {p["task"] for p in data["performed"]} <= set(data["confirmed"])
        assert data["done_by_robot"] and data["done"] == data["routine"]
        # The perception node's world is where it happened: every task of the routine holds there.
        world = _world(client)
        assert all(_holds(world, goals.tasks[t]) for t in data["routine"])
    finally:
        client.close()
        code, out = graph.stop(signal.SIGINT, timeout=60)
    assert code == 0, out
    with KnowledgeBase(db) as kb:  # no node wrote a yes into the planner's knowledge base
        assert not [g for g in kb.goals() if g.task == "task anticipation"]
    with KnowledgeBase(tmp_path / "oversight.sqlite") as kb:  # each yes: a confirmation, by whom
        yes = [r for r in kb.question_log() if r["answer"] == "yes"]
    assert len(yes) == len(data["confirmed"]) and all(r["confirmation_id"] and r["verified"] for r in yes)
    assert {r["operator"] for r in yes} == {"simulated"} and all(r["asked_by"] == "anticipation" for r in yes)


def test_a_no_and_an_unanswered_question_confirm_nothing(ros_graph, tmp_path):
    from task_learning_interfaces.action import ReachGoal
    from task_learning_interfaces.srv import ListPendingConfirmations
    from task_learning_nodes.clients.oversight_client import OversightClient
    from task_learning_nodes.plumbing import convert
    from test.oversight_identity import paired

    goals = load_robot_goals(tasks=load_anticipation_config().tasks)
    db = tmp_path / "planner.sqlite"
    graph = _bringup(ros_graph, db, tmp_path / "oversight.sqlite", 12.0)
    client = ros_graph.client("anticipation_test")
    operator = OversightClient(client.node, name="alice", service_wait_s=60,
                               credentials=paired(tmp_path / "oversight.sqlite", "alice"))
    try:
        # Nobody but this test answers: the first question gets "no", the second none (it times
        # out at the node's 12 s), every later one "yes".
        proc = _day(ros_graph, "trace_03", "--operator", "terminal")
        answered: dict[str, str] = {}
        seen: list[str] = []

        def answer_next() -> bool:
            pending = client.call(ListPendingConfirmations, "oversight/list_pending",
                                  ListPendingConfirmations.Request(), timeout=60).pending
            for request in pending:
                if request.request_id in seen:
                    continue
                seen.append(request.request_id)
                if len(seen) == 2:
                    continue  # left unanswered
                reply = "no" if len(seen) == 1 else "yes"
                sent = operator.submit(request.request_id, reply)
                assert sent.accepted, (request.question, sent.message)
                answered[request.object_description] = reply
            return proc.poll() is not None

        wait_until(answer_next, 300, "the robot's day to end", interval=0.1)
        assert proc.wait(60) == 0, proc.report()
        data = json.loads(proc.stdout)
        assert len(seen) == len(data["asked"]) >= 3
        refused = [t for t, a in answered.items() if a == "no"]
        unanswered = data["asked"][1]
        assert refused == [data["asked"][0]]
        assert set(data["refused"]) == {data["asked"][0], unanswered}
        assert set(data["confirmed"]) == {t for t, a in answered.items() if a == "yes"}
        assert data["unconfirmed_executions"] == 0 and data["finished"]
        performed = {p["task"] for p in data["performed"]}
        assert performed <= set(data["confirmed"]) and not performed & set(data["refused"])

        # The planner's own gate: literals of the refused task are not reached on request.
        literals = [convert.goal_literal_to_msg(lit) for lit in goals.tasks[refused[0]]]
        result, _ = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=literals), timeout=120)
        assert not result.success and "no confirmed goal covers" in result.message
    finally:
        operator.close()
        client.close()
        code, out = graph.stop(signal.SIGINT, timeout=60)
    assert code == 0, out


def test_a_kill_mid_task_leaves_no_confirmation_behind(ros_graph, tmp_path):
    """Issue 31 point 4: SIGKILL the anticipation node while the planner performs a confirmed task,
    restart the planner, send ReachGoal for the same task: refused, without the confirmation id and
    with it (used up). An unknown day is refused with the days there are."""
    import os

    from task_learning_interfaces.action import AnticipateDay, ReachGoal
    from task_learning_nodes.plumbing import convert
    from test.ros_testing import wait_until

    goals = load_robot_goals(tasks=load_anticipation_config().tasks)
    db, oversight_db = tmp_path / "planner.sqlite", tmp_path / "oversight.sqlite"
    graph = _bringup(ros_graph, db, oversight_db, 30.0, "--keep-going")
    client = ros_graph.client("anticipation_kill_test")
    planner = None
    try:
        result, _ = client.send_goal(AnticipateDay, "anticipate_day", AnticipateDay.Goal(day="someday"), timeout=60)
        assert not result.success and not result.result_json
        assert "unknown day 'someday'" in result.message and "trace_01" in result.message

        day = _day(ros_graph, "trace_01", "--oversight-db", str(oversight_db))
        confirmed = graph.wait_for_line(r"reach_goal confirmed by simulated via \S+ \(question (?P<qid>\w+): Shall I "
                                        r"(?P<task>.+?) next\?", timeout=300)
        victims = {name: _child(graph.pid, f"task_learning_nodes.nodes.{name}") for name in ("anticipation", "planner")}
        for pid in victims.values():
            assert pid is not None
            os.kill(pid, 9)  # mid-task: the planner is reaching the confirmed task's goal
        assert day.wait(120) != 0  # the day's client learns that its node went away
        with KnowledgeBase(db) as kb:  # nothing confirmed was left in the planner's knowledge base
            assert not [g for g in kb.goals() if g.confirmed]
        planner = ros_graph.start_node("planner", "-p", f"db_path:={db}", params_file="planner.yaml")
        planner.wait_for_line("planner ready", timeout=60)
        task = next(t for t in goals.tasks if t.lower() == confirmed["task"].lower())
        literals = [convert.goal_literal_to_msg(lit) for lit in goals.tasks[task]]
        plain, _ = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=literals), timeout=120)
        assert not plain.success and "no confirmed goal covers" in plain.message and not plain.outcomes
        with KnowledgeBase(oversight_db) as kb:
            used = wait_until(lambda: [r["confirmation_id"] for r in kb.question_log()
                                       if r["request_id"] == confirmed["qid"] and r["confirmation_id"]], 30,
                              "the yes on record")
        replayed, _ = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=literals, confirmation_id=used[0]),
                                       timeout=120)
        assert not replayed.success and "already used" in replayed.message and not replayed.outcomes
        forged, _ = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=literals, confirmation_id="0" * 32),
                                     timeout=120)
        assert not forged.success and "no such confirmation" in forged.message and not forged.outcomes
    finally:
        client.close()
        if planner is not None:
            planner.stop(signal.SIGINT, timeout=60)
        graph.stop(signal.SIGINT, timeout=60)


def _child(parent: int, needle: str) -> int | None:
    """The pid of `parent`'s child process whose command line has `needle` (bringup's nodes)."""
    from task_learning_nodes.probes.fault_probes import children

    return next((pid for pid, cmdline in children(parent) if needle in cmdline), None)
