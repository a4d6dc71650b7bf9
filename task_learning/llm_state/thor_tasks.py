"""The LLM-State paper's Table I tasks on an AI2-THOR-speaking world (also runnable on the AI2-THOR
bridge).

config/llm_state/thor_tasks.yaml names, for each task a FloorPlan supports, the project scene it
runs in and its goal check as literals on the world's metadata; the goal text and the step cap
are the household task's (tasks.yaml), so the prompts read exactly as in the household. The
world is `ThorWorld` over the `symbolic` backend (the FloorPlan's recorded metadata, in process)
or the `ai2thor` backend (the ai2thor Controller and its simulator). Tasks no FloorPlan supports
are listed with the reason, which the CLI prints.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from task_learning.bcr.literals import LiteralSyntaxError, StateView, holds, parse_literal
from task_learning.errors import ConfigError, TaskLearningError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, load_model
from task_learning.llm_state.agent import Completer, LLMStateAgent, TrialResult
from task_learning.llm_state.household import TaskSpec
from task_learning.llm_state.thor_world import ThorWorld
from task_learning.types import GoalLiteral
from task_learning.world.factory import make_backend
from task_learning.world.thor.settings import ThorSettings

THOR_BACKENDS = ("symbolic", "ai2thor")


@dataclass(frozen=True)
class ThorTask:
    name: str
    scene: str  # a project scene (config/scenes/) over a FloorPlan
    check: tuple[GoalLiteral, ...]

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        view = StateView(metadata)
        return all(holds(lit, view) for lit in self.check)


@dataclass(frozen=True)
class ThorTasks:
    tasks: Mapping[str, ThorTask]
    unsupported: Mapping[str, str]  # task -> why no FloorPlan supports it

    def task(self, name: str) -> ThorTask:
        if name in self.tasks:
            return self.tasks[name]
        if name in self.unsupported:
            raise TaskLearningError(f"task {name!r} does not run on an AI2-THOR world: {self.unsupported[name]}")
        raise TaskLearningError(f"unknown task {name!r} on an AI2-THOR world "
                                f"(runnable: {', '.join(sorted(self.tasks))})")


class ThorTaskDoc(Schema):
    scene: str  # a project scene over a FloorPlan
    check: list[str]  # goal literals


class ThorTasksDoc(Schema):
    """thor_tasks.yaml."""

    tasks: dict[str, ThorTaskDoc]
    unsupported: dict[str, str] | None = None  # task -> why no FloorPlan supports it


def load_thor_tasks(path: str | Path | None = None) -> ThorTasks:
    file = Path(path) if path is not None else config_path("llm_state", "thor_tasks.yaml")
    doc = load_model(ThorTasksDoc, file)
    tasks: dict[str, ThorTask] = {}
    for name, spec in doc.tasks.items():
        key = join_key("tasks", name)
        literals = []
        for i, text in enumerate(spec.check):
            try:
                literals.append(parse_literal(text))
            except LiteralSyntaxError as exc:
                raise ConfigError(file, join_key(key, f"check[{i}]"), str(exc)) from None
        if not literals:
            raise ConfigError(file, join_key(key, "check"), "no goal check")
        tasks[name] = ThorTask(name, spec.scene, tuple(literals))
    return ThorTasks(tasks, dict(doc.unsupported or {}))


def run_thor_trial(client: Completer, method: str, task: TaskSpec, thor_task: ThorTask, *, backend: str,
                   cap: int | None = None, trial: int = 0, ai2thor_settings: ThorSettings | None = None,
                   temperature: float = 0.0,
                   wording: str = "own", answers: str = "paper") -> TrialResult:
    """One episode of `task` in its FloorPlan on a fresh world of `backend`; success is the
    check on the world's metadata, never the policy's belief."""
    if backend not in THOR_BACKENDS:
        raise TaskLearningError(f"unknown AI2-THOR world backend {backend!r} (known: {', '.join(THOR_BACKENDS)})")
    world = make_backend(backend, thor_task.scene, ai2thor_settings=ai2thor_settings)
    try:
        thor = ThorWorld(world, thor_task.holds, map_name=f"{thor_task.scene}@{backend}")
        return LLMStateAgent(client, method, temperature=temperature, wording=wording,
                             answers=answers).run(thor, task, cap=cap, trial=trial)
    finally:
        close = getattr(world, "close", None)
        if callable(close):
            close()
