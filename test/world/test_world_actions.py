"""Every symbolic-world action on its success and failure paths, the embodiment limits, the
AI2-THOR state-change rules, and seeded placement."""
from __future__ import annotations

import pytest

from task_learning.world.backend import WorldBackend
from task_learning.world.factory import BackendUnavailableError, make_backend
from task_learning.world.scene import load_scene, scene_from_dict
from task_learning.world.symbolic import SymbolicWorld
from test.shared_paths import FLOORPLAN1

from ..world_helpers import fails, objects_by_id, ok, world_part

LAB = {
    "task": "make breakfast",
    "location": "kitchen",
    "objects": [
        {"type": "CounterTop"},
        {"type": "Fridge"},
        {"type": "Sink"},
        {"type": "Faucet", "at": None},
        {"type": "CoffeeMachine", "at": "CounterTop|1"},
        {"type": "Toaster", "at": "CounterTop|1"},
        {"type": "Microwave", "at": "CounterTop|1"},
        {"type": "Mug", "at": "CounterTop|1", "state": {"isDirty": True}},
        {"type": "Bread", "at": "CounterTop|1"},
        {"type": "Apple", "at": "CounterTop|1"},
        {"type": "Knife", "at": "CounterTop|1"},
        {"type": "Milk", "at": "Fridge|1"},
        {"type": "Plate", "at": "CounterTop|1", "capacity": 1},
        {"type": "Egg", "at": "Plate|1"},
    ],
}


def lab(**extra) -> SymbolicWorld:
    data = dict(LAB)
    data.update(extra)
    return SymbolicWorld(scene_from_dict(data, source="lab"))


@pytest.fixture
def kitchen() -> SymbolicWorld:
    return SymbolicWorld(load_scene("tidy_kitchen"))


def test_symbolic_world_is_a_world_backend(kitchen):
    assert isinstance(kitchen, WorldBackend) and kitchen.name == "symbolic"
    metadata = kitchen.metadata
    for key in ("objects", "agent", "inventoryObjects", "sceneName", "lastAction", "lastActionSuccess",
                "errorMessage", "actionReturn"):
        assert key in metadata
    assert metadata["sceneName"] == "tidy_kitchen" and metadata["inventoryObjects"] == []


def test_factory_makes_symbolic_and_refuses_the_rest_clearly():
    world = make_backend("symbolic", "tidy_kitchen", seed=None)
    assert isinstance(world, SymbolicWorld)
    with pytest.raises(BackendUnavailableError, match="not available"):
        make_backend("fetch", "tidy_kitchen", None)
    with pytest.raises(BackendUnavailableError, match="takes no seed"):  # the simulator places things
        make_backend("ai2thor", "tidy_kitchen", 3)
    with pytest.raises(BackendUnavailableError, match="unknown world backend"):
        make_backend("gazebo", "tidy_kitchen", None)


def test_unknown_object_id_fails_and_changes_nothing(kitchen):
    for action in ("PickupObject", "PutObject", "OpenObject", "CloseObject", "ToggleObjectOn",
                   "ToggleObjectOff", "SliceObject", "NavigateToObject"):
        code = "not_holding" if action == "PutObject" else "invalid_object"
        metadata = fails(kitchen, action, code, objectId="Cabinet|1")
        if code == "invalid_object":
            assert metadata["errorMessage"].startswith("Object ID appears to be invalid.")


def test_malformed_calls_fail_cleanly(kitchen):
    fails(kitchen, "Fly", "InvalidAction")
    fails(kitchen, "Teleport", "MissingArguments")
    fails(kitchen, "PickupObject", "MissingArguments")
    fails(kitchen, "PickupObject", "InvalidArgument", objectId="Mug|1", speed=3)
    before = world_part(kitchen.metadata)
    metadata = kitchen.step(42)
    assert not metadata["lastActionSuccess"] and metadata["errorCode"] == "InvalidAction"
    assert world_part(metadata) == before


