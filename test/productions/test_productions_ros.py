"""The bootstrapped-productions paper through the ROS graph (issue 18): productions bootstrapped and approved beforehand
perform a task, and reach a ReachGoal goal, through planner -> perception with no LLM call; with productions_require_approval
on (the default), productions nobody approved are not used (the strategy, BCR, reaches the goals);
with an oversight node, new productions are put to the operator (one yes/no question per task
family) and only a yes approves them.

The knowledge base is prepared in process, as a robot's would be before the run: productions
bootstrapped in FloorPlan1 with the offline model (not a language model), the world knowledge a
bootstrapping run stores for this kitchen's objects, and one confirmed goal per task object
("the apple in the fridge": the placing literal only, the family the productions cover)."""
from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.kb.store import Confirmation
from task_learning.llm.client import make_client
from task_learning.offline_model.productions import load_teacher
from task_learning.planning.session import RunSpec, run_in_process
from task_learning.productions.experiment import BootstrapSettings, bootstrap_into
from task_learning.types import Truth
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld

pytest.importorskip("rclpy")
from task_learning_interfaces.action import PerformTask, ReachGoal
from task_learning_interfaces.msg import GoalLiteral as GoalLiteralMsg
from task_learning_interfaces.srv import ListPendingConfirmations
from task_learning_nodes.clients.oversight_client import OversightClient
from task_learning_nodes.plumbing.node_base import ActionClient
from test.oversight_identity import paired
from test.ros_testing import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCENE = "tidy_floorplan1"  # iTHOR FloorPlan1, the kitchen the productions were bootstrapped in
NODES = ["perception", "planner"]
WITH_OVERSIGHT = ["perception", "oversight", "planner"]


