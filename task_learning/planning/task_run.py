"""One task on the planning service whose goals come from a goal elicitation elsewhere (the ROS
planner's PerformTask), on explicit ports instead of a node's private state.

The run opens a batch of the task's objects (elicitation across objects: their model stages run
together there), then takes one object at a time from it as the task-learning loop meets them;
the operator is asked through `asks`; every object's state goes out as `TaskFeedback`. What each
port is, the planner node says when it wires them (nodes/nodes/planner.py): the perception node's
world, goal elicitation's LearnGoals/LearnGoal actions, the oversight node, an MCAP episode.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Callable, Mapping, Protocol

from task_learning.episode.bus import EpisodeBus
from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.kb import KnowledgeBase, resolve_db_path
from task_learning.lifecycle.cancellation import StopToken
from task_learning.oversight.operator import Operator
from task_learning.planning.confirmation import GoalConfirmer
from task_learning.planning.executor import GoalExecutor
from task_learning.planning.loop import Elicitation, ObjectReport, TaskLearner
from task_learning.planning.policy_review import PolicyReviewer
from task_learning.planning.progress import ObjectStates, Snapshot
from task_learning.planning.service import ObjectTracker, TaskOutcome, TaskPorts, run_task, task_learner
from task_learning.planning.session import task_order
from task_learning.stars.together import objects_to_elicit
from task_learning.types import LLMUsage
from task_learning.world.backend import WorldBackend
from task_learning.world.scene import Scene

BATCH_RESULT_WAIT_S = 2.0  # a stopped task's batch: how long its closing result is waited for


class OpenBatch(Protocol):
    """A batch of the task's objects opened at the goal elicitation (nodes/clients: GoalBatch)."""

    batch_id: str

    def close(self, wait_s: float) -> LLMUsage | None:
        """Close it and wait up to `wait_s` for its result: its LLM usage, or None when none came."""
        ...


class RemoteResult(Elicitation, Protocol):
    """What the run reads of an object's remote elicitation beside what the loop reads (chosen,
    candidates, oversight, outcome): its usage, and the batch whose result counts it ("" = none)."""

    @property
    def usage(self) -> LLMUsage: ...
    @property
    def batch_id(self) -> str: ...


class RemoteGoals(Protocol):
    """A goal elicitation reached over the graph (nodes/clients: GoalElicitationClient)."""

    def open_batch(self, task: str, object_ids: list[str], condition: str, context: list[str],
                   states: ObjectStates, stop: StopToken) -> OpenBatch: ...

    def learn_goal(self, task: str, object_id: str, condition: str, context: list[str], stop: StopToken,
                   metadata: Mapping[str, Any] | None = None, *, batch_id: str = "",
                   states: ObjectStates | None = None) -> RemoteResult: ...


class Recording(Protocol):
    """The task's episode (nodes/plumbing: TaskEpisode): its messages' bus, what the loop does
    observed on it, and after exit what became of the recording ("" when nothing to say)."""

    bus: EpisodeBus
    summary: str

    def __enter__(self) -> Recording: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    def observe(self, learner: TaskLearner) -> None: ...


@dataclass
class TaskFeedback:
    """Where the task is: PerformTask's feedback, every field of it."""

    stage: str = "learn"  # learn | done
    current_object: str = ""
    objects_done: int = 0
    objects_total: int = 0
    progress: float = 0.0
    objects: Snapshot = field(default_factory=list)


@dataclass
class TaskRunPorts:
    """What a remote task run talks to."""

    goals: RemoteGoals
    world: Callable[[StopToken, EpisodeBus], WorldBackend]  # the world, its actions observed on the bus
    recording: Callable[[str, str, str], Recording]  # scene, task, condition -> the task's episode
    executor: Callable[[KnowledgeBase, PolicyReviewer | None], GoalExecutor]
    asks: Operator  # the planner's own questions, counted only when the oversight node vouches
    feedback: Callable[[TaskFeedback], None]
    warn: Callable[[str], object]  # a warning for the log


@dataclass(frozen=True)
class TaskRunSettings:
    """The planner's parameters one run reads (as they were when its goal came)."""

    db_path: str
    across_objects: bool  # one batch of every object to elicit first (else one LearnGoal each)
    require_confirmation: bool
    wait_s: float  # how long a batch's closing result is waited for


def check_same_scene(scene: Scene, metadata: Mapping[str, Any]) -> None:
    """A task of another scene than the world's would be measured against objects that are not
    there: refused, naming the scene the world has (no name given by the world: not checked)."""
    perceived = str(metadata.get("sceneName") or "")
    if perceived and perceived != scene.name:
        raise TaskLearningError(f"refused: the task's scene is {printable(scene.name, 100)!r}, but perception "
                                f"has scene {printable(perceived, 100)!r} (ask for {printable(perceived, 100)!r}, "
                                f"or start the graph with scene {printable(scene.name, 100)!r})")


