"""Scene loading: the paper's three scenes, recorded AI2-THOR metadata, and bad scene files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from task_learning.errors import ConfigError
from task_learning.world.scene import load_metadata_scenes, load_scene, scene_from_dict, scene_from_metadata
from task_learning.world.symbolic import SymbolicWorld
from test.shared_paths import FLOORPLAN1, SIX_SCENES

KITCHEN_FURNITURE = {"DiningTable", "CounterTop", "DishRack", "GarbageCan", "RecyclingBin", "Pantry",
                     "Cupboard", "Fridge", "Dishwasher", "Drawer", "Sink"}


def test_tidy_kitchen_matches_table_4_and_6():
    scene = load_scene("tidy_kitchen")
    by_id = scene.by_id()
    assert (scene.task, scene.location) == ("tidy kitchen", "kitchen")
    assert len(scene.task_objects) == 35 and scene.assertions == 40
    furniture = [o for o in scene.objects if o["objectId"] not in scene.task_objects]
    assert {o["objectType"] for o in furniture} == KITCHEN_FURNITURE and len(furniture) == 11
    assert not any(o["objectType"] == "Cabinet" for o in scene.objects)
    # every task object is grabbable and starts on the table, the counter or in the dish rack
    for oid in scene.task_objects:
        assert by_id[oid]["pickupable"]
        assert by_id[oid]["parentReceptacles"][0] in {"DiningTable|1", "CounterTop|1", "DishRack|1"}
    # the duplicates: same type, different place, different destination
    assert by_id["Mug|1"]["parentReceptacles"] == ["CounterTop|1"]
    assert by_id["Mug|2"]["parentReceptacles"] == ["DishRack|1"]
    assert scene.preferences["Mug|1"] == ["Sink|1", "Dishwasher|1"]
    assert scene.preferences["Mug|2"] == ["Cupboard|1"]
    assert scene.preferences["SteakKnife|1"] == ["Drawer|1"]
    assert scene.preferences["SteakKnife|2"] == ["Sink|1", "Dishwasher|1"]
    for kind in ("GlassTumbler", "CeramicPlate"):
        assert scene.preferences[f"{kind}|1"] != scene.preferences[f"{kind}|2"]
    assert sorted(scene.closable) == sorted(["Pantry|1", "Cupboard|1", "Fridge|1", "Dishwasher|1", "Drawer|1"])
    assert all(by_id[c]["openable"] and not by_id[c]["isOpen"] for c in scene.closable)
    assert [s.places for s in scene.subtasks] == [["DiningTable|1"], ["CounterTop|1"], ["DishRack|1"]]
    assert by_id["Mug|1"]["isDirty"] and not by_id["Mug|2"]["isDirty"]
    assert any("dirty" in sentence for sentence in scene.context)
    # containment is mirrored both ways
    for record in scene.objects:
        for parent in record["parentReceptacles"]:
            assert record["objectId"] in by_id[parent]["receptacleObjectIds"]


def test_groceries_and_office_counts():
    groceries = load_scene("store_groceries")
    assert (len(groceries.task_objects), groceries.assertions) == (15, 18)
    bags = {o["objectId"] for o in groceries.objects if o["objectType"] == "Bag"}
    assert len(bags) == 3
    assert all(groceries.by_id()[oid]["parentReceptacles"][0] in bags for oid in groceries.task_objects)
    office = load_scene("organize_office")
    assert (len(office.task_objects), office.assertions, office.location) == (12, 14, "office")
    furniture = {o["objectType"] for o in office.objects if not o["parentReceptacles"]}
    assert furniture == {"Desk", "Chair", "FilingCabinet", "Bookshelf", "GarbageCan", "RecyclingBin", "Drawer"}
    assert sorted(office.closable) == ["Drawer|1", "FilingCabinet|1"]


def test_objects_carry_the_ai2thor_object_schema():
    scene = load_scene("tidy_kitchen")
    raw = json.loads(FLOORPLAN1.read_text())
    ai2thor_keys = set(next(iter(raw.values())))
    assert len(ai2thor_keys) == 42
    for record in scene.objects:
        assert ai2thor_keys <= set(record), ai2thor_keys - set(record)


def test_floorplan1_fixture_loads_with_containment_from_parent_receptacles():
    raw = json.loads(FLOORPLAN1.read_text())
    scene = load_scene(str(FLOORPLAN1))
    assert scene.name == "FloorPlan1_physics" and scene.location == "kitchen"
    metadata = SymbolicWorld(scene).metadata
    assert len(metadata["objects"]) == len(raw) == 77
    by_id = {o["objectId"]: o for o in metadata["objects"]}
    for object_id, record in raw.items():
        assert by_id[object_id]["parentReceptacles"] == (record["parentReceptacles"] or [])
        assert sorted(by_id[object_id]["receptacleObjectIds"]) == sorted(record["receptacleObjectIds"] or [])
    # the egg recorded in the closed fridge cannot be seen
    egg = next(o for o in metadata["objects"] if o["objectType"] == "Egg")
    assert egg["parentReceptacles"][0].startswith("Fridge|") and not egg["visible"]


def test_six_scene_fixture_loads_every_scene():
    raw = json.loads(SIX_SCENES.read_text())
    scenes = load_metadata_scenes(SIX_SCENES)
    assert sorted(scenes) == sorted(raw)
    for key, records in raw.items():
        metadata = SymbolicWorld(scenes[key]).metadata
        by_id = {o["objectId"]: o for o in metadata["objects"]}
        assert len(by_id) == len(records)
        movable = {r["objectId"] for r in records if r["pickupable"] or r["moveable"]}
        for record in records:
            recorded = record["parentReceptacles"] or []
            if record["objectId"] not in movable:  # AI2-THOR's "cabinet in a cup": dropped
                recorded = [p for p in recorded if p not in movable]
            assert by_id[record["objectId"]]["parentReceptacles"] == recorded
    # FloorPlan9 records a cabinet "in" a cup and a counter top "in" a plate and a toaster (each
    # the other way round too): the fixed objects' links are dropped, nothing else
    nine = scenes["9"].by_id()
    assert nine["Cabinet|+01.02|+02.01|-00.61"]["parentReceptacles"] == []
    assert nine["Cup|+01.18|+01.65|-00.75"]["parentReceptacles"] == ["Cabinet|+01.02|+02.01|-00.61"]
    assert scenes["306"].location == "bedroom" and scenes["404"].location == "bathroom"
    # objects with two parents (a mug in a coffee machine on a counter) keep both
    multi = [o for o in raw["9"] if o["parentReceptacles"] and len(o["parentReceptacles"]) > 1
             and (o["pickupable"] or o["moveable"])]
    assert multi
    one = load_scene(f"{SIX_SCENES}#9")
    for record in multi:
        assert one.by_id()[record["objectId"]]["parentReceptacles"] == record["parentReceptacles"]


def test_six_scene_file_without_key_names_the_choices():
    with pytest.raises(ConfigError, match="several scenes"):
        load_scene(str(SIX_SCENES))
    with pytest.raises(ConfigError, match="no such scene"):
        load_scene(f"{SIX_SCENES}#7")


def test_metadata_with_a_dangling_parent_is_rejected():
    objects = [{"objectId": "Mug|1", "objectType": "Mug", "parentReceptacles": ["Shelf|9"],
                "position": {"x": 0.0, "y": 0.0, "z": 0.0}}]
    with pytest.raises(ConfigError, match=r"parentReceptacles\[0\].*Shelf\|9"):
        scene_from_metadata(objects, "broken")


def test_unknown_scene_name_suggests_the_close_one():
    with pytest.raises(ConfigError, match="did you mean 'tidy_kitchen'"):
        load_scene("tidy_kitchn")


GOOD = """\
task: tidy kitchen
location: kitchen
objects:
  - {type: CounterTop}
  - {type: Fridge}
  - {type: Mug, at: CounterTop|1, preferred: Fridge|1}