def _build(db: Path) -> int:
    """A knowledge base with bootstrapped (unapproved) productions, their world knowledge and
    confirmed placing goals for the scene's task objects; returns how many goals."""
    goals_db = db.with_suffix(".goals.sqlite")
    run_in_process(RunSpec(scene=SCENE, condition="STARS", operator="none", db=goals_db))
    world = SymbolicWorld(load_scene(SCENE))
    teacher = load_teacher()
    with KnowledgeBase(goals_db) as learned, KnowledgeBase(db) as kb:
        bootstrap_into(kb, make_client("offline"),
                       settings=BootstrapSettings(train_scene="FloorPlan1", families=["explore", "find", "pick_place"]))
        for row in kb.productions():
            assert row["approval"] == "none"  # nothing learned is approved by itself
        for obj in {o["objectType"].lower() for o in world.metadata["objects"]}:
            for kind in {o["objectType"] for o in world.metadata["objects"]}:
                statement = f"{obj} is commonly stored in a/an {kind}"
                if kb.statement_truth(statement) is None:
                    kb.record_statement(statement, teacher.statement(statement), "offline")
        goals = learned.goals()
        for goal in goals:
            goal.literals = [lit for lit in goal.literals if lit.truth is Truth.TRUE and lit.predicate in ("inside", "on")]
            goal.confirmation = Confirmation.OPERATOR_YES
            kb.learn_goal(goal)
    return len(goals)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The prepared knowledge base, built once per module (bootstrapping takes seconds)."""
    db = tmp_path_factory.mktemp("productions") / "template.sqlite"
    return db, _build(db)


def _prepare(db: Path, template: tuple[Path, int], *, approve: bool) -> int:
    """A copy of the prepared knowledge base, its productions approved or not; returns how many goals."""
    source, count = template
    with sqlite3.connect(source) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    if approve:
        with KnowledgeBase(db) as kb:
            for row in kb.productions():
                kb.approve_production(row["name"], "operator")
    return count


def _perform(ros_graph, db: Path, name: str, nodes: list[str] = NODES,
             answers: list[str] | None = None) -> tuple[PerformTask.Result, list[tuple[str, str]]]:
    """PerformTask on a fresh graph; with `answers`, the operator's answers to the questions the
    oversight node holds, in order (returned as (question, answer) pairs)."""
    # The goals were confirmed beforehand (require_confirmation off: no goal question, as in
    # test_planning_ros); productions_require_approval and productions_ask_operator stay at their
    # defaults (on).
    bringup = ros_graph.start_cli("bringup", "--scene", SCENE, "--db", str(db), "--nodes", *nodes,
                                  "--param", "planner.require_confirmation:=false",
                                  "--param", "planner.max_actions:=400",
                                  "--param", "planner.service_timeout_s:=30.0")
    client = ros_graph.client(name)
    operator = OversightClient(client.node, name="alice", credentials=paired(db, "alice"), service_wait_s=60)
    asked: list[tuple[str, str]] = []
    try:
        action = ActionClient(client.node, PerformTask, "perform_task")
        assert action.wait_for_server(timeout_sec=120), "planner not up"
        handle = client.wait_future(action.send_goal_async(
            PerformTask.Goal(task="tidy kitchen", scene=SCENE, condition="STARS")), 120, "send goal")
        assert handle.accepted
        done = handle.get_result_async()

        def answer_next() -> bool:
            if answers is not None and not done.done():
                pending = client.call(ListPendingConfirmations, "oversight/list_pending",
                                      ListPendingConfirmations.Request(), timeout=60).pending
                for request in pending:
                    if request.request_id in seen:
                        continue
                    reply = answers[len(asked)] if len(asked) < len(answers) else "yes"
                    sent = operator.submit(request.request_id, reply)
                    assert sent.accepted, sent.message
                    seen.append(request.request_id)
                    asked.append((request.question, reply))
            return done.done()

        seen: list[str] = []
        wait_until(answer_next, 600, "the task to end", interval=0.1)
        result = done.result().result
    finally:
        operator.close()
        client.close()
        code, output = bringup.stop(signal.SIGINT, timeout=60)
    assert code == 0, output[-2000:]
    return result, asked


def test_a_task_performed_by_approved_productions_makes_no_llm_call(ros_graph, tmp_path, template):
    db = tmp_path / "approved.sqlite"
    count = _prepare(db, template, approve=True)
    with KnowledgeBase(db) as kb:
        before = sum(row["count"] for row in kb.productions())
    result, _ = _perform(ros_graph, db, "productions_test")
    assert result.success, result.message
    assert len(result.objects) == count > 0
    assert all(o.success and "reached by productions alone" in o.message for o in result.objects), \
        [o.message for o in result.objects]
    assert result.usage.calls == 0 and result.usage.prompt_tokens == result.usage.completion_tokens == 0
    with KnowledgeBase(db) as kb:  # the productions used had U and N updated on disk
        assert sum(row["count"] for row in kb.productions()) > before


def _approvals(db: Path) -> dict[str, str]:
    with KnowledgeBase(db) as kb:
        return {row["task"]: row["approval"] for row in kb.productions()}


def test_a_no_from_the_operator_is_not_approval_and_unapproved_productions_are_not_used(ros_graph, tmp_path, template):
    db = tmp_path / "unapproved.sqlite"
    _prepare(db, template, approve=False)
    result, asked = _perform(ros_graph, db, "unapproved_test", WITH_OVERSIGHT, answers=["no"])
    assert result.success, result.message
    # one question per family: explore (refused), find and pick and place (approved)
    assert [a for _q, a in asked] == ["no", "yes", "yes"], asked
    assert "explore <receptacle>" in asked[0][0] and "May it use them" in asked[0][0]
    approvals = _approvals(db)
    assert approvals.pop("explore <receptacle>") == "none" and set(approvals.values()) == {"operator"}
    # Without the explore rules, the productions cannot find anything: BCR reached every goal.
    assert result.objects and not any("productions" in o.message for o in result.objects), \
        [o.message for o in result.objects]
    assert result.usage.calls == 0  # the goals were known and BCR's heuristic engine asks no LLM


def test_productions_the_operator_approves_through_oversight_perform_the_task(ros_graph, tmp_path, template):
    db = tmp_path / "asked.sqlite"
    _prepare(db, template, approve=False)
    result, asked = _perform(ros_graph, db, "approve_test", WITH_OVERSIGHT, answers=["yes", "yes", "yes"])
    assert result.success, result.message
    assert len(asked) == 3 and set(_approvals(db).values()) == {"operator"}
    assert all(o.success and "reached by productions alone" in o.message for o in result.objects), \
        [o.message for o in result.objects]
    assert result.usage.calls == 0


def _reach(client, apple: str, fridge: str):  # type: ignore[no-untyped-def]
    literal = GoalLiteralMsg(predicate="inside", args=[apple, fridge], truth=GoalLiteralMsg.TRUE)
    result, _ = client.send_goal(ReachGoal, "reach_goal", ReachGoal.Goal(goal=[literal]), timeout=300)
    return result


def test_reach_goal_uses_approved_productions_alone_and_never_unapproved_ones(ros_graph, tmp_path, template):
    """ReachGoal goes through PerformTask's executor: with require_confirmation on (the default)
    only a literal a confirmed goal covers is reached; unapproved productions are not used (BCR
    reaches it); once approved, the productions reach the next goal alone, with 0 LLM calls."""
    db = tmp_path / "reach.sqlite"
    _prepare(db, template, approve=False)
    objects = SymbolicWorld(load_scene(SCENE)).metadata["objects"]
    first = {kind: next(o["objectId"] for o in objects if o["objectType"] == kind)
             for kind in ("Apple", "Bowl", "Fridge", "Cabinet")}
    # perception and planner only: with no oversight node nothing can approve the productions
    bringup = ros_graph.start_cli("bringup", "--scene", SCENE, "--db", str(db), "--nodes", *NODES,
                                  "--param", "planner.max_actions:=400",
                                  "--param", "planner.service_timeout_s:=30.0")
    client = ros_graph.client("reach_productions_test")
    try:
        unapproved = _reach(client, first["Apple"], first["Fridge"])
        assert unapproved.success and "productions" not in unapproved.message, unapproved.message
        assert set(_approvals(db).values()) == {"none"}
        with KnowledgeBase(db) as kb:
            for row in kb.productions():
                kb.approve_production(row["name"], "operator")
        approved = _reach(client, first["Bowl"], first["Cabinet"])
        assert approved.success and approved.message.startswith("reached by productions alone"), approved.message
        assert approved.usage.calls == 0 and approved.usage.prompt_tokens == approved.usage.completion_tokens == 0
        assert ("PutObject", first["Cabinet"]) in [(o.call.action, o.call.object_id) for o in approved.outcomes]
    finally:
        client.close()
        code, output = bringup.stop(signal.SIGINT, timeout=60)
    assert code == 0, output[-2000:]