def test_navigate_then_pickup_and_put(kitchen):
    fails(kitchen, "PickupObject", "not_near", objectId="Mug|2")
    metadata = ok(kitchen, "NavigateToObject", objectId="Mug|2")
    assert metadata["agent"]["location"] == "Mug|2"
    assert objects_by_id(metadata)["Mug|2"]["distance"] <= 1.75
    assert objects_by_id(metadata)["Mug|2"]["isInteractable"]
    metadata = ok(kitchen, "PickupObject", objectId="Mug|2")
    mug = objects_by_id(metadata)["Mug|2"]
    assert mug["isPickedUp"] and mug["parentReceptacles"] == []
    assert "Mug|2" not in objects_by_id(metadata)["DishRack|1"]["receptacleObjectIds"]
    assert metadata["inventoryObjects"] == [{"objectId": "Mug|2", "objectType": "Mug"}]
    ok(kitchen, "NavigateToObject", objectId="Sink|1")
    metadata = ok(kitchen, "PutObject", objectId="Sink|1")
    assert objects_by_id(metadata)["Mug|2"]["parentReceptacles"] == ["Sink|1"]
    assert objects_by_id(metadata)["Sink|1"]["receptacleObjectIds"] == ["Mug|2"]
    assert metadata["inventoryObjects"] == [] and not objects_by_id(metadata)["Mug|2"]["isPickedUp"]


def test_pickup_failures(kitchen):
    ok(kitchen, "NavigateToObject", objectId="DishRack|1")
    fails(kitchen, "PickupObject", "not_pickupable", objectId="DishRack|1")
    ok(kitchen, "PickupObject", objectId="Mug|2")
    fails(kitchen, "PickupObject", "already_holding", objectId="Mug|2")
    fails(kitchen, "PickupObject", "hand_full", objectId="GlassTumbler|2")


def test_objects_in_closed_receptacles_are_invisible_and_cannot_be_taken():
    world = lab()
    assert not objects_by_id(world.metadata)["Milk|1"]["visible"]
    ok(world, "NavigateToObject", objectId="Milk|1")
    fails(world, "PickupObject", "not_visible", objectId="Milk|1")
    ok(world, "OpenObject", objectId="Fridge|1")
    assert objects_by_id(world.metadata)["Milk|1"]["visible"]
    ok(world, "PickupObject", objectId="Milk|1")


def test_put_failures(kitchen):
    fails(kitchen, "PutObject", "not_holding", objectId="Sink|1")
    ok(kitchen, "NavigateToObject", objectId="Mug|1")
    ok(kitchen, "PickupObject", objectId="Mug|1")
    fails(kitchen, "PutObject", "not_near", objectId="Cupboard|1")
    fails(kitchen, "PutObject", "invalid_target", objectId="Mug|1")
    fails(kitchen, "PutObject", "not_receptacle", objectId="CokeCan|1")
    ok(kitchen, "NavigateToObject", objectId="Cupboard|1")
    fails(kitchen, "PutObject", "receptacle_closed", objectId="Cupboard|1")
    ok(kitchen, "OpenObject", objectId="Cupboard|1")
    ok(kitchen, "PutObject", objectId="Cupboard|1")


def test_full_receptacle_blocks_placement():
    world = lab()
    ok(world, "NavigateToObject", objectId="Plate|1")
    ok(world, "PickupObject", objectId="Apple|1")
    metadata = fails(world, "PutObject", "receptacle_full", objectId="Plate|1")
    assert "No valid positions to place object found" in metadata["errorMessage"]
    ok(world, "PutObject", objectId="CounterTop|1")
    ok(world, "PickupObject", objectId="Egg|1")  # take the object that is in the way
    ok(world, "PutObject", objectId="CounterTop|1")
    ok(world, "PickupObject", objectId="Apple|1")
    ok(world, "PutObject", objectId="Plate|1")


def test_picking_up_a_receptacle_takes_its_contents_along():
    world = lab()
    ok(world, "NavigateToObject", objectId="Plate|1")
    ok(world, "PickupObject", objectId="Plate|1")
    metadata = ok(world, "NavigateToObject", objectId="Sink|1")
    by_id = objects_by_id(metadata)
    assert by_id["Egg|1"]["parentReceptacles"] == ["Plate|1"] and by_id["Egg|1"]["distance"] <= 1.75
    fails(world, "PutObject", "invalid_target", objectId="Egg|1")  # not into its own content
    ok(world, "PutObject", objectId="Sink|1")


def test_drop_hand_object(kitchen):
    fails(kitchen, "DropHandObject", "not_holding")
    ok(kitchen, "NavigateToObject", objectId="CokeCan|1")
    ok(kitchen, "PickupObject", objectId="CokeCan|1")
    metadata = ok(kitchen, "DropHandObject")
    can = objects_by_id(metadata)["CokeCan|1"]
    assert not can["isPickedUp"] and can["parentReceptacles"] == [] and metadata["inventoryObjects"] == []


