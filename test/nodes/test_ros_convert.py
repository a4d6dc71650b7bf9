"""Round trips between the core's data and the ROS messages, for every type (no ROS graph needed)."""
from __future__ import annotations

import json
import math

import pytest

from task_learning.types import (
    ActionCall,
    ActionOutcome,
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    LLMUsage,
    Mismatch,
    MismatchKind,
    PromptTypeUsage,
    Truth,
)
from task_learning.world.state import object_from_metadata, world_state_from_metadata
from task_learning_interfaces import msg as m
from task_learning_nodes.plumbing import convert
from test.shared_paths import FLOORPLAN1

FIXTURE = FLOORPLAN1


def _angle_close(a: float, b: float, tol: float = 1e-6) -> bool:
    return abs(((a - b + 180.0) % 360.0) - 180.0) < tol


def _fixture_records() -> list[dict]:
    if FIXTURE.exists():
        return list(json.loads(FIXTURE.read_text()).values())
    return [_record("Mug|1", "Mug", parent="DishRack|1"), _record("DishRack|1", "DishRack")]


def _record(object_id: str, object_type: str, parent: str | None = None) -> dict:
    return {
        "objectId": object_id, "objectType": object_type, "name": object_id.replace("|", "_"),
        "position": {"x": 1.0, "y": 0.5, "z": -2.0}, "rotation": {"x": 0.0, "y": 270.0, "z": 0.0},
        "parentReceptacles": [parent] if parent else None, "receptacleObjectIds": None,
        "pickupable": True, "isOpen": False, "visible": True, "distance": 1.25,
        "fillLiquid": None, "salientMaterials": ["Ceramic"], "mass": 0.3,
    }


def _assert_records_equal(original: dict, back: dict) -> None:
    for key, value in original.items():
        if key == "rotation":
            for axis in "xyz":
                assert _angle_close(value[axis], back[key][axis]), (key, value, back[key])
        elif key in ("parentReceptacles", "receptacleObjectIds", "salientMaterials") and value is None:
            assert back[key] == []
        else:
            assert back[key] == value, key


@pytest.mark.parametrize("euler", [(0, 0, 0), (0, 270, 0), (10.5, 45, -30), (-60, 359, 179)])
def test_euler_quaternion_round_trip(euler):
    q = convert.euler_deg_to_quaternion(*euler)
    assert math.isclose(sum(c * c for c in q), 1.0, rel_tol=1e-9)
    back = convert.quaternion_to_euler_deg(*q)
    assert all(_angle_close(a, b) for a, b in zip(euler, back)), back


def test_yaw_quaternion_is_about_the_vertical_axis():
    qx, qy, qz, qw = convert.euler_deg_to_quaternion(0, 90, 0)
    assert (qx, qz) == (0.0, 0.0) and math.isclose(qy, math.sin(math.radians(45)))


def test_every_recorded_ai2thor_object_round_trips():
    records = _fixture_records()
    for record in records:
        msg = convert.object_state_to_msg(record)
        assert isinstance(msg, m.ObjectState)
        back = convert.object_state_from_msg(msg)
        _assert_records_equal(record, back)
        # a second trip changes nothing (the message carries the whole 42-key schema)
        again = convert.object_state_from_msg(convert.object_state_to_msg(back))
        assert set(again) == set(back)
        _assert_records_equal(back, again)


def test_object_state_typed_fields_and_extra():
    record = _record("Fridge|1", "Fridge")
    record.update(openable=True, isOpen=True, openness=0.7, receptacle=True,
                  receptacleObjectIds=["Milk|1"], customKey={"a": [1, 2]}, controlledObjects=None)
    msg = convert.object_state_to_msg(record)
    assert msg.is_open and msg.openable and msg.receptacle and msg.pickupable  # the record says True
    assert msg.openness == 0.7 and list(msg.receptacle_object_ids) == ["Milk|1"]
    assert [(kv.key, kv.value) for kv in msg.extra] == [("customKey", '{"a":[1,2]}')]
    back = convert.object_state_from_msg(msg)
    assert back["customKey"] == {"a": [1, 2]} and back["controlledObjects"] is None
    assert back["fillLiquid"] is None and back["temperature"] == "RoomTemp"


def test_object_without_id_is_rejected():
    with pytest.raises(KeyError):
        convert.object_state_to_msg({"objectType": "Mug"})


def _metadata() -> dict:
    objects = [_record("Mug|1", "Mug", parent="DishRack|1"), _record("DishRack|1", "DishRack")]
    return {
        "sceneName": "tidy_kitchen",
        "objects": objects,
        "agent": {"position": {"x": 0.5, "y": 0.9, "z": 1.5}, "rotation": {"x": 0, "y": 90, "z": 0},
                  "location": "kitchen"},
        "inventoryObjects": [{"objectId": "Mug|1", "objectType": "Mug"}],
    }


