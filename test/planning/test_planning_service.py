"""The planning service (task_learning/planning/service.py) the in-process run and the ROS planner
share: the subtasks a request keeps, the object states a client follows, and one task run on
ports the caller wires (here the in-process ones), with its verdict in words."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from task_learning.errors import TaskLearningError
from task_learning.planning.loop import ObjectReport
from task_learning.planning.progress import ObjectStates
from task_learning.planning.service import ObjectTracker, keep_subtasks
from task_learning.planning.session import RunSpec, run_in_process
from task_learning.world.scene import load_scene


def test_keep_subtasks_narrows_the_scene_and_refuses_an_unknown_name():
    scene = load_scene("tidy_kitchen")
    first = scene.subtasks[0].name
    keep_subtasks(scene, [])
    assert len(scene.subtasks) > 1  # none named: all kept
    keep_subtasks(scene, [first])
    assert [s.name for s in scene.subtasks] == [first]
    with pytest.raises(TaskLearningError, match=r"unknown subtask\(s\) \['nap'\] of 'tidy kitchen'"):
        keep_subtasks(scene, ["nap"])


def test_the_tracker_follows_an_object_from_queued_to_reached():
    seen: list[list[tuple[str, str, str]]] = []
    tracker = ObjectTracker(ObjectStates(on_change=seen.append))
    tracker.queue(["Mug|1", "Apple|1"])

    def elicit(*, task, object_id, metadata):
        assert tracker.states.get(object_id).value == "eliciting"  # while goal elicitation works
        chosen = SimpleNamespace(text="the mug in the cabinet") if object_id == "Mug|1" else None
        return SimpleNamespace(chosen=chosen, oversight=SimpleNamespace(confirmed=False), outcome="no goal")

    def confirm(*, object_id, object_description, text, literals):
        assert tracker.states.get(object_id).value == "asking_operator"
        return SimpleNamespace(confirmed=True, message="")

    tracker.elicit(elicit)(task="tidy kitchen", object_id="Mug|1", metadata={})
    assert tracker.states.get("Mug|1").value == "eliciting"  # unconfirmed: the confirm port decides
    tracker.confirm(confirm)(object_id="Mug|1", object_description="mug", text="the mug in the cabinet",
                             literals=[])
    tracker.elicit(elicit)(task="tidy kitchen", object_id="Apple|1", metadata={})
    tracker.report(ObjectReport(object_id="Mug|1", context="c", outcome="done", goal="the mug in the cabinet"))
    assert seen[-1] == [("Mug|1", "reached", "the mug in the cabinet"), ("Apple|1", "no_goal", "no goal")]


def test_the_in_process_run_goes_through_the_service(tmp_path):
    """`task-learning run`'s path: one task on the service's ports, its verdict from the service."""
    from task_learning.planning.service import TaskOutcome

    metrics, learner = run_in_process(RunSpec(scene="store_groceries", condition="STARS+O", db=tmp_path / "kb.sqlite"))
    summary = TaskOutcome(metrics, learner.reports).summary
    assert metrics.completion == 100.0 and summary.success
    assert summary.message.startswith("task completed, completion 100.0%")
