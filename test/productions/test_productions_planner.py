"""The planner's goal executor tries learned productions before BCR (the bootstrapped-productions paper in the stack)."""
from __future__ import annotations

import random

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import make_engine
from task_learning.offline_model.productions import load_teacher
from task_learning.planning.executor import GoalExecutor
from task_learning.productions.agent import ProductionSet
from task_learning.productions.families import load_kitchen, make_instance
from task_learning.productions.knowledge import WorldKnowledge
from task_learning.productions.planning import ProductionReacher, task_for
from task_learning.types import GoalLiteral, Truth
from task_learning.world.symbolic import SymbolicWorld


def _rules() -> ProductionSet:
    """The offline model's strategies as a learned rule set (what bootstrapping stores)."""
    return ProductionSet([s.rule for s in load_teacher().strategies])


def _statements(world: SymbolicWorld) -> WorldKnowledge:
    """World knowledge as a knowledge base would hold it after bootstrapping (no oracle: no LLM)."""
    teacher = load_teacher()
    objects = {o["objectType"].lower() for o in world.metadata["objects"]}
    kinds = {o["objectType"] for o in world.metadata["objects"]}
    return WorldKnowledge({f"{o} is commonly stored in a/an {k}": teacher.statement(f"{o} is commonly stored in a/an {k}")
                           for o in objects for k in kinds})


class CountingFactory:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return make_engine("heuristic")


def test_goal_literals_map_to_production_tasks() -> None:
    assert task_for([GoalLiteral("inside", ("Apple|1", "Fridge|2"))]) == "pick and place a/an Apple|1 in/on a/an Fridge|2"
    assert task_for([GoalLiteral("sliced", ("Bread|1",))]) == "slice a/an Bread|1"
    assert task_for([GoalLiteral("open", ("Fridge|2",))]) is None
    assert task_for([GoalLiteral("inside", ("Apple|1", "Fridge|2"), Truth.FALSE)]) is None


def test_executor_reaches_a_goal_with_productions_alone_and_without_them_uses_bcr() -> None:
    scene = load_kitchen("FloorPlan6")
    instance = make_instance("pick_place", scene, random.Random(4), kind="Apple")
    fridge = next(o["objectId"] for o in scene.objects if o["objectType"] == "Fridge")
    apple = instance.moves[0][0]
    literals = [GoalLiteral("inside", (apple, fridge))]

    world = SymbolicWorld(scene)
    for oid, rid in instance.moves:
        world.place_object(oid, rid)
    factory = CountingFactory()
    reacher = ProductionReacher(_rules(), _statements(world))
    executor = GoalExecutor(load_domain("household"), factory, None, productions=reacher)
    seen: list[str] = []
    result = executor.reach(world, literals, on_outcome=lambda o: seen.append(str(o.call)))
    assert result.success and result.by_productions, result.message
    assert factory.calls == 0  # BCR never asked
    assert seen == [str(o.call) for o in result.outcomes] and any(s.startswith("PutObject") for s in seen)
    assert apple in next(o for o in world.metadata["objects"] if o["objectId"] == fridge)["receptacleObjectIds"]

    off = SymbolicWorld(scene)  # the parameter off: BCR as before
    for oid, rid in instance.moves:
        off.place_object(oid, rid)
    factory_off = CountingFactory()
    result_off = GoalExecutor(load_domain("household"), factory_off, None).reach(off, literals)
    assert factory_off.calls == 1 and not result_off.by_productions


def test_goal_no_family_covers_goes_to_bcr() -> None:
    scene = load_kitchen("FloorPlan6")
    world = SymbolicWorld(scene)
    fridge = next(o["objectId"] for o in scene.objects if o["objectType"] == "Fridge")
    factory = CountingFactory()
    executor = GoalExecutor(load_domain("household"), factory, None,
                            productions=ProductionReacher(_rules(), WorldKnowledge()))
    result = executor.reach(world, [GoalLiteral("open", (fridge,))])
    assert factory.calls == 1 and not result.by_productions


def test_planner_uses_only_approved_productions(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from task_learning.apps.cli import main
    from task_learning.kb import KnowledgeBase
    from task_learning.productions.memory import persistent_set
    from task_learning.productions.planning import reacher_from_kb

    db = tmp_path / "kb.sqlite"
    with KnowledgeBase(db) as kb:
        stored = persistent_set(kb)
        for rule in _rules():
            stored.add(rule)
        assert reacher_from_kb(kb) is None  # nobody approved them: the planner uses none
        assert reacher_from_kb(kb, approved_only=False) is not None
    assert main(["kb", "approve", "--db", str(db), "--production", "place-put", "--production", "nope"]) == 2
    assert "no production named 'nope'" in capsys.readouterr().err
    assert main(["kb", "approve", "--db", str(db), "--production", "place-put", "--production", "place-done"]) == 0
    with KnowledgeBase(db) as kb:
        reacher = reacher_from_kb(kb)
        assert reacher is not None and sorted(p.name for p in reacher.productions) == ["place-done", "place-put"]
    assert main(["kb", "show", "--db", str(db)]) == 0
    assert "approval operator" in capsys.readouterr().out
