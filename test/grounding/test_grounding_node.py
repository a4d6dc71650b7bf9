"""grounding_node as a separate process: the mug example through the AnalyzeGoal service, bad
requests answered without stopping the node, and the world_state topic replacing the scene."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from task_learning_interfaces import msg as msgs
from task_learning_interfaces import srv
from test.ros_testing import wait_until

SERVICE = "grounding/analyze_goal"
REFERENCE = Path(__file__).parents[1] / "data" / "grounding" / "stars_mug_example.yaml"


@pytest.fixture(scope="module")
def node_process(ros_module_graph):
    proc = ros_module_graph.start_node("grounding", "-p", "scene:=tidy_kitchen", params_file="grounding.yaml")
    yield proc
    code, out = proc.stop()
    assert code == 0, out


@pytest.fixture(scope="module")
def client(ros_module_graph, node_process):
    client = ros_module_graph.client("test_grounding_client")
    # the first call also waits for the service (a node starting on a loaded machine is slow)
    call(client, "the goal is that the mug is in the cupboard", timeout=60.0)
    return client


def call(client, text: str, object_id: str = "Mug|2", source: str = "initial", timeout: float = 30.0):
    request = srv.AnalyzeGoal.Request()
    request.candidate.text = text
    request.candidate.source = source
    request.candidate.parent_id = -1
    request.task = "tidy kitchen"
    request.location = "kitchen"
    request.object_id = object_id
    return client.call(srv.AnalyzeGoal, SERVICE, request, timeout=timeout)


def expected():
    data = yaml.safe_load(REFERENCE.read_text())["analysis"]
    rows = [(t, "viable", "") for t in data["viable"]]
    rows += [(t, "uninterpretable", "") for t in data["uninterpretable"]]
    rows += [(d["text"], "unknown_word", "No. Unknown word started.") for d in data["unknown_word"]]
    rows += [(d["text"], "ungrounded_object", "No. Cannot see a cabinet.") for d in data["ungrounded_object"]]
    rows += [(d["text"], "affordance_mismatch", "") for d in data["affordance_mismatch"]]
    return rows


def test_mug_example_through_the_service(client):
    rows = expected()
    assert len(rows) == 13
    for text, kind, feedback in rows:
        response = call(client, text)
        assert response.success, response.message
        result = response.candidate
        assert result.analyzed and result.text == text
        if kind == "viable":
            assert result.viable, (text, [m.detail for m in result.mismatches])
            assert result.literals and result.literals[0].args[0] == "Mug|2"
            assert response.message == "Ok."
        else:
            assert not result.viable, text
            assert {m.kind for m in result.mismatches} == {kind}, text
            if feedback:
                assert result.mismatches[0].feedback == feedback
    rack = call(client, "the goal is that the mug is in the dish rack and the dish rack is in the cupboard")
    assert rack.message == "No. Rack is not grabbable."


def test_object_by_name_and_duplicates(client):
    sentence = "the goal is that the steak knife is in the drawer"
    by_name = call(client, sentence, object_id="steak knife on counter")
    assert by_name.success, by_name.message
    assert by_name.candidate.literals[0].args == ["SteakKnife|2", "Drawer|1"]
    assert call(client, sentence, object_id="SteakKnife|1").candidate.literals[0].args[0] == "SteakKnife|1"


@pytest.mark.parametrize("text,kind", [
    ("", "uninterpretable"),
    ("x" * 10240, "uninterpretable"),
    ("the goal is that the mug is in the caf\u00e9 \u2603", "unknown_word"),
    ("the goal is that the mug\x00 is in the\x1b cupboard", "uninterpretable"),
    ("the goal is that \n the mug is in the\tcupboard", None),
])
def test_bad_text_gets_a_verdict_and_the_node_keeps_serving(client, node_process, text, kind):
    response = call(client, text)
    assert response.success, response.message
    if kind is None:
        assert response.candidate.viable
    else:
        assert not response.candidate.viable
        assert response.candidate.mismatches[0].kind == kind
    assert node_process.poll() is None
    assert call(client, "the goal is that the mug is in the cupboard").candidate.viable


@pytest.mark.parametrize("object_id", ["Spaceship|1", "spaceship", "mug"])
def test_unknown_or_ambiguous_object_is_refused_clearly(client, node_process, object_id):
    response = call(client, "the goal is that the mug is in the cupboard", object_id=object_id)
    assert not response.success
    assert response.message
    assert node_process.poll() is None
    assert call(client, "the goal is that the mug is in the cupboard").success


def test_bad_candidate_source_is_refused(client):
    response = call(client, "the goal is that the mug is in the cupboard", source="telepathy")
    assert not response.success and "telepathy" in response.message


def test_world_state_topic_replaces_the_scene(client):
    """After perception publishes a world with a cabinet, "cabinet" grounds."""
    from task_learning.grounding.scene_state import scene_metadata
    from task_learning.world.state import world_state_from_metadata
    from task_learning_nodes.plumbing import convert

    sentence = "the goal is that the mug is in the cabinet and the cabinet is closed"
    assert call(client, sentence).candidate.mismatches[0].kind == "ungrounded_object"
    metadata = scene_metadata("tidy_kitchen")
    cupboard = next(o for o in metadata["objects"] if o["objectType"] == "Cupboard")
    metadata["objects"].append(dict(cupboard, objectId="Cabinet|1", objectType="Cabinet",
                                    name="Cabinet_1", receptacleObjectIds=[]))
    message = convert.world_state_to_msg(world_state_from_metadata(metadata))
    publisher = client.publisher_matched(msgs.WorldState, "world_state", 1)

    def grounds() -> bool:  # published again each time: the node keeps the newest world it got
        publisher.publish(message)
        return call(client, sentence).candidate.viable

    assert wait_until(grounds, 30.0, "the cabinet grounding once the world arrives", interval=0.2)
    client.node.destroy_publisher(publisher)