def test_metadata_world_state_round_trip():
    metadata = _metadata()
    msg = convert.world_state_msg_from_metadata(metadata, stamp=12.5, frame_id="map", backend="symbolic")
    assert msg.scene == "tidy_kitchen" and msg.backend == "symbolic" and msg.header.frame_id == "map"
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 500_000_000)
    assert list(msg.held_object_ids) == ["Mug|1"] and len(msg.objects) == 2
    back = convert.metadata_from_world_state_msg(msg)
    assert back["sceneName"] == "tidy_kitchen"
    assert back["inventoryObjects"] == metadata["inventoryObjects"]
    assert back["agent"]["location"] == "kitchen"
    assert "reachM" not in back["agent"]  # AI2-THOR's reach: the world said nothing
    assert back["agent"]["position"] == metadata["agent"]["position"]
    assert _angle_close(back["agent"]["rotation"]["y"], 90.0)
    for original, restored in zip(metadata["objects"], back["objects"]):
        _assert_records_equal(original, restored)


def test_a_robots_reach_crosses_the_topic():
    metadata = _metadata()
    metadata["agent"] = {**metadata["agent"], "reachM": 0.0}
    back = convert.metadata_from_world_state_msg(convert.world_state_msg_from_metadata(metadata))
    assert back["agent"]["reachM"] == 0.0


def test_typed_world_state_round_trip():
    state = world_state_from_metadata(_metadata(), stamp=3.25)
    msg = convert.world_state_to_msg(state)
    back = convert.world_state_from_msg(msg)
    assert back.scene == state.scene and back.stamp == pytest.approx(3.25)
    assert back.robot_location == "kitchen" and back.held_object_ids == ["Mug|1"]
    assert back.robot_position == state.robot_position
    for a, b in zip(state.objects, back.objects):
        assert (a.object_id, a.object_type, a.name, a.parent_receptacles, a.position, a.distance,
                a.visible) == (b.object_id, b.object_type, b.name, b.parent_receptacles, b.position,
                               b.distance, b.visible)
        assert all(_angle_close(x, y) for x, y in zip(a.rotation, b.rotation))
        assert b.flag("pickupable") == a.flag("pickupable")
    obj = object_from_metadata(_record("Mug|2", "Mug"))
    assert convert.world_object_from_msg(convert.world_object_to_msg(obj)).object_id == "Mug|2"


@pytest.mark.parametrize("truth", list(Truth))
def test_goal_literal_round_trip(truth):
    literal = GoalLiteral("inside", ("Mug|1", "Cupboard|1"), truth)
    msg = convert.goal_literal_to_msg(literal)
    assert msg.truth == getattr(m.GoalLiteral, truth.name)
    assert convert.goal_literal_from_msg(msg) == literal


def test_goal_literal_bad_truth_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown truth 'maybe'"):
        convert.goal_literal_from_msg(m.GoalLiteral(predicate="open", args=["Fridge|1"], truth="maybe"))
    assert convert.goal_literal_from_msg(m.GoalLiteral(predicate="open", args=["Fridge|1"])).truth is Truth.TRUE


@pytest.mark.parametrize("kind", list(MismatchKind))
def test_mismatch_round_trip(kind):
    mismatch = Mismatch(kind, "no cabinet in the kitchen", "No. Cannot see a cabinet.", "cabinet")
    msg = convert.mismatch_to_msg(mismatch)
    assert msg.kind == getattr(m.Mismatch, kind.name)
    assert convert.mismatch_from_msg(msg) == mismatch


@pytest.mark.parametrize("source", list(CandidateSource))
@pytest.mark.parametrize("viable", [None, True, False])
def test_goal_candidate_round_trip(source, viable):
    candidate = GoalCandidate(
        text="the mug goes in the cupboard", score=-0.42, source=source, candidate_id=7,
        parent_id=3, viable=viable,
        mismatches=[Mismatch(MismatchKind.UNGROUNDED_OBJECT, "d", "No. Cannot see a cabinet.", "cabinet")],
        literals=[GoalLiteral("inside", ("Mug|1", "Cupboard|1"))], repair_feedback="No.")
    msg = convert.goal_candidate_to_msg(candidate)
    assert msg.analyzed is (viable is not None)
    assert convert.goal_candidate_from_msg(msg) == candidate


def test_action_call_and_outcome_round_trip():
    call = ActionCall("PutObject", "Cupboard|1", (("forceAction", True), ("placeStationary", "yes"),
                                                  ("x", 0.5), ("nested", {"a": [1, None]})))
    msg = convert.action_call_to_msg(call)
    assert [kv.value for kv in msg.params][:2] == ["true", '"yes"']
    assert convert.action_call_from_msg(msg) == call
    outcome = ActionOutcome(call, False, "Cupboard|1 is not open", "Cupboard|1 closed")
    assert convert.action_outcome_from_msg(convert.action_outcome_to_msg(outcome)) == outcome
    # hand-written (non-JSON) values stay strings
    raw = m.ActionCall(action="OpenObject", object_id="Fridge|1", params=[m.KeyValue(key="k", value="abc")])
    assert convert.action_call_from_msg(raw).params == (("k", "abc"),)


