"""The planning service: one task on given ports, the same for `task-learning run` and the ROS planner.

A task run is: the scene's task (the subtasks the user kept), the condition, and ports — a world,
the knowledge base, an elicitor, a goal executor, a confirmer — that the caller wires. The
in-process run (planning.session) wires the symbolic or simulated world and the core elicitor;
the planner node wires ROS proxies (the perception node's world, goal elicitation's actions, the
oversight node) and turns the request and the outcome into its action's goal and result. What
lies between — building the task-learning loop on those ports, following every task object's
state for progress, the verdict in words — is here, once, and has no ROS in it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from task_learning.errors import TaskLearningError
from task_learning.kb import KnowledgeBase
from task_learning.lifecycle.cancellation import StopToken
from task_learning.planning.confirmation import ConfirmationVerdict
from task_learning.planning.executor import GoalExecutor
from task_learning.planning.loop import Confirmer, Elicitation, Elicitor, ObjectReport, ProgressCallback, TaskLearner
from task_learning.planning.metrics import RunMetrics
from task_learning.planning.progress import REPORT_STATES, ObjectState, ObjectStates
from task_learning.planning.summary import TaskSummary, summarize
from task_learning.types import GoalLiteral, LLMUsage
from task_learning.world.backend import WorldBackend
from task_learning.world.scene import Scene


def keep_subtasks(scene: Scene, wanted: Iterable[str]) -> None:
    """Narrow `scene` to the subtasks the user named (none named: all of them); a name the task
    does not have is refused before anything runs."""
    names = set(wanted)
    if not names:
        return
    unknown = names - {s.name for s in scene.subtasks}
    if unknown:
        raise TaskLearningError(f"unknown subtask(s) {sorted(unknown)} of {scene.task!r}")
    scene.subtasks = [s for s in scene.subtasks if s.name in names]


@dataclass
class TaskPorts:
    """What one task run talks to, and who watches it (see the module's docstring)."""

    world: WorldBackend
    kb: KnowledgeBase
    elicit: Elicitor
    executor: GoalExecutor
    confirm: Confirmer | None = None
    require_confirmation: bool = False  # ask about unconfirmed goals whatever the condition
    stop: StopToken | None = None  # set from another thread: the run stops before its next action
    usage_source: Callable[[], LLMUsage] | None = None  # the run's LLM usage so far
    progress: ProgressCallback | None = None
    on_object: Callable[[str], None] | None = None  # an object about to be handled
    on_report: Callable[[ObjectReport], None] | None = None  # what each object came to


@dataclass
class TaskOutcome:
    """A finished task run: its measures, one report per object, and the verdict in words."""

    metrics: RunMetrics
    reports: list[ObjectReport] = field(default_factory=list)

    @property
    def summary(self) -> TaskSummary:
        return summarize(self.reports, self.metrics.satisfied, self.metrics.assertions)


def task_learner(scene: Scene, condition: str, ports: TaskPorts) -> TaskLearner:
    """The task-learning loop of `scene`'s task under `condition`, on `ports`."""
    return TaskLearner(scene=scene, world=ports.world, kb=ports.kb, elicit=ports.elicit, executor=ports.executor,
                       condition=condition, progress=ports.progress, usage_source=ports.usage_source,
                       confirm=ports.confirm, require_confirmation=ports.require_confirmation, stop=ports.stop,
                       on_object=ports.on_object, on_report=ports.on_report)


def run_task(learner: TaskLearner) -> TaskOutcome:
    """Run the loop to its end (RunStopped when its token was set: `learner.reports` then holds
    what was done, and everything learned is already in the knowledge base)."""
    metrics = learner.run()
    return TaskOutcome(metrics, learner.reports)


class ObjectTracker:
    """Keeps every task object's state (planning.progress: queued, eliciting, asking the operator,
    confirmed, reached, ...) in step with the loop, by wrapping its elicit and confirm ports and
    watching its reports: what a client following the task sees (PerformTask's feedback)."""

    def __init__(self, states: ObjectStates) -> None:
        self.states = states

    def queue(self, order: Iterable[str]) -> None:
        for object_id in order:
            self.states.set(object_id, ObjectState.QUEUED)

    def elicit(self, inner: Elicitor) -> Elicitor:
        """`inner`, with the object eliciting while it runs, then no_goal, chosen or confirmed
        (a goal the operator still has to confirm stays as it is until the confirm port)."""
        states = self.states

        def elicit(*, task: str, object_id: str, metadata: Mapping[str, Any]) -> Elicitation:
            states.set(object_id, ObjectState.ELICITING, only_from=(ObjectState.QUEUED, ObjectState.FAILED))
            result = inner(task=task, object_id=object_id, metadata=metadata)
            chosen, oversight = result.chosen, result.oversight
            if chosen is None:
                states.set(object_id, ObjectState.NO_GOAL, result.outcome)
            elif oversight is None or oversight.confirmed:
                states.set(object_id, ObjectState.CONFIRMED if oversight else ObjectState.CHOSEN, chosen.text)
            return result

        return elicit

    def confirm(self, inner: Confirmer) -> Confirmer:
        """`inner`, with the object asking the operator while it runs, then confirmed or no_goal."""
        states = self.states

        def confirm(*, object_id: str, object_description: str, text: str,
                    literals: Sequence[GoalLiteral]) -> ConfirmationVerdict:
            states.set(object_id, ObjectState.ASKING, text)
            verdict = inner(object_id=object_id, object_description=object_description, text=text,
                            literals=literals)
            states.set(object_id, ObjectState.CONFIRMED if verdict.confirmed else ObjectState.NO_GOAL,
                       text if verdict.confirmed else verdict.message)
            return verdict

        return confirm

    def report(self, report: ObjectReport) -> None:
        self.states.set(report.object_id, REPORT_STATES.get(report.outcome, ObjectState.NO_GOAL),
                        report.goal or report.message)
