"""Seed 001 through the ROS graph (issue 18): productions bootstrapped and approved beforehand
perform a task through planner -> perception with no LLM call; with productions_require_approval
on (the default), productions nobody approved are not used (the strategy, BCR, reaches the goals).

The knowledge base is prepared in process, as a robot's would be before the run: productions
bootstrapped in FloorPlan1 with the offline model (not a language model), the world knowledge a
bootstrapping run stores for this kitchen's objects, and one confirmed goal per task object
("the apple in the fridge": the placing literal only, the family the productions cover)."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.kb.store import Confirmation
from task_learning.llm.client import make_client
from task_learning.llm.offline.productions import load_teacher
from task_learning.planning.session import RunSpec, run_in_process
from task_learning.productions.experiment import bootstrap_into
from task_learning.types import Truth
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld

pytest.importorskip("rclpy")
from task_learning_interfaces.action import PerformTask  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCENE = "tidy_floorplan1"  # iTHOR FloorPlan1, the kitchen the productions were bootstrapped in
NODES = ["perception", "planner"]


def _prepare(db: Path, *, approve: bool) -> int:
    """A knowledge base with bootstrapped productions (approved or not), their world knowledge
    and confirmed placing goals for the scene's task objects; returns how many goals."""
    goals_db = db.with_suffix(".goals.sqlite")
    run_in_process(RunSpec(scene=SCENE, condition="STARS", operator="none", db=goals_db))
    world = SymbolicWorld(load_scene(SCENE))
    teacher = load_teacher()
    with KnowledgeBase(goals_db) as learned, KnowledgeBase(db) as kb:
        bootstrap_into(kb, make_client("offline"), train_scene="FloorPlan1", families=["explore", "find", "pick_place"])
        for row in kb.productions():
            assert row["approval"] == "none"  # nothing learned is approved by itself
            if approve:
                kb.approve_production(row["name"], "operator")
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


def _perform(ros_graph, db: Path, name: str) -> PerformTask.Result:
    # A test bench without an operator for the goals (require_confirmation off, as in
    # test_planning_ros); productions_require_approval stays at its default (on).
    bringup = ros_graph.start_cli("bringup", "--scene", SCENE, "--db", str(db), "--nodes", *NODES,
                                  "--param", "planner.require_confirmation:=false",
                                  "--param", "planner.max_actions:=400",
                                  "--param", "planner.service_timeout_s:=30.0")
    client = ros_graph.client(name)
    try:
        result, _ = client.send_goal(PerformTask, "perform_task",
                                     PerformTask.Goal(task="tidy kitchen", scene=SCENE, condition="STARS"),
                                     timeout=600)
    finally:
        client.close()
        code, output = bringup.stop(signal.SIGINT, timeout=60)
    assert code == 0, output[-2000:]
    return result


def test_a_task_performed_by_approved_productions_makes_no_llm_call(ros_graph, tmp_path):
    db = tmp_path / "approved.sqlite"
    count = _prepare(db, approve=True)
    with KnowledgeBase(db) as kb:
        before = sum(row["count"] for row in kb.productions())
    result = _perform(ros_graph, db, "productions_test")
    assert result.success, result.message
    assert len(result.objects) == count > 0
    assert all(o.success and "reached by productions alone" in o.message for o in result.objects), \
        [o.message for o in result.objects]
    assert result.usage.calls == 0 and result.usage.prompt_tokens == result.usage.completion_tokens == 0
    with KnowledgeBase(db) as kb:  # the productions used had U and N updated on disk
        assert sum(row["count"] for row in kb.productions()) > before


def test_unapproved_productions_are_not_used(ros_graph, tmp_path):
    db = tmp_path / "unapproved.sqlite"
    _prepare(db, approve=False)
    result = _perform(ros_graph, db, "unapproved_test")
    assert result.success, result.message
    assert result.objects and not any("productions" in o.message for o in result.objects), \
        [o.message for o in result.objects]
    assert result.usage.calls == 0  # the goals were known and BCR's heuristic engine asks no LLM
