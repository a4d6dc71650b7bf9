"""Naming objects: ids, a type naming exactly one object, "<type> in|on <place>"."""
from __future__ import annotations

import pytest

from task_learning.errors import UnknownObjectError
from task_learning.world.resolve import describe_object, resolve_object
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld
from test.shared_paths import FLOORPLAN1

from ..world_helpers import ok


@pytest.fixture(scope="module")
def metadata():
    return SymbolicWorld(load_scene("tidy_kitchen")).metadata


@pytest.mark.parametrize("name, expected", [
    ("Mug|2", "Mug|2"),
    ("mug|2", "Mug|2"),
    ("mug in dish rack", "Mug|2"),
    ("Mug in the DishRack", "Mug|2"),
    ("mug-in-dish_rack", "Mug|2"),
    ("mug on counter", "Mug|1"),
    ("steak knife in dish rack", "SteakKnife|1"),
    ("steak_knife on the counter", "SteakKnife|2"),
    ("glass tumbler on table", "GlassTumbler|1"),
    ("ceramic-plate in dish-rack", "CeramicPlate|2"),
    ("dish rack", "DishRack|1"),
    ("DishRack", "DishRack|1"),
    ("the refrigerator", "Fridge|1"),
    ("fridge", "Fridge|1"),
    ("table", "DiningTable|1"),
    ("dining table", "DiningTable|1"),
    ("counter", "CounterTop|1"),
    ("box-of-aluminum-foil", "BoxOfAluminumFoil|1"),
    ("half and half", "HalfAndHalf|1"),
    ("cork screw", "Corkscrew|1"),
])
def test_names_resolve(metadata, name, expected):
    assert resolve_object(metadata, name) == expected


@pytest.mark.parametrize("name, message", [
    ("mug", "names 2 objects"),
    ("cabinet", "no object called 'cabinet'"),  # the kitchen has no cabinet: stays ungrounded
    ("mug in cupboard", "no mug in the cupboard"),
    ("Mug|9", "no object with id"),
    ("", "empty"),
    ("dish rakc", "did you mean 'dish rack'"),
])
def test_bad_names_say_why(metadata, name, message):
    with pytest.raises(UnknownObjectError, match=message):
        resolve_object(metadata, name)


def test_describe_object_gives_type_relation_place(metadata):
    assert describe_object(metadata, "Mug|2") == ("mug", "in", "dish rack")
    assert describe_object(metadata, "CokeCan|1") == ("coke can", "on", "counter")
    assert describe_object(metadata, "Milk|1") == ("milk", "on", "table")
    assert describe_object(metadata, "Fridge|1") == ("refrigerator", "in", "")
    with pytest.raises(UnknownObjectError):
        describe_object(metadata, "Nope|1")


def test_names_follow_the_world_as_it_changes():
    world = SymbolicWorld(load_scene("tidy_kitchen"))
    ok(world, "NavigateToObject", objectId="Mug|2")
    ok(world, "PickupObject", objectId="Mug|2")
    assert describe_object(world.metadata, "Mug|2") == ("mug", "in", "hand")
    assert resolve_object(world.metadata, "mug on counter") == "Mug|1"
    ok(world, "NavigateToObject", objectId="Fridge|1")
    ok(world, "OpenObject", objectId="Fridge|1")
    ok(world, "PutObject", objectId="Fridge|1")
    assert resolve_object(world.metadata, "mug in refrigerator") == "Mug|2"
    assert describe_object(world.metadata, "Mug|2") == ("mug", "in", "refrigerator")


def test_recorded_scene_ids_and_types_resolve():
    world = SymbolicWorld(load_scene(str(FLOORPLAN1)))
    metadata = world.metadata
    egg = next(o["objectId"] for o in metadata["objects"] if o["objectType"] == "Egg")
    assert resolve_object(metadata, "egg") == egg
    assert resolve_object(metadata, "egg in fridge") == egg
    assert resolve_object(metadata, egg) == egg
    assert describe_object(metadata, egg) == ("egg", "in", "refrigerator")
    with pytest.raises(UnknownObjectError, match="names"):
        resolve_object(metadata, "cabinet")


def test_place_named_by_a_type_with_several_instances():
    world = SymbolicWorld(load_scene(str(FLOORPLAN1)))
    metadata = world.metadata
    counters = [o["objectId"] for o in metadata["objects"] if o["objectType"] == "CounterTop"]
    assert len(counters) > 1
    on_counter = [o for o in metadata["objects"] if o["objectType"] == "Apple"]
    assert resolve_object(metadata, "apple on counter") == on_counter[0]["objectId"]
    with pytest.raises(UnknownObjectError, match="names"):
        resolve_object(metadata, "counter")
