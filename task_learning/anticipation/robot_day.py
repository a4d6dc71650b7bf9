"""The robot's day: anticipated tasks proposed to the operator, confirmed ones performed by the
planner's executor in the built-in symbolic world (AI2-THOR's metadata and actions).

Each task of the list maps to goal literals the stack understands (config/anticipation/
robot_goals.yaml, BCR's literal syntax, on config/anticipation/home_scene.yaml). The day runs in
rounds: the robot anticipates the rest of the day (from the tasks done so far), proposes every
kept task it has not asked about yet ("Shall I prepare coffee next?"), and performs the first
confirmed one not done yet, reaching its literals with `GoalExecutor` (BCR with the heuristic
engine; the policy it learns is stored in the knowledge base and replayed next time); then the
simulated human does the next task of its routine that is not done yet (the same executor acts for
the human, counted apart). A task is done when its literals hold. The robot never acts for a task
the operator did not confirm: `unconfirmed_executions` counts any attempt and must stay 0.

`world` and `perform` let the same day run on the ROS graph (the anticipation node, task_learning_nodes.nodes.anticipation):
the world is then the perception node's, and a confirmed task is performed by the planner node."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from task_learning.anticipation.anticipator import AnticipationResult, Anticipator, Completer
from task_learning.anticipation.config import AnticipationConfig
from task_learning.anticipation.context import parse_context
from task_learning.anticipation.experience import Experience
from task_learning.anticipation.proposals import Proposals
from task_learning.bcr.literals import LiteralSyntaxError, StateView, holds, parse_literal
from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, load_model
from task_learning.kb.store import KnowledgeBase
from task_learning.lifecycle.cancellation import RunStopped, StoppableWorld, StopToken
from task_learning.oversight.operator import Operator
from task_learning.types import ConfirmationAnswer, ConfirmationRequest, GoalLiteral
from task_learning.world.backend import WorldBackend

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RobotGoals:
    scene: Path
    tasks: dict[str, tuple[GoalLiteral, ...]]


class RobotGoalsDoc(Schema):
    """robot_goals.yaml."""

    scene: str  # relative to the file
    tasks: dict[str, list[str]]  # task -> goal literals


def load_robot_goals(path: str | Path | None = None, tasks: Sequence[str] | None = None) -> RobotGoals:
    file = Path(path) if path else config_path("anticipation", "robot_goals.yaml")
    doc = load_model(RobotGoalsDoc, file)
    goals = {}
    for task, texts in doc.tasks.items():
        literals = []
        for i, text in enumerate(texts):
            try:
                literals.append(parse_literal(text))
            except LiteralSyntaxError as exc:
                raise ConfigError(file, f"{join_key('tasks', task)}[{i}]", str(exc)) from None
        goals[task] = tuple(literals)
    missing = [t for t in tasks or () if t not in goals]
    if missing:
        raise ConfigError(file, "tasks", f"no goals for task(s) {', '.join(missing)}")
    return RobotGoals(file.parent / doc.scene, goals)


# Performs one confirmed task (its name, its goal literals, the oversight node's confirmation id of
# the yes, "" in-process); returns the `performed` entry:
# {"task", "success", "actions", "policy_reused", "message"}.
Perform = Callable[[str, list[GoalLiteral], str], dict[str, Any]]


@dataclass
class RobotDayResult:
    day: str
    context: str
    routine: list[str]
    anticipations: list[AnticipationResult] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    performed: list[dict[str, Any]] = field(default_factory=list)  # the robot's tasks: task, success, actions
    done: list[str] = field(default_factory=list)
    done_by_robot: list[str] = field(default_factory=list)
    human_actions: int = 0
    unconfirmed_executions: int = 0
    llm_calls: int = 0
    tokens: int = 0
    finished: bool = False
    stopped: str = ""  # why the day ended early (a cancel, a stop), "" when it ran to its end

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "context": self.context, "routine": self.routine,
                "anticipations": [{"done": a.done, "proposed": a.proposed, "kept": a.kept, "dropped": a.dropped,
                                   "issues": a.issues} for a in self.anticipations],
                "asked": self.asked, "confirmed": self.confirmed, "refused": self.refused,
                "performed": self.performed, "done": self.done, "done_by_robot": self.done_by_robot,
                "human_actions": self.human_actions, "unconfirmed_executions": self.unconfirmed_executions,
                "llm_calls": self.llm_calls, "tokens": self.tokens, "finished": self.finished,
                "stopped": self.stopped}


class StoppableOperator:
    """An operator that asks nothing once `stop` is set: a question the stop interrupted (the
    oversight client gives up waiting) and every later one end the day's questions, unconfirmed."""

    def __init__(self, operator: Operator, stop: StopToken) -> None:
        self._operator = operator
        self._stop = stop
        self.name = getattr(operator, "name", "operator")

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self._stop.check()
        try:
            answer = self._operator.ask(request)
        except Exception:
            self._stop.check()  # stopped while waiting: a stop, not a dead operator
            raise
        self._stop.check()  # an answer that arrives after the stop confirms nothing
        return answer


