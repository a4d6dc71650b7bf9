"""Wiring for one in-process run: scene, world, LLM client, operator, STARS and BCR, around the
task-learning loop. `task-learning run` and the experiments use this; the ROS planner node uses the
same loop with ROS proxies for the world and the elicitor.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import make_engine
from task_learning.errors import TaskLearningError
from task_learning.kb import KnowledgeBase
from task_learning.oversight.memory import RememberingOperator
from task_learning.oversight.operator import Operator
from task_learning.planning.confirmation import GoalConfirmer
from task_learning.planning.executor import GoalExecutor
from task_learning.planning.loop import ProgressCallback, TaskLearner
from task_learning.planning.metrics import RunMetrics
from task_learning.planning.stop import StopToken, StoppableWorld
from task_learning.world.factory import make_backend
from task_learning.stars.conditions import Condition, paper_selection_context, parse_condition
from task_learning.world.scene import Scene, load_scene

log = logging.getLogger(__name__)

CONDITIONS = tuple(c.value for c in Condition)
OPERATORS = ("simulated", "terminal", "panel", "none")


def check_task(scene: Scene, task: str | None) -> None:
    """A task the scene does not define is refused before anything runs."""
    from task_learning.names import normalize_name

    if task and normalize_name(task) != normalize_name(scene.task):
        raise TaskLearningError(f"scene {scene.name!r} defines the task {scene.task!r}, not {task!r}")


def make_operator(kind: str, scene: Scene, analyze: Callable[[str], Any] | None = None) -> Operator | None:
    if kind == "simulated":
        from task_learning.oversight.simulated import SimulatedOperator

        return SimulatedOperator.from_scene(scene, analyze=analyze)
    if kind == "terminal":
        from task_learning.oversight.terminal import TerminalOperator

        return TerminalOperator()
    if kind == "panel":
        raise TaskLearningError("the panel needs a Qt event loop: `task-learning run --operator panel` "
                                "starts one, or pass a QueueOperator to run_in_process")
    if kind == "none":
        return None
    raise TaskLearningError(f"unknown operator {kind!r} (choose from {', '.join(OPERATORS)})")


@dataclass
class RunSpec:
    scene: str = "tidy_kitchen"
    condition: str = "STARS+O"
    llm: str = "offline"
    operator: str = "simulated"
    db: str | Path = ":memory:"
    seed: int | None = None
    engine: str = "heuristic"  # BCR selection engine for reaching goals
    max_workers: int = 4
    task: str | None = None  # the task the user names; must be the scene's
    llm_options: dict[str, Any] = field(default_factory=dict)


def run_in_process(spec: RunSpec, progress: ProgressCallback | None = None,
                   client: Any = None, operator: Operator | None = None,
                   stop: StopToken | None = None) -> tuple[RunMetrics, TaskLearner]:
    """One trial of one condition. Running it again on the same db is Trial #2. `operator`, when
    given, answers the +O conditions' questions instead of the one `spec.operator` names (the
    panel's QueueOperator). `stop`, when set from another thread, ends the run with RunStopped
    before its next object or primitive action."""
    from task_learning.llm.client import make_client
    from task_learning.stars.elicit import elicit_goal

    condition = spec.condition.upper()
    if condition not in CONDITIONS:
        raise TaskLearningError(f"unknown condition {spec.condition!r} (choose from {', '.join(CONDITIONS)})")
    scene = load_scene(spec.scene)
    check_task(scene, spec.task)
    paper_selection_context(parse_condition(condition), scene)  # STARS* off tidy kitchen: refused
    world = make_backend("symbolic", scene, spec.seed)
    if stop is not None:
        world = StoppableWorld(world, stop)
    kb = KnowledgeBase(spec.db)
    client = client or make_client(spec.llm, **spec.llm_options)
    answerer: Operator | None = None
    if condition.endswith("+O"):
        from task_learning.grounding import analyze_goal

        def analyze(sentence: str) -> Any:
            from task_learning.world.state import world_state_from_metadata

            return analyze_goal(sentence, world_state_from_metadata(world.metadata))

        inner = operator if operator is not None else make_operator(spec.operator, scene, analyze=analyze)
        if inner is None:
            raise TaskLearningError(f"condition {condition} needs an operator (--operator)")
        answerer = RememberingOperator(inner, kb, scene.task)
    domain = load_domain("household")
    bcr_client = client if spec.engine == "llm" else None
    executor = GoalExecutor(domain, lambda: make_engine(spec.engine, bcr_client), kb)
    pool = ThreadPoolExecutor(max_workers=max(1, spec.max_workers), thread_name_prefix="stars")

    def elicit(*, task: str, object_id: str, metadata: Mapping[str, Any]) -> Any:
        return elicit_goal(task, object_id, metadata, scene, condition, client,
                           operator=answerer, kb=kb, executor=pool)

    confirm = GoalConfirmer(answerer, kb=kb, task=scene.task) if answerer is not None else None
    learner = TaskLearner(scene=scene, world=world, kb=kb, elicit=elicit, executor=executor,
                          condition=condition, progress=progress,
                          usage_source=lambda: client.usage, confirm=confirm, stop=stop)
    try:
        metrics = learner.run()
    finally:
        pool.shutdown(wait=True)
        kb.close()
    return metrics, learner