def test_llm_usage_round_trip_and_totals():
    usage = LLMUsage(by_type={"initial": PromptTypeUsage(2, 100, 40, 1, 0),
                              "repair": PromptTypeUsage(1, 50, 10, 0, 1)})
    msg = convert.llm_usage_to_msg(usage)
    assert (msg.calls, msg.prompt_tokens, msg.completion_tokens, msg.cache_hits, msg.failures) == (3, 150, 50, 1, 1)
    assert [u.prompt_type for u in msg.by_type] == ["initial", "repair"]
    assert convert.llm_usage_from_msg(msg) == usage


def test_elicitation_counts_round_trip():
    counts = {"retrieved": 9, "proposed": 3, "sourced": 1, "instructions": 1, "yes_no": 2, "words": 14}
    assert convert.elicitation_counts_from_msg(convert.elicitation_counts_to_msg(counts)) == counts
    assert convert.elicitation_counts_to_msg({}).words == 0


def test_confirmation_round_trip():
    cand = GoalCandidate("the mug goes in the cupboard", -0.3, candidate_id=1, viable=True)
    request = ConfirmationRequest("r1", "Is the goal: the mug goes in the cupboard?", "Mug|1",
                                  "mug in the dish rack", cand, [cand], True, 30.0)
    msg = convert.confirmation_request_to_msg(request)
    assert len(msg.candidate) == 1
    assert convert.confirmation_request_from_msg(msg) == request
    empty = ConfirmationRequest("r2", "Describe the goal.")
    assert convert.confirmation_request_from_msg(convert.confirmation_request_to_msg(empty)) == empty
    for kind in AnswerKind:
        answer = ConfirmationAnswer("r1", kind, "in the cupboard", "panel", 1700000000.25)
        back = convert.confirmation_answer_from_msg(convert.confirmation_answer_to_msg(answer))
        assert back.stamp == pytest.approx(answer.stamp, abs=1e-6)
        back.stamp = answer.stamp
        assert back == answer
    with pytest.raises(ValueError, match="unknown answer 'perhaps'"):
        convert.confirmation_answer_from_msg(m.ConfirmationAnswer(request_id="r1", answer="perhaps"))


def test_candidate_tree_round_trip_and_derived_edges():
    nodes = [{"id": 0, "parent_id": -1, "label": "PutObject(Milk|1, CounterTop|1)", "kind": "goal",
              "status": "blocked", "detail": "not holding Milk|1"},
             {"id": 1, "parent_id": 0, "label": "PickupObject(Milk|1)", "kind": "resolution",
              "status": "open", "detail": ""}]
    msg = convert.candidate_tree_to_msg(nodes, kind="bcr", goal="on(Milk|1, CounterTop|1)",
                                        dot="digraph { 0 -> 1 }")
    assert [(e.parent_id, e.child_id) for e in msg.edges] == [(0, 1)]
    back = convert.candidate_tree_from_msg(msg)
    assert back["nodes"] == nodes and back["dot"] == "digraph { 0 -> 1 }" and back["kind"] == "bcr"


def test_time_round_trip():
    for stamp in (0.0, 1.5, 1700000000.999999999, 42.000000001):
        assert convert.time_from_msg(convert.time_to_msg(stamp)) == pytest.approx(stamp, abs=2e-9 * max(1, stamp))


def test_world_state_builder_reuses_unchanged_objects_and_sees_changes():
    metadata = _metadata()
    builder = convert.WorldStateBuilder(frame_id="map", backend="symbolic")
    first = builder.build(metadata, stamp=1.0)
    assert builder.rebuilt == 2 and first.header.frame_id == "map" and first.backend == "symbolic"
    second = builder.build(metadata, stamp=2.0)
    assert builder.rebuilt == 0 and second.objects[0] is first.objects[0]
    assert second.header.stamp.sec == 2
    # in-place change of a nested value (a backend updating its own dicts) is seen
    metadata["objects"][0]["position"]["x"] = 9.0
    metadata["objects"][1]["isOpen"] = True
    third = builder.build(metadata)
    assert builder.rebuilt == 2
    assert third.objects[0].pose.position.x == 9.0 and third.objects[1].is_open
    # the result equals a build from scratch; removed objects leave the cache
    assert third.objects == convert.world_state_msg_from_metadata(metadata).objects
    metadata["objects"].pop()
    assert [o.object_id for o in builder.build(metadata).objects] == ["Mug|1"]


def test_the_demo_prints_literals_the_one_way_the_project_does():
    """Issue 40: the demo printed `!open(Fridge|1)` where everything else prints `false:open(Fridge|1)`."""
    from task_learning.planning.loop import ObjectReport
    from task_learning_nodes.clients.demo import object_row

    report = ObjectReport("Butter|1", "butter on the counter", "done", goal="the goal is that the butter is in "
                          "the fridge and the fridge is closed", goal_source="elicited",
                          literals=[GoalLiteral("inside", ("Butter|1", "Fridge|1")),
                                    GoalLiteral("open", ("Fridge|1",), Truth.FALSE)])
    row = object_row(convert.object_outcome_to_msg(report))
    assert row["literals"] == [str(lit) for lit in report.literals] == ["inside(Butter|1, Fridge|1)",
                                                                       "false:open(Fridge|1)"]