def test_open_and_close(kitchen):
    fails(kitchen, "OpenObject", "not_near", objectId="Fridge|1")
    ok(kitchen, "NavigateToObject", objectId="Fridge|1")
    fails(kitchen, "CloseObject", "already_closed", objectId="Fridge|1")
    metadata = ok(kitchen, "OpenObject", objectId="Fridge|1")
    assert objects_by_id(metadata)["Fridge|1"]["isOpen"] and objects_by_id(metadata)["Fridge|1"]["openness"] == 1.0
    fails(kitchen, "OpenObject", "already_open", objectId="Fridge|1")
    fails(kitchen, "OpenObject", "InvalidArgument", objectId="Fridge|1", openness=2)
    metadata = ok(kitchen, "CloseObject", objectId="Fridge|1")
    assert not objects_by_id(metadata)["Fridge|1"]["isOpen"]
    ok(kitchen, "NavigateToObject", objectId="DiningTable|1")
    metadata = fails(kitchen, "OpenObject", "not_openable", objectId="DiningTable|1")
    assert "is not an Openable object" in metadata["errorMessage"]
    fails(kitchen, "CloseObject", "not_openable", objectId="DiningTable|1")


def test_force_action_skips_distance_and_visibility_like_ai2thor(kitchen):
    ok(kitchen, "OpenObject", objectId="Fridge|1", forceAction=True)


def test_toggle_on_and_off():
    world = lab()
    ok(world, "NavigateToObject", objectId="Toaster|1")
    fails(world, "ToggleObjectOff", "already_off", objectId="Toaster|1")
    metadata = ok(world, "ToggleObjectOn", objectId="Toaster|1")
    assert objects_by_id(metadata)["Toaster|1"]["isToggled"]
    fails(world, "ToggleObjectOn", "already_on", objectId="Toaster|1")
    ok(world, "ToggleObjectOff", objectId="Toaster|1")
    fails(world, "ToggleObjectOn", "not_toggleable", objectId="Mug|1")
    # an open microwave cannot be started; a running one cannot be opened
    ok(world, "OpenObject", objectId="Microwave|1")
    fails(world, "ToggleObjectOn", "must_be_closed", objectId="Microwave|1")
    ok(world, "CloseObject", objectId="Microwave|1")
    ok(world, "ToggleObjectOn", objectId="Microwave|1")
    fails(world, "OpenObject", "must_be_off", objectId="Microwave|1")


def test_faucet_rinses_dirty_dish_in_sink():
    world = lab()
    ok(world, "NavigateToObject", objectId="Mug|1")
    ok(world, "PickupObject", objectId="Mug|1")
    ok(world, "NavigateToObject", objectId="Sink|1")
    ok(world, "PutObject", objectId="Sink|1")
    assert objects_by_id(world.metadata)["Mug|1"]["isDirty"]
    ok(world, "NavigateToObject", objectId="Faucet|1")
    metadata = ok(world, "ToggleObjectOn", objectId="Faucet|1")
    mug = objects_by_id(metadata)["Mug|1"]
    assert not mug["isDirty"] and mug["isFilledWithLiquid"] and mug["fillLiquid"] == "water"


def test_coffee_machine_fills_mug_in_either_order():
    world = lab()
    ok(world, "NavigateToObject", objectId="CoffeeMachine|1")
    ok(world, "ToggleObjectOn", objectId="CoffeeMachine|1")
    ok(world, "PickupObject", objectId="Mug|1")
    assert not objects_by_id(world.metadata)["Mug|1"]["isFilledWithLiquid"]
    metadata = ok(world, "PutObject", objectId="CoffeeMachine|1")
    assert objects_by_id(metadata)["Mug|1"]["fillLiquid"] == "coffee"


def test_slicing_bread_and_toasting_a_slice():
    world = lab()
    ok(world, "NavigateToObject", objectId="Bread|1")
    metadata = ok(world, "SliceObject", objectId="Bread|1")
    by_id = objects_by_id(metadata)
    slices = [oid for oid, o in by_id.items() if o["objectType"] == "BreadSliced"]
    assert by_id["Bread|1"]["isSliced"] and len(slices) == 4
    assert all(by_id[s]["parentReceptacles"] == ["CounterTop|1"] for s in slices)
    assert set(slices) <= set(by_id["CounterTop|1"]["receptacleObjectIds"])
    fails(world, "SliceObject", "already_sliced", objectId="Bread|1")
    fails(world, "PickupObject", "not_pickupable", objectId="Bread|1")
    fails(world, "SliceObject", "not_sliceable", objectId="Mug|1")
    ok(world, "PickupObject", objectId=slices[0])
    ok(world, "PutObject", objectId="Toaster|1")
    metadata = ok(world, "ToggleObjectOn", objectId="Toaster|1")
    assert objects_by_id(metadata)[slices[0]]["isCooked"]
    assert not objects_by_id(metadata)[slices[1]]["isCooked"]