closable: [Fridge|1]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scene.yaml"
    path.write_text(text)
    return path


def test_minimal_scene_file_loads(tmp_path):
    scene = load_scene(str(_write(tmp_path, GOOD)))
    assert scene.name == "scene" and scene.assertions == 2 and scene.task_objects == ["Mug|1"]


@pytest.mark.parametrize(
    "text, key, message",
    [
        (GOOD.replace("location:", "locaton:"), "locaton", "did you mean 'location'"),
        (GOOD.replace("preferred: Fridge|1", "prefered: Fridge|1"), "objects[2].prefered", "did you mean 'preferred'"),
        (GOOD.replace("{type: Fridge}", "{type: Fridgee}"), "objects[1].type", "unknown object type 'Fridgee'"),
        (GOOD.replace("at: CounterTop|1", "at: Cabinet|1"), "objects[2].at", "no object 'Cabinet|1'"),
        (GOOD.replace("preferred: Fridge|1", "preferred: Cupboard"), "objects[2].preferred", "no object 'Cupboard'"),
        (GOOD.replace("closable: [Fridge|1]", "closable: [CounterTop|1]"), "closable[0]", "not openable"),
        (GOOD + "assertions: 3\n", "assertions", "states 3 but the scene defines 2"),
        (GOOD.replace("{type: CounterTop}", "{type: CounterTop, state: {isOpen: true}}"),
         "objects[0].state.isOpen", "not openable"),
        (GOOD.replace("at: CounterTop|1", "at: Mug|1"), "objects[2].at", "cannot be inside itself"),
    ],
)
def test_bad_scene_files_name_file_and_key(tmp_path, text, key, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_scene(str(path))
    assert info.value.file == str(path)
    assert info.value.key == key
    assert message in str(info.value)


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = _write(tmp_path, GOOD + "objects: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        load_scene(str(path))
    assert info.value.file == str(path) and "malformed YAML" in str(info.value) and "line" in str(info.value)


def test_scene_types_extend_the_catalogue():
    scene = scene_from_dict({
        "task": "t", "location": "lab",
        "types": {"Beaker": {"pickupable": True, "canFillWithLiquid": True}},
        "objects": [{"type": "Desk"}, {"type": "Beaker", "at": "desk", "preferred": "Desk|1"}],
    })
    beaker = scene.object("Beaker|1")
    assert beaker["pickupable"] and beaker["canFillWithLiquid"] and beaker["parentReceptacles"] == ["Desk|1"]


def test_bad_type_declaration_names_the_key():
    with pytest.raises(ConfigError) as info:
        scene_from_dict({"task": "t", "location": "l", "types": {"Beaker": {"pickable": True}},
                         "objects": [{"type": "Beaker"}]}, source="s.yaml")
    assert info.value.key == "types.Beaker.pickable" and "did you mean 'pickupable'" in str(info.value)
