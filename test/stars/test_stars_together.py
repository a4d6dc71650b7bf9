"""Cross-object elicitation: every object's tree levels in shared round trips, the same goals as
one object after another, the operator's questions one at a time in the task's order, and nothing
unconfirmed executed under oversight."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import replace

import pytest

from task_learning.apps.cli import main as cli_main
from task_learning.kb import KnowledgeBase
from task_learning.llm.client import make_client
from task_learning.oversight.simulated import SimulatedOperator
from task_learning.planning.session import ELICITATION_MODES, RunSpec, run_in_process, task_order
from task_learning.stars.together import CrossObjectElicitor
from task_learning.types import AnswerKind, ConfirmationAnswer
from task_learning.world.resolve import describe_object
from task_learning.world.scene import load_scene
from test.ros_testing import wait_until

SCENE = "store_groceries"
SMALL = 5  # task objects per run: enough for shared round trips, light enough for a shared machine


def small_scene():
    """store_groceries with its first task objects only (the others stay where they are)."""
    scene = load_scene(SCENE)
    return replace(scene, task_objects=scene.task_objects[:SMALL])


class Recording:
    """Wraps an operator; keeps the questions in the order they were asked."""

    name = "recording"

    def __init__(self, inner) -> None:
        self.inner = inner
        self.asked: list[tuple[str, str]] = []

    def ask(self, request):
        self.asked.append((request.object_id, request.question))
        return self.inner.ask(request)


class RefusesAll:
    name = "refuses"

    def __init__(self) -> None:
        self.asked = 0

    def ask(self, request):
        self.asked += 1
        return ConfirmationAnswer(request.request_id, AnswerKind.NO, "", self.name, time.time())


def learn(tmp_path, mode: str, condition: str = "STARS+O", operator=None):
    client = make_client("offline")
    spec = RunSpec(scene=small_scene(), condition=condition, elicitation=mode, db=tmp_path / f"{mode}.sqlite")
    metrics, learner = run_in_process(spec, client=client, operator=operator)
    goals = [(r.object_id, r.context, r.goal, r.goal_source, r.outcome) for r in learner.reports]
    return metrics, goals, client


@pytest.mark.slow
def test_across_objects_learns_the_same_goals_with_the_questions_in_the_same_order(tmp_path):
    scene = small_scene()
    results = {}
    for mode in ("batched", "across-objects"):
        operator = Recording(SimulatedOperator.from_scene(scene))
        metrics, goals, client = learn(tmp_path, mode, operator=operator)
        results[mode] = (metrics, goals, client.usage, operator.asked)
    (m_b, goals_b, use_b, asked_b), (m_c, goals_c, use_c, asked_c) = results["batched"], results["across-objects"]
    assert goals_c == goals_b and asked_c == asked_b
    assert m_c.completion == m_b.completion and m_c.words == m_b.words and m_c.questions == m_b.questions > 0
    assert all(outcome == "done" for *_, outcome in goals_c)
    assert use_c.calls == use_b.calls and use_c.prompt_tokens == use_b.prompt_tokens
    # one object after another needs every object's levels; together, about one object's
    assert use_c.requests * 3 < use_b.requests
    assert use_c.requests <= 3 * 3 * 3 + 3 + m_c.proposed  # + reselections after a "no"


@pytest.mark.slow
def test_nothing_unconfirmed_is_executed_when_the_operator_refuses_everything(tmp_path):
    operator = RefusesAll()
    metrics, goals, _ = learn(tmp_path, "across-objects", operator=operator)
    assert operator.asked > 0
    assert all(outcome == "no_goal" and source == "" for _, _, _, source, outcome in goals)
    assert metrics.sourced == 0
    with KnowledgeBase(tmp_path / "across-objects.sqlite") as kb:
        assert kb.goals() == []


@pytest.mark.slow
def test_concurrent_batched_and_across_objects_agree_without_oversight(tmp_path):
    runs = {mode: learn(tmp_path, mode, condition="STARS") for mode in ELICITATION_MODES}
    reference = runs["concurrent"][1]
    assert all(goals == reference for _, goals, _ in runs.values())
    requests = {mode: client.usage.requests for mode, (_, _, client) in runs.items()}
    assert requests["concurrent"] == runs["concurrent"][2].usage.calls  # one request per call
    assert requests["across-objects"] < requests["batched"] < requests["concurrent"]


def test_an_object_moved_since_the_start_is_elicited_again():
    scene = small_scene()
    metadata = {"objects": [dict(o) for o in scene.objects]}
    order = task_order(scene, metadata)
    client = make_client("offline")
    with CrossObjectElicitor(client, scene, "STARS") as elicitor:
        started = elicitor.prefetch(scene.task, order, metadata)
        assert 0 < started <= len(order)
        first = elicitor(task=scene.task, object_id=order[0], metadata=metadata)
        assert first.chosen is not None and first.usage.calls > 0
        moved = json.loads(json.dumps(metadata))
        target = next(o for o in moved["objects"] if o["objectId"] == order[1])
        other_place = next(o["objectId"] for o in moved["objects"]
                           if o.get("receptacle") and o["objectId"] not in target["parentReceptacles"])
        target["parentReceptacles"] = [other_place]
        again = elicitor(task=scene.task, object_id=order[1], metadata=moved)
        _, _, new_place = describe_object(moved, order[1])
        assert again.context.place == new_place != describe_object(metadata, order[1])[2]


def test_unknown_elicitation_mode_is_refused(tmp_path):
    with pytest.raises(Exception, match="elicitation mode"):
        run_in_process(RunSpec(scene=SCENE, elicitation="sideways", db=tmp_path / "x.sqlite"))


@pytest.mark.slow
def test_run_json_reports_round_trips_beside_calls(tmp_path, capsys):
    code = cli_main(["run", "--scene", "organize_office", "--condition", "STARS", "--db", str(tmp_path / "kb.sqlite"),
                     "--elicitation", "across-objects", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    usage = data["usage"]
    assert 0 < usage["requests"] < usage["calls"] and usage["prompt_tokens"] > 0
    assert data["elicitation"] == "across-objects"


class _SlowSender:
    """A sender that blocks each merged level until released (a round trip that takes a while)."""

    def __init__(self, client) -> None:
        from task_learning.stars.tree import batched_sender

        self.send = batched_sender(client)
        self.release = threading.Event()

    def __call__(self, requests):
        self.release.wait(30)
        return self.send(requests)


def test_wait_ready_stops_for_its_caller_and_for_a_closed_elicitor():
    """What the goal elicitation node's LearnGoal relies on: waiting for an object's prefetched
    model stages ends with RunStopped when the caller's goal is cancelled or the batch closed, and
    the object is then not elicited again on its own."""
    from task_learning.lifecycle.cancellation import RunStopped

    scene = small_scene()
    metadata = {"objects": [dict(o) for o in scene.objects]}
    order = task_order(scene, metadata)
    client = make_client("offline")
    sender = _SlowSender(client)
    elicitor = CrossObjectElicitor(client, scene, "STARS", sender=sender)
    try:
        elicitor.prefetch(scene.task, order, metadata)
        assert list(elicitor.prefetched()) == order  # every context differs in this small scene
        with pytest.raises(RunStopped, match="canceled"):
            elicitor.wait_ready(order[0], lambda: True)
        # Closed while the first level is in flight: the level ends, the objects' stages do not.
        closer = threading.Thread(target=elicitor.close)
        closer.start()
        wait_until(elicitor._stop.is_set, 30, "close() under way")
        sender.release.set()
        closer.join(30)
        futures = elicitor.prefetched()
        assert futures and all(f.cancelled() for f in futures.values())
        for object_id in order:
            with pytest.raises(RunStopped, match="closed"):
                elicitor.wait_ready(object_id, lambda: False)
        assert client.usage.requests == 1  # the one level in flight, nothing after the close
    finally:
        sender.release.set()
        elicitor.close()


def test_objects_to_elicit_skips_a_repeated_context_and_a_reusable_goal(tmp_path):
    from task_learning.kb import Confirmation, LearnedGoal
    from task_learning.stars.together import objects_to_elicit

    scene = small_scene()
    metadata = {"objects": [dict(o) for o in scene.objects]}
    order = task_order(scene, metadata)
    twice = order + [order[0]]
    assert objects_to_elicit(scene.task, twice, metadata, None, "STARS+O") == order
    noun, relation, place = describe_object(metadata, order[0])
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb:
        kb.learn_goal(LearnedGoal(scene.task, f"{noun} {relation} {place}", "Thing", "the goal is x", []))
        # learned but unconfirmed: reused without oversight, elicited anew with it
        assert objects_to_elicit(scene.task, order, metadata, kb, "STARS") == order[1:]
        assert objects_to_elicit(scene.task, order, metadata, kb, "STARS+O") == order
        kb.set_confirmation(scene.task, f"{noun} {relation} {place}", Confirmation.OPERATOR_YES, {})
        assert objects_to_elicit(scene.task, order, metadata, kb, "STARS+O") == order[1:]


def test_object_states_keep_a_later_state_from_a_late_report():
    from task_learning.planning.progress import LEARNING, ObjectState, ObjectStates

    seen = []
    states = ObjectStates(["Mug|1", "Cup|1"], on_change=seen.append)
    assert states.set("Mug|1", ObjectState.ELICITING)
    assert states.set("Mug|1", ObjectState.CONFIRMED, "the goal is that the mug is in the cupboard")
    # goal elicitation's feedback arrives late: the client already has the confirmed goal
    assert not states.set("Mug|1", ObjectState.ASKING, only_from=LEARNING)
    assert not states.set("Mug|1", ObjectState.CONFIRMED, "the goal is that the mug is in the cupboard")
    assert states.get("Mug|1") is ObjectState.CONFIRMED and states.get("Cup|1") is ObjectState.QUEUED
    assert len(seen) == 2 and seen[-1][0] == ("Mug|1", "confirmed", "the goal is that the mug is in the cupboard")
    states.set("Plate|1", ObjectState.MISSING, "gone\x1b[31m")  # added at the end, its detail printable
    assert states.snapshot()[-1] == ("Plate|1", "missing", "gone")


def test_a_world_state_keeps_the_agent_and_held_objects_as_metadata():
    """Cross-object elicitation in the goal elicitation node reads the perceived WorldState as
    metadata: the robot's location and what it holds must survive (analysis uses them)."""
    from task_learning.world.factory import make_backend
    from task_learning.world.state import metadata_from_world_state, world_state_from_metadata

    metadata = make_backend("symbolic", load_scene(SCENE), None).metadata
    state = world_state_from_metadata(metadata, stamp=1.0)
    state.held_object_ids = [state.objects[0].object_id]
    again = world_state_from_metadata(metadata_from_world_state(state), stamp=1.0)
    assert again == state