def test_slicing_needs_a_knife_when_the_scene_says_so():
    world = lab(slice_requires_knife=True)
    ok(world, "NavigateToObject", objectId="Apple|1")
    fails(world, "SliceObject", "needs_knife", objectId="Apple|1")
    ok(world, "PickupObject", objectId="Knife|1")
    metadata = ok(world, "SliceObject", objectId="Apple|1")
    assert sum(o["objectType"] == "AppleSliced" for o in metadata["objects"]) == 3
    ok(world, "PutObject", objectId="CounterTop|1")
    ok(world, "PickupObject", objectId="Egg|1")
    fails(world, "SliceObject", "slice_held", objectId="Egg|1")


def test_fridge_chills_its_contents():
    world = lab()
    assert objects_by_id(world.metadata)["Milk|1"]["temperature"] == "Cold"


def test_same_seed_same_world_and_different_seeds_differ():
    scene = load_scene("tidy_kitchen")
    plain = SymbolicWorld(scene).metadata
    assert [o["objectId"] for o in plain["objects"]] == [o["objectId"] for o in scene.objects]
    first = world_part(SymbolicWorld(scene, seed=7).metadata)
    again = world_part(SymbolicWorld(scene, seed=7).metadata)
    other = world_part(SymbolicWorld(scene, seed=8).metadata)
    assert first == again
    assert first != other
    table = lambda m: objects_by_id(m)["DiningTable|1"]["receptacleObjectIds"]  # noqa: E731
    assert sorted(table(first)) == sorted(table(plain))  # same things, other order
    assert table(first) != table(other) or [o["objectId"] for o in first["objects"]] != [
        o["objectId"] for o in other["objects"]]
    # the seed never changes what the user wants or where the paper put things
    assert {o["objectId"]: o["parentReceptacles"] for o in first["objects"]} == {
        o["objectId"]: o["parentReceptacles"] for o in plain["objects"]}


def test_seed_picks_among_allowed_places():
    scene = scene_from_dict({
        "task": "t", "location": "kitchen",
        "objects": [{"type": "DiningTable"}, {"type": "CounterTop"},
                    {"type": "Mug", "at": ["DiningTable|1", "CounterTop|1"]}],
    }, source="options")
    def place(seed):
        return objects_by_id(SymbolicWorld(scene, seed=seed).metadata)["Mug|1"]["parentReceptacles"]
    assert objects_by_id(SymbolicWorld(scene).metadata)["Mug|1"]["parentReceptacles"] == ["DiningTable|1"]
    seen = {tuple(place(seed)) for seed in range(20)}
    assert seen == {("DiningTable|1",), ("CounterTop|1",)}
    assert all(place(seed) == place(seed) for seed in range(5))


def test_world_does_not_share_state_with_its_scene_or_metadata(kitchen):
    scene = kitchen.scene
    metadata = kitchen.metadata
    metadata["objects"][0]["parentReceptacles"].append("junk")
    ok(kitchen, "NavigateToObject", objectId="Mug|2")
    ok(kitchen, "PickupObject", objectId="Mug|2")
    assert scene.object("Mug|2")["parentReceptacles"] == ["DishRack|1"]
    assert "junk" not in objects_by_id(kitchen.metadata)[metadata["objects"][0]["objectId"]]["parentReceptacles"]


def test_fixture_scene_is_actionable():
    world = SymbolicWorld(load_scene(str(FLOORPLAN1)))
    egg = next(o["objectId"] for o in world.metadata["objects"] if o["objectType"] == "Egg")
    fridge = next(o["objectId"] for o in world.metadata["objects"] if o["objectType"] == "Fridge")
    ok(world, "NavigateToObject", objectId=egg)
    fails(world, "PickupObject", "not_visible", objectId=egg)
    ok(world, "OpenObject", objectId=fridge)
    ok(world, "PickupObject", objectId=egg)
    assert world.metadata["inventoryObjects"][0]["objectId"] == egg