class TaskRun:
    """One task with goals from a remote goal elicitation (see the module docstring)."""

    def __init__(self, ports: TaskRunPorts, settings: TaskRunSettings, scene: Scene, condition: str,
                 stop: StopToken) -> None:
        self.ports, self.settings = ports, settings
        self.scene, self.condition, self.stop = scene, condition, stop
        self.usage = LLMUsage()  # the task's LLM usage: each object's, and the batch's once it closed
        self.batch: OpenBatch | None = None
        self.learner: TaskLearner | None = None
        self._feedback = TaskFeedback(objects_total=len(scene.task_objects))
        self._feedback_lock = threading.Lock()
        self.states = ObjectStates(on_change=self.publish)
        self.tracker = ObjectTracker(self.states)

    @property
    def reports(self) -> list[ObjectReport]:
        """What every object handled so far came to (also when the run was stopped)."""
        return self.learner.reports if self.learner is not None else []

    def publish(self, snapshot: Snapshot | None = None, **changes: Any) -> None:
        """Send the feedback with `changes` (TaskFeedback's fields) and, given, every object's state."""
        with self._feedback_lock:  # one message at a time, each with every object's latest state
            self._feedback = replace(self._feedback, **changes)
            if snapshot is not None:
                self._feedback.objects = list(snapshot)
            self.ports.feedback(replace(self._feedback))

    def progress(self, done: int, total: int, message: str) -> None:
        with self.states.ordered():
            self.publish(self.states.snapshot(), current_object=message, stage="done", objects_done=done,
                         objects_total=total, progress=float(done) / max(total, 1))

    def elicit(self, *, task: str, object_id: str, metadata: Mapping[str, Any]) -> RemoteResult:
        remote = self.ports.goals.learn_goal(task, object_id, self.condition, list(self.scene.context), self.stop,
                                             metadata, batch_id=self.batch.batch_id if self.batch is not None else "",
                                             states=self.states)
        if not remote.batch_id:  # else counted once, in the batch's usage
            self.usage.merge(remote.usage)
        return remote

    def perform(self, task: str, review: PolicyReviewer | None) -> tuple[TaskOutcome, str]:
        """Run the task: its outcome, and what became of its episode recording ("" when none)."""
        scene, ports, settings, stop = self.scene, self.ports, self.settings, self.stop
        with ports.recording(scene.name, task or scene.task, self.condition) as episode, \
                KnowledgeBase(resolve_db_path(settings.db_path)) as kb:
            world = ports.world(stop, episode.bus)
            check_same_scene(scene, world.metadata)
            order = task_order(scene, world.metadata)  # the loop's order, as it meets the objects
            self.tracker.queue(order)
            if settings.across_objects:
                todo = objects_to_elicit(scene.task, order, world.metadata, kb, self.condition)
                self.batch = ports.goals.open_batch(scene.task, todo, self.condition, list(scene.context),
                                                    self.states, stop) if todo else None
            self.learner = task_learner(scene, self.condition, TaskPorts(
                world=world, kb=kb, elicit=self.tracker.elicit(self.elicit), executor=ports.executor(kb, review),
                confirm=self.tracker.confirm(GoalConfirmer(ports.asks, task=scene.task)),
                require_confirmation=settings.require_confirmation, stop=stop, usage_source=lambda: self.usage,
                progress=self.progress, on_object=lambda object_id: self.publish(current_object=object_id,
                                                                                  stage="learn")))
            episode.observe(self.learner)
            self.learner.on_report = _both(self.learner.on_report, self.tracker.report)  # the episode's, the feedback's
            try:
                outcome = run_task(self.learner)
            finally:
                self._close_batch()
            outcome.metrics.usage = self.usage
        return outcome, episode.summary

    def _close_batch(self) -> None:
        """No feedback after the result (a late batch report); the batch closed, its usage counted."""
        self.states.on_change = None
        if self.batch is None:
            return
        stopped = self.stop.requested
        batch_usage = self.batch.close(BATCH_RESULT_WAIT_S if stopped else self.settings.wait_s)
        if batch_usage is None and not stopped:
            self.ports.warn("the learn_goals batch's result did not come: its LLM usage is missing from this task's")
        self.usage.merge(batch_usage or LLMUsage())


def _both(first: Callable[[ObjectReport], None] | None,
          second: Callable[[ObjectReport], None]) -> Callable[[ObjectReport], None]:
    """One observer that calls two (the first may be None)."""
    def call(value: ObjectReport) -> None:
        if first is not None:
            first(value)
        second(value)
    return call
