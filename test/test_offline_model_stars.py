"""The offline model inside the real STARS pipeline (search tree, grounding analysis, repair,
selection): every stage gets work, the run is deterministic, and its calibration has the paper's
shape (the top answer often unusable, the tree usually holding the conventional answer).

Scene preferences are read here only to score; the offline model never sees them.
"""
from __future__ import annotations

import pytest

from task_learning.llm.client import make_client
from task_learning.stars import elicit
from task_learning.types import MismatchKind
from task_learning.world import scene as scene_mod
from task_learning.world.state import world_state_from_metadata


@pytest.fixture(scope="module")
def kitchen():
    scene = scene_mod.load_scene("tidy_kitchen")
    state = world_state_from_metadata({"sceneName": scene.name, "objects": scene.objects})
    return scene, state


def run(scene, state, object_id, condition):
    client = make_client("offline", cache=False)
    return elicit.elicit_goal(scene.task, object_id, state, scene, condition, client)


def preferred_hit(candidate, object_id, preferred) -> bool:
    if candidate is None or not candidate.viable:
        return False
    return any(lit.predicate in ("inside", "on") and lit.args[0] == object_id and lit.args[1] in preferred
               for lit in candidate.literals)


def test_mug_in_dish_rack_exercises_every_stage_deterministically(kitchen):
    scene, state = kitchen
    mug = next(oid for oid in scene.task_objects if oid.startswith("Mug|")
               and "DishRack" in " ".join(scene.object(oid).get("parentReceptacles") or []))
    first = run(scene, state, mug, "STARS")
    second = run(scene, state, mug, "STARS")
    assert [c.text for c in first.candidates] == [c.text for c in second.candidates]
    assert first.chosen is not None and first.chosen.text == second.chosen.text
    texts = {c.text for c in first.candidates}
    for expected in ["the goal is that the mug is in the dishwasher and the dishwasher is turned on",
                     "the goal is that the mug is in the cupboard and the cupboard is closed",
                     "the goal is that the mug is in the cabinet and the cabinet is closed",
                     "the goal is that the mug is in the dishwasher and the dishwasher is started",
                     "the goal is that the mug is in the cupboard and the dish rack is empty"]:
        assert expected in texts
    kinds = {m.kind for c in first.candidates for m in c.mismatches}
    # all four of the paper's mismatch kinds occur (the model answers about its object: never
    # wrong_object)
    assert kinds == set(MismatchKind) - {MismatchKind.WRONG_OBJECT}
    assert any(c.source.value.startswith("repair") for c in first.candidates)  # repair found new ones
    assert "cupboard" in first.chosen.text and first.chosen.viable


@pytest.mark.slow  # three conditions over every task object of the kitchen
def test_calibration_top_answer_often_unusable_tree_usually_right(kitchen):
    scene, state = kitchen
    client = make_client("offline", cache=False)
    tbp = tree = stars = 0
    for oid in scene.task_objects:
        pref = scene.preferences[oid]
        top = elicit.elicit_goal(scene.task, oid, state, scene, "TBP", client)
        tbp += preferred_hit(top.chosen, oid, pref)
        st = elicit.elicit_goal(scene.task, oid, state, scene, "ST", client)
        tree += any(preferred_hit(c, oid, pref) for c in st.candidates)
        full = elicit.elicit_goal(scene.task, oid, state, scene, "STARS", client)
        stars += preferred_hit(full.chosen, oid, pref)
    n = len(scene.task_objects)
    assert 0.35 <= tbp / n <= 0.70, tbp / n  # paper: TBP 52.5 %
    assert tree / n >= 0.9, tree / n
    assert stars > tbp and stars / n >= 0.7, stars / n  # paper: STARS 77.5 %
