"""The completion measure (the STARS paper): 100 % when every preference holds, 39/40 with one kitchen
object misplaced, an open fridge counts against it."""
from __future__ import annotations

import pytest

from task_learning.world.completion import completion
from task_learning.world.generate import generate_scene
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld

from ..world_helpers import close_all, move, objects_by_id, ok


def solve(scene_name: str, skip: str | None = None, use_second: bool = False) -> tuple[object, SymbolicWorld]:
    scene = load_scene(scene_name)
    world = SymbolicWorld(scene)
    for object_id in scene.task_objects:
        if object_id == skip:
            continue
        options = scene.preferences[object_id]
        move(world, object_id, options[-1] if use_second else options[0])
    close_all(world, scene.closable)
    return scene, world


@pytest.mark.parametrize("name, total", [("tidy_kitchen", 40), ("store_groceries", 18), ("organize_office", 14)])
def test_everything_in_place_is_100_percent(name, total):
    scene, world = solve(name)
    report = completion(scene, world.metadata)
    assert (report.satisfied, report.total, report.percent, report.failures) == (total, total, 100.0, [])


def test_sink_or_dishwasher_both_count():
    scene, world = solve("tidy_kitchen", use_second=True)
    assert objects_by_id(world.metadata)["Mug|1"]["parentReceptacles"] == ["Dishwasher|1"]
    assert completion(scene, world.metadata).satisfied == 40


def test_start_state_scores_only_the_closed_containers():
    scene = load_scene("tidy_kitchen")
    report = completion(scene, SymbolicWorld(scene).metadata)
    assert (report.satisfied, report.total) == (5, 40)
    assert len(report.failures) == 35


def test_one_misplaced_object_is_39_of_40():
    scene, world = solve("tidy_kitchen", skip="Mug|2")
    move(world, "Mug|2", "Sink|1")  # the clean mug from the dish rack belongs in the cupboard
    report = completion(scene, world.metadata)
    assert (report.satisfied, report.total) == (39, 40)
    assert report.percent == pytest.approx(97.5)
    assert len(report.failures) == 1
    assert "Mug|2" in report.failures[0] and "sink" in report.failures[0] and "cupboard" in report.failures[0]


def test_open_fridge_counts_against_completion():
    scene, world = solve("tidy_kitchen")
    ok(world, "NavigateToObject", objectId="Fridge|1")
    ok(world, "OpenObject", objectId="Fridge|1")
    report = completion(scene, world.metadata)
    assert (report.satisfied, report.total) == (39, 40)
    assert report.failures == ["the refrigerator Fridge|1 is open; it should be closed"]


def test_held_object_is_not_in_place():
    scene, world = solve("organize_office", skip="Pen|1")
    ok(world, "NavigateToObject", objectId="Pen|1")
    ok(world, "PickupObject", objectId="Pen|1")
    report = completion(scene, world.metadata)
    assert report.satisfied == 13 and "still held" in report.failures[0]


def test_object_inside_something_at_its_destination_counts():
    scene, world = solve("store_groceries", skip="Eggs|1")
    # the whole bag with the eggs goes into the fridge
    ok(world, "NavigateToObject", objectId="Bag|3")
    ok(world, "PickupObject", objectId="Bag|3")
    ok(world, "NavigateToObject", objectId="Fridge|1")
    ok(world, "OpenObject", objectId="Fridge|1")
    ok(world, "PutObject", objectId="Fridge|1")
    ok(world, "CloseObject", objectId="Fridge|1")
    assert completion(scene, world.metadata).satisfied == 18


def test_generated_scene_scores_too():
    scene = generate_scene(60, n_furniture=8, seed=1)
    assert len(scene.task_objects) == 60
    report = completion(scene, SymbolicWorld(scene).metadata)
    assert report.total == 60 + len(scene.closable) and report.satisfied == len(scene.closable)


def test_a_learnable_generated_scene_has_one_kind_of_place_per_object_type():
    scene = generate_scene(120, n_furniture=28, seed=2, learnable=True)  # two pieces of each kind
    by_id = scene.by_id()
    kind_of_type: dict[str, set[str]] = {}
    for object_id, acceptable in scene.preferences.items():
        kinds = {by_id[a]["objectType"] for a in acceptable}
        assert len(kinds) == 1 and len(acceptable) == 2  # any piece of the one kind will do
        kind_of_type.setdefault(by_id[object_id]["objectType"], set()).update(kinds)
        assert by_id[object_id]["parentReceptacles"][0] not in acceptable  # it starts out of place
    assert all(len(kinds) == 1 for kinds in kind_of_type.values())
    report = completion(scene, SymbolicWorld(scene).metadata)
    assert report.satisfied == len(scene.closable)