def run_robot_day(cfg: AnticipationConfig, experience: Experience, day: dict[str, Any], *, client: Completer,
                  operator: Operator, kb: KnowledgeBase, goals: RobotGoals | None = None, seed: int = 0,
                  max_actions: int = 100, question_suffix: str = "", world: WorldBackend | None = None,
                  perform: Perform | None = None, stop: StopToken | None = None) -> RobotDayResult:
    """`world`: the world the human acts in and tasks are checked in (default: the symbolic world
    of the goals' scene); `perform`: how the robot performs a confirmed task (default: the planner's
    executor in this process, its policies in `kb`). `stop` (a cancel, a signal) ends the day
    before its next primitive action, the human's included: what happened so far is returned,
    with `stopped` saying why."""
    from task_learning.bcr.domain import load_domain
    from task_learning.bcr.engines import HeuristicEngine
    from task_learning.planning.executor import GoalExecutor
    from task_learning.world.factory import make_backend

    goals = goals or load_robot_goals(tasks=cfg.tasks)
    ctx = parse_context(str(day["context"]), cfg)
    routine = [str(t) for t in day["tasks"]]
    result = RobotDayResult(str(day["name"]), ctx.describe(cfg), routine)
    if world is None:
        world = make_backend("symbolic", str(goals.scene), seed=seed)
    if stop is not None:
        world = StoppableWorld(world, stop)
        operator = StoppableOperator(operator, stop)
    if perform is None:
        robot = GoalExecutor(load_domain("household"), HeuristicEngine, kb, max_actions=max_actions)

        def perform(task: str, literals: list[GoalLiteral], _confirmation_id: str) -> dict[str, Any]:
            # The executor keys a learned policy by the task and its first object's type and place.
            reach = robot.reach(world, literals, task=f"anticipated: {task}", object_id=literals[0].args[0])
            return {"task": task, "success": reach.success, "actions": len(reach.outcomes),
                    "policy_reused": reach.policy_reused, "message": reach.message}
    human = GoalExecutor(load_domain("household"), HeuristicEngine, None, max_actions=max_actions)
    anticipator = Anticipator(client, cfg, experience, agent="robot", seed=seed)
    proposals = Proposals(operator, ctx.describe(cfg), kb, question_suffix=question_suffix, literals=goals.tasks)
    attempted: set[str] = set()

    def holds_now(task: str) -> bool:
        state = StateView(world.metadata)
        return all(holds(lit, state) for lit in goals.tasks[task])

    try:
        for _round in range(2 * len(routine) + 2):
            if stop is not None:
                stop.check()
            if all(t in result.done for t in routine):
                break
            res = anticipator.anticipate(ctx, result.done)
            result.anticipations.append(res)
            result.llm_calls += 1
            result.tokens += res.prompt_tokens + res.completion_tokens
            confirmed = proposals.confirm_new(res.kept)
            todo = [t for t in confirmed if t not in result.done and t not in attempted]
            if todo:
                task = todo[0]
                attempted.add(task)
                if task not in proposals.confirmed:  # cannot happen: confirm_new returns confirmed tasks only
                    result.unconfirmed_executions += 1
                    continue
                performed = perform(task, list(goals.tasks[task]), proposals.answers[task].confirmation_id)
                result.performed.append(performed)
                if performed["success"] and task in routine and task not in result.done:
                    result.done.append(task)
                    result.done_by_robot.append(task)
            following = next((t for t in routine if t not in result.done), None)
            if following is None:
                break
            if not holds_now(following):
                outcome = human.reach(world, list(goals.tasks[following]))
                result.human_actions += len(outcome.outcomes)
            result.done.append(following)
    except RunStopped as exc:  # a cancel or a stop: the day ends before its next action
        result.stopped = str(exc) or "stopped"
    result.done = [t for t in routine if t in result.done]
    result.finished = all(t in result.done for t in routine)
    result.asked, result.confirmed, result.refused = proposals.asked, proposals.confirmed, proposals.refused
    return result
