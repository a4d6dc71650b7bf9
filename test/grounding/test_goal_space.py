"""The grammar generator's language for a scene (grounding/goal_space.py): every goal the robot can
ground for an object, by every spoken name of each place, with the closing clause for a closable
container, never a goal that is already true, and each one viable for the robot's own analysis."""
from __future__ import annotations

from task_learning.grounding import analyze_goal
from task_learning.grounding.goal_space import grounded_goals
from task_learning.llm.constraints import Constraint
from task_learning.world.resolve import describe_object
from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata


def _world(scene_name: str):
    scene = load_scene(scene_name)
    metadata = {"sceneName": scene.name, "objects": scene.objects}
    return scene, metadata, world_state_from_metadata(metadata)


def test_store_groceries_eggs_every_place_by_every_name():
    _, metadata, state = _world("store_groceries")
    eggs = next(o.object_id for o in state.objects if o.object_type == "Eggs")
    goals = grounded_goals(state, eggs, describe_object(metadata, eggs)[0])
    texts = {g.text[len(" The goal is that the eggs are "):]: g.place_id for g in goals}
    assert texts["in the fridge and the fridge is closed"] == "Fridge|1"
    assert texts["in the refrigerator and the refrigerator is closed"] == "Fridge|1"  # the alias
    assert texts["in the pantry and the pantry is closed"] == "Pantry|1"
    assert texts["on the counter"] == texts["on the counter top"] == "CounterTop|1"  # a surface: no clause
    assert texts["in the sink"] == "Sink|1"  # a container that does not close: no clause
    assert "in the fridge" not in texts  # a closable container is closed again
    # the bag the eggs are in is no goal; "the bag" grounds to another bag, which is one
    start = next(o for o in state.objects if o.object_id == eggs).parent_receptacles[0]
    assert start not in {g.place_id for g in goals}
    assert all(g.text.startswith(" The goal is that the eggs are ") for g in goals)


def test_every_generated_goal_is_viable_for_the_robot_and_about_its_object():
    for scene_name in ("store_groceries", "tidy_kitchen", "heldout_bedroom"):
        scene, metadata, state = _world(scene_name)
        for object_id in scene.task_objects[:6]:
            goals = grounded_goals(state, object_id, describe_object(metadata, object_id)[0])
            assert goals, f"{scene_name} {object_id}: no grounded goal"
            for goal in goals:
                analysis = analyze_goal(goal.text, state, object_id)
                assert analysis.viable, (goal.text, analysis.mismatches)
                assert any(lit.args[:2] == (object_id, goal.place_id) for lit in analysis.literals)


def test_an_object_the_robot_cannot_move_has_no_goal():
    _, _, state = _world("store_groceries")
    fridge = next(o.object_id for o in state.objects if o.object_type == "Fridge")
    assert grounded_goals(state, fridge, "refrigerator") == []


def test_the_grammar_for_the_eggs_allows_exactly_those_goals():
    _, metadata, state = _world("store_groceries")
    eggs = next(o.object_id for o in state.objects if o.object_type == "Eggs")
    goals = grounded_goals(state, eggs, "eggs")
    grammar = Constraint(tuple(g.text for g in goals), after=" The goal is that the eggs are").gbnf()
    assert grammar.startswith("root ::= ")
    assert '"fridge and the fridge is closed"' in grammar and "counter" in grammar and "kitchen" not in grammar