def test_put_into_a_receptacle_hidden_in_a_closed_one_fails():
    world = SymbolicWorld(scene_from_dict({
        "task": "t", "location": "kitchen",
        "objects": [{"type": "CounterTop"}, {"type": "Fridge"}, {"type": "Bowl", "at": "Fridge|1"},
                    {"type": "Apple", "at": "CounterTop|1"}],
        "agent": {"position": {"x": 0.0, "y": 0.9, "z": 0.0}},
    }, source="hidden"))
    ok(world, "NavigateToObject", objectId="Apple|1")
    ok(world, "PickupObject", objectId="Apple|1")
    ok(world, "NavigateToObject", objectId="Fridge|1")
    fails(world, "PutObject", "not_visible", objectId="Bowl|1")
    fails(world, "NavigateToObject", "invalid_object", objectId="Bowl|9")
    ok(world, "OpenObject", objectId="Fridge|1")
    metadata = ok(world, "PutObject", objectId="Bowl|1")
    assert objects_by_id(metadata)["Apple|1"]["parentReceptacles"] == ["Bowl|1"]
    assert objects_by_id(metadata)["Apple|1"]["temperature"] == "Cold"  # chilled inside the bowl too


def test_pass_and_done_change_nothing(kitchen):
    before = world_part(kitchen.metadata)
    for action in ("Pass", "Done"):
        metadata = ok(kitchen, action)
        assert metadata["lastAction"] == action and world_part(metadata) == before


def test_dishwasher_cleans_dirty_dishes_when_run_closed(kitchen):
    ok(kitchen, "NavigateToObject", objectId="Mug|1")
    ok(kitchen, "PickupObject", objectId="Mug|1")
    ok(kitchen, "NavigateToObject", objectId="Dishwasher|1")
    ok(kitchen, "OpenObject", objectId="Dishwasher|1")
    ok(kitchen, "PutObject", objectId="Dishwasher|1")
    fails(kitchen, "ToggleObjectOn", "must_be_closed", objectId="Dishwasher|1")
    ok(kitchen, "CloseObject", objectId="Dishwasher|1")
    assert objects_by_id(kitchen.metadata)["Mug|1"]["isDirty"]
    metadata = ok(kitchen, "ToggleObjectOn", objectId="Dishwasher|1")
    assert not objects_by_id(metadata)["Mug|1"]["isDirty"] and not objects_by_id(metadata)["Mug|1"]["visible"]


def test_effect_rules_are_a_replaceable_table():
    from task_learning.world.effects import RULES, StateRule

    assert {r.name for r in RULES} >= {"rinse", "brew coffee", "toast"}
    world = SymbolicWorld(scene_from_dict(LAB, source="lab"), rules=())
    ok(world, "NavigateToObject", objectId="CoffeeMachine|1")
    ok(world, "PickupObject", objectId="Mug|1")
    ok(world, "PutObject", objectId="CoffeeMachine|1")
    ok(world, "ToggleObjectOn", objectId="CoffeeMachine|1")
    assert not objects_by_id(world.metadata)["Mug|1"]["isFilledWithLiquid"]  # no rules, no coffee
    spill = StateRule(name="spill", device_types=("CoffeeMachine",), applies=lambda o: True,
                      effect={"isDirty": True})
    world = SymbolicWorld(scene_from_dict(LAB, source="lab"), rules=(spill,))
    ok(world, "NavigateToObject", objectId="CoffeeMachine|1")
    ok(world, "ToggleObjectOn", objectId="CoffeeMachine|1")
    ok(world, "PickupObject", objectId="Bread|1")
    ok(world, "PutObject", objectId="CoffeeMachine|1")
    assert objects_by_id(world.metadata)["Bread|1"]["isDirty"]


def test_run_action_reports_outcomes(kitchen):
    from task_learning.types import ActionCall
    from task_learning.world.outcome import run_action

    outcome = run_action(kitchen, ActionCall("PickupObject", "Cabinet|1"))
    assert not outcome.success and outcome.blocking_condition == "invalid_object"
    assert "Object ID appears to be invalid." in outcome.error_message
    assert run_action(kitchen, ActionCall("NavigateToObject", "Fridge|1")).success
    outcome = run_action(kitchen, ActionCall("OpenObject", "Fridge|1", (("openness", 0.5),)))
    assert outcome.success and outcome.error_message == ""
    assert objects_by_id(kitchen.metadata)["Fridge|1"]["openness"] == 0.5


def test_seed_keeps_recorded_positions_of_a_fixture():
    scene = load_scene(str(FLOORPLAN1))
    plain = objects_by_id(SymbolicWorld(scene).metadata)
    seeded = objects_by_id(SymbolicWorld(scene, seed=3).metadata)
    assert all(seeded[oid]["position"] == plain[oid]["position"] for oid in plain)
    assert all(seeded[oid]["parentReceptacles"] == plain[oid]["parentReceptacles"] for oid in plain)
