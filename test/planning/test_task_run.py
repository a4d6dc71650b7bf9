"""PerformTask's run (task_learning.planning.task_run) on its explicit ports, without a ROS graph:
fakes stand in for goal elicitation, the episode and the feedback; the world is the symbolic one and
elicitation the core's, with the offline stand-in (not a language model)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import make_engine
from task_learning.episode.bus import EpisodeBus
from task_learning.errors import TaskLearningError
from task_learning.lifecycle.cancellation import StopToken
from task_learning.llm.client import make_client
from task_learning.oversight.operator import ScriptedOperator
from task_learning.planning.executor import GoalExecutor
from task_learning.planning.task_run import TaskFeedback, TaskRun, TaskRunPorts, TaskRunSettings
from task_learning.stars.elicit import elicit_goal
from task_learning.types import LLMUsage, PromptTypeUsage
from task_learning.world.factory import make_backend
from task_learning.world.scene import load_scene

BATCH = "b" * 32


@dataclass
class FakeBatch:
    batch_id: str = BATCH
    closed: list[float] = field(default_factory=list)

    def close(self, wait_s: float) -> LLMUsage | None:
        self.closed.append(wait_s)
        return LLMUsage({"initial": PromptTypeUsage(calls=5, requests=2)})


class FakeGoals:
    """Goal elicitation as the planner reaches it: a batch, then each object elicited in process."""

    def __init__(self, scene) -> None:
        self.scene = scene
        self.client = make_client("offline")
        self.batches: list[tuple[list[str], FakeBatch]] = []
        self.asked: list[tuple[str, str]] = []

    def open_batch(self, task, object_ids, condition, context, states, stop):
        batch = FakeBatch()
        self.batches.append((list(object_ids), batch))
        return batch

    def learn_goal(self, task, object_id, condition, context, stop, metadata=None, *, batch_id="",
                   states=None):
        self.asked.append((object_id, batch_id))
        result = elicit_goal(task, object_id, metadata, self.scene, condition, self.client)
        result.batch_id = batch_id  # counted in the batch's usage, as goal elicitation's result says
        return result


class FakeRecording:
    def __init__(self) -> None:
        self.bus = EpisodeBus([])
        self.summary = "episode not recorded"
        self.observed = 0

    def __enter__(self) -> FakeRecording:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def observe(self, learner) -> None:
        self.observed += 1


def _run(tmp_path, scene, world_scene=None):
    goals, recording, feedback = FakeGoals(scene), FakeRecording(), []
    world = make_backend("symbolic", world_scene or scene, None)
    domain = load_domain("household")
    ports = TaskRunPorts(goals=goals, world=lambda stop, bus: world, recording=lambda *names: recording,
                         executor=lambda kb, review: GoalExecutor(domain, lambda: make_engine("heuristic"), kb),
                         asks=ScriptedOperator([]), feedback=feedback.append, warn=print)
    settings = TaskRunSettings(db_path=str(tmp_path / "kb.sqlite"), across_objects=True,
                               require_confirmation=False, wait_s=1.0)
    return TaskRun(ports, settings, scene, "STARS", StopToken()), goals, recording, feedback


def test_a_task_runs_on_its_ports_with_the_batch_counted_once(tmp_path):
    scene = load_scene("store_groceries")
    scene = replace(scene, task_objects=scene.task_objects[:3])
    run, goals, recording, feedback = _run(tmp_path, scene)
    outcome, summary = run.perform("", review=None)
    assert summary == "episode not recorded" and recording.observed == 1
    [(batched, batch)] = goals.batches
    assert batched and batch.closed == [1.0]  # opened once, closed once after the loop
    assert {oid for oid, _ in goals.asked} <= set(scene.task_objects)
    assert all(batch_id == BATCH for _, batch_id in goals.asked)  # every object taken from the batch
    # Each object's usage is the batch's: counted once, from the batch's result.
    assert (outcome.metrics.usage.calls, outcome.metrics.usage.requests) == (5, 2)
    assert [r.object_id for r in outcome.reports] == [r.object_id for r in run.reports]
    last = feedback[-1]
    assert isinstance(last, TaskFeedback) and last.stage == "done" and last.objects_done == last.objects_total
    assert {oid for oid, _, _ in last.objects} >= set(scene.task_objects)


def test_a_task_for_another_scene_than_the_worlds_is_refused_before_anything_runs(tmp_path):
    run, goals, _, feedback = _run(tmp_path, load_scene("store_groceries"), world_scene=load_scene("tidy_kitchen"))
    with pytest.raises(TaskLearningError, match="perception has scene 'tidy_kitchen'"):
        run.perform("", review=None)
    assert goals.batches == [] and goals.asked == [] and run.reports == []
