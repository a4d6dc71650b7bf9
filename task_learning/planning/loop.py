"""The task-learning loop of the STARS paper appendix B.1: for every object a subtask works through, use
the goal learned for it in that context, or elicit one (STARS, with oversight when the condition
has it), reach it, and learn it. Run again on the same knowledge base and the robot performs the
task alone: Trial #2, with no LLM call and no question.

The loop only talks to ports: a world (WorldBackend), an elicitor, and a goal executor. In-process
runs pass the symbolic world and the core functions; the ROS planner node passes proxies that call
the perception and goal-elicitation nodes, so both paths run this same code.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from task_learning.errors import TaskLearningError
from task_learning.kb import Confirmation, KnowledgeBase, LearnedGoal, ground_lifted, lift_literals
from task_learning.lifecycle.cancellation import StopToken
from task_learning.oversight.flow import OversightCounts, OversightStatus
from task_learning.planning.confirmation import ConfirmationVerdict, confirmation_of, requires_confirmation
from task_learning.planning.dialogue import count_words, teaching_dialogue
from task_learning.planning.executor import GoalExecutor, type_index
from task_learning.planning.metrics import RunMetrics
from task_learning.types import CandidateSource, GoalCandidate, GoalLiteral, LLMUsage
from task_learning.world.backend import WorldBackend
from task_learning.world.completion import completion
from task_learning.world.resolve import describe_object
from task_learning.world.scene import Scene

log = logging.getLogger(__name__)


class OversightReport(Protocol):
    """What the loop reads of an oversight dialogue's outcome: task_learning.oversight.flow's
    OversightOutcome in-process, a result rebuilt from LearnGoal over ROS."""

    @property
    def counts(self) -> OversightCounts: ...
    @property
    def confirmed(self) -> bool: ...
    @property
    def confirmed_by(self) -> str: ...
    @property
    def provenance(self) -> dict[str, Any]: ...
    @property
    def status(self) -> OversightStatus | None: ...


class Elicitation(Protocol):
    """What the loop reads of one object's elicitation: task_learning.stars.elicit's
    ElicitationResult in-process, a LearnGoal result over ROS."""

    @property
    def chosen(self) -> GoalCandidate | None: ...
    @property
    def candidates(self) -> Sequence[GoalCandidate]: ...
    @property
    def oversight(self) -> OversightReport | None: ...
    @property
    def outcome(self) -> str: ...
    @property
    def errors(self) -> list[str]: ...
    def to_dict(self) -> dict[str, Any]: ...


class Elicitor(Protocol):
    """Elicits a goal for one object."""

    def __call__(self, *, task: str, object_id: str, metadata: Mapping[str, Any]) -> Elicitation:
        ...


ProgressCallback = Callable[[int, int, str], None]  # done, total, message


class Confirmer(Protocol):
    """Puts a goal to the operator (planning.confirmation.GoalConfirmer)."""

    def __call__(self, *, object_id: str, object_description: str, text: str,
                 literals: Sequence[GoalLiteral]) -> ConfirmationVerdict:
        ...


@dataclass
class ObjectReport:
    """What one task object came to: the goal (words and literals), who confirmed it, whether
    it was reached, and, when it was not, why (`message`)."""

    object_id: str
    context: str
    outcome: str  # done | no_goal | unreachable | missing
    goal: str = ""
    goal_source: str = ""  # learned | elicited | described
    actions: int = 0
    policy_reused: bool = False
    message: str = ""
    seconds: float = 0.0
    literals: list[GoalLiteral] = field(default_factory=list)  # the goal on this world's ids
    confirmed_by: str = ""  # who confirmed the goal ("" when nobody did: no oversight)

    @property
    def reached(self) -> bool:
        return self.outcome == "done"

    def to_dict(self) -> dict[str, Any]:
        data = dict(vars(self))
        data["literals"] = [str(lit) for lit in self.literals]
        return data


def confirmed_by_of(goal: LearnedGoal) -> str:
    """Who confirmed a stored goal: the operator kept with it (the answer's provenance, or a name
    alone in files written before provenance was kept), else what its confirmation says."""
    by = goal.provenance.get("confirmed_by")
    who = str((by.get("operator") or by.get("answered_by") or "") if isinstance(by, dict) else (by or ""))
    if who and goal.confirmation.counts_as_confirmed:
        return who
    return {Confirmation.OPERATOR_YES: "operator (yes)",
            Confirmation.OPERATOR_DESCRIPTION: "operator (described it)",
            Confirmation.IMPORTED_TRUSTED: "import (trusted confirmations)"}.get(goal.confirmation, "")


@dataclass
class TaskLearner:
    scene: Scene
    world: WorldBackend
    kb: KnowledgeBase
    elicit: Elicitor
    executor: GoalExecutor
    condition: str = "STARS+O"
    progress: ProgressCallback | None = None
    usage_source: Callable[[], LLMUsage] | None = None  # the LLM client's running usage
    # The confirmation policy (planning.confirmation): asks about goals nobody confirmed when the
    # condition has oversight or `require_confirmation` is set (the ROS planner's parameter).
    confirm: Confirmer | None = None
    require_confirmation: bool = False
    stop: StopToken | None = None  # set: stop before the next object or primitive action
    # Observers (episodes, the live view): an object about to be handled, and what it came to.
    on_object: Callable[[str], None] | None = None
    on_report: Callable[[ObjectReport], None] | None = None
    reports: list[ObjectReport] = field(default_factory=list)

    @property
    def needs_confirmation(self) -> bool:
        return requires_confirmation(self.condition, self.require_confirmation)

    def run(self) -> RunMetrics:
        scene = self.scene
        if not scene.subtasks:
            raise TaskLearningError(f"scene {scene.name!r} defines no subtasks for task {scene.task!r}: no task "
                                    "object for STARS to learn (a BCR testbed such as bcr_kitchen runs with "
                                    "`task-learning bcr --scene NAME --task TASK`)")
        metrics = RunMetrics(assertions=scene.assertions)
        already_learned = any(g.task == scene.task for g in self.kb.goals())
        if already_learned:
            # Trial #2: the user only names the task.
            dialogue = [f"{scene.task[:1].upper()}{scene.task[1:]}."]
        else:
            dialogue = teaching_dialogue(scene.task, [s.instruction for s in scene.subtasks])
        metrics.instructions += len(dialogue)
        metrics.words += sum(count_words(line) for line in dialogue)

        total = len(scene.task_objects)
        done = 0
        if self.needs_confirmation and self.confirm is None:
            raise TaskLearningError(f"condition {self.condition} with confirmation required needs "
                                    "an operator to confirm goals")
        for subtask in scene.subtasks:
            for object_id in self._objects_at(subtask.places):
                if self.stop is not None:
                    self.stop.check()
                started = time.perf_counter()
                if self.on_object is not None:
                    self.on_object(object_id)
                report = self._handle(object_id, metrics)
                report.seconds = round(time.perf_counter() - started, 4)
                self.reports.append(report)
                if self.on_report is not None:
                    self.on_report(report)
                metrics.per_object.append(report.to_dict())
                done += 1
                if self.progress:
                    self.progress(done, total, f"{report.context}: {report.outcome}")
        final = completion(scene, self.world.metadata)
        metrics.satisfied = final.satisfied
        metrics.assertions = final.total
        if self.usage_source is not None:
            metrics.usage = self.usage_source()
        return metrics

    # ------------------------------------------------------------------------------------------
    def _objects_at(self, places: list[str]) -> list[str]:
        """Task objects directly at one of the places now, in the scene's order."""
        wanted = set(places)
        present = {
            o["objectId"] for o in self.world.metadata.get("objects") or []
            if wanted & set(o.get("parentReceptacles") or [])
        }
        return [oid for oid in self.scene.task_objects if oid in present]

    def _handle(self, object_id: str, metrics: RunMetrics) -> ObjectReport:
        metadata = self.world.metadata
        type_of, ids_by_type = type_index(metadata)
        if object_id not in type_of:
            return ObjectReport(object_id, object_id, "missing", message="object no longer in the world")
        noun, relation, place = describe_object(metadata, object_id)
        context = f"{noun} {relation} {place}"
        task = self.scene.task

        spoken = f"{noun} {relation} the {place}" if place else noun
        learned = self.kb.goal_for(task, context)
        if learned is not None:
            literals = ground_lifted(learned.literals, object_id, ids_by_type)
            if literals is None:
                return ObjectReport(object_id, context, "unreachable", learned.text, "learned",
                                    message="the learned goal names a place this world lacks")
            who = confirmed_by_of(learned)
            if self.needs_confirmation and not learned.confirmed:
                verdict = self._ask(object_id, spoken, learned.text, literals, metrics)
                if verdict.confirmed:
                    self.kb.set_confirmation(task, context, verdict.confirmation, verdict.provenance)
                    who = verdict.by
                elif not self.condition.upper().endswith("+O"):
                    return ObjectReport(object_id, context, "no_goal", learned.text, "learned",
                                        message=f"learned goal not confirmed: {verdict.message}",
                                        literals=literals)
                else:
                    learned = None  # elicit anew, with the oversight dialogue
            if learned is not None:
                metrics.learned_goals_reused += 1
                return self._reach(object_id, context, literals, learned.text, "learned", metrics, who)

        result = self.elicit(task=task, object_id=object_id, metadata=metadata)
        metrics.retrieved += len(result.candidates)
        oversight = result.oversight
        if oversight is not None:
            metrics.count_dialogue(oversight.counts)
        chosen = result.chosen
        if chosen is None or not chosen.literals:
            reason = result.outcome if chosen is None else "the chosen goal has no grounded literals"
            why = oversight.status.reason if oversight is not None and oversight.status is not None else ""
            if chosen is None and why:
                reason = f"{reason}: {why}"  # a timeout, a refusal: say which
            errors = "; ".join(result.errors)
            return ObjectReport(object_id, context, "no_goal", message=f"{reason}{': ' + errors if errors else ''}")
        source = "described" if chosen.source is CandidateSource.USER else "elicited"
        if source == "elicited":
            metrics.sourced += 1
        confirmation = confirmation_of(oversight, chosen.source)
        provenance = result.to_dict()
        who = ""
        if confirmation.counts_as_confirmed:
            assert oversight is not None  # confirmation_of counts nothing as confirmed without it
            who = oversight.confirmed_by
            provenance["confirmed_by"] = dict(oversight.provenance)
        if self.needs_confirmation and not confirmation.counts_as_confirmed:
            verdict = self._ask(object_id, spoken, chosen.text, list(chosen.literals), metrics)
            if not verdict.confirmed:
                return ObjectReport(object_id, context, "no_goal", chosen.text, source,
                                    message=f"goal not confirmed: {verdict.message}",
                                    literals=list(chosen.literals))
            confirmation, who = verdict.confirmation, verdict.by
            provenance["confirmed_by"] = verdict.provenance
        self.kb.learn_goal(LearnedGoal(
            task=task,
            context=context,
            object_type=type_of[object_id],
            text=chosen.text,
            literals=lift_literals(list(chosen.literals), object_id, type_of),
            condition=self.condition,
            confirmation=confirmation,
            provenance=provenance,
        ))
        return self._reach(object_id, context, list(chosen.literals), chosen.text, source, metrics, who)

    def _ask(self, object_id: str, spoken: str, text: str, literals: list[GoalLiteral],
             metrics: RunMetrics) -> ConfirmationVerdict:
        assert self.confirm is not None  # run() refuses to start without one
        verdict = self.confirm(object_id=object_id, object_description=spoken, text=text,
                               literals=literals)
        metrics.count_dialogue(verdict.counts)
        return verdict

    def _reach(self, object_id: str, context: str, literals: list[GoalLiteral], text: str, source: str,
               metrics: RunMetrics, confirmed_by: str = "") -> ObjectReport:
        reached = self.executor.reach(self.world, literals, task=self.scene.task, object_id=object_id)
        metrics.policies_reused += int(reached.policy_reused)
        metrics.count_dialogue(reached.questions)  # an operator reviewing a stored policy it did not learn
        outcome = "done" if reached.success else "unreachable"
        return ObjectReport(object_id, context, outcome, text, source, len(reached.outcomes),
                            reached.policy_reused, reached.message,
                            literals=list(literals), confirmed_by=confirmed_by)
