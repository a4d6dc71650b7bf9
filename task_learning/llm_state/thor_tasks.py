"""Seed 003's Table I tasks on an AI2-THOR-speaking world (issue 17, item 3: "also runnable on
the AI2-THOR bridge").

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
from task_learning.config import check_keys, config_path, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError, TaskLearningError
from task_learning.llm_state.agent import Completer, LLMStateAgent, TrialResult
from task_learning.llm_state.household import TaskSpec
from task_learning.llm_state.thor_world import ThorWorld
from task_learning.types import GoalLiteral
from task_learning.world.factory import make_backend

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


def load_thor_tasks(path: str | Path | None = None) -> ThorTasks:
    file = Path(path) if path is not None else config_path("llm_state", "thor_tasks.yaml")
    data = check_keys(load_yaml(file), file=file, key="", required=("tasks",), optional=("unsupported",))
    tasks: dict[str, ThorTask] = {}
    for name, spec in expect_type(data["tasks"], dict, file=file, key="tasks").items():
        key = join_key("tasks", str(name))
        check_keys(spec, file=file, key=key, required=("scene", "check"))
        scene = expect_type(spec["scene"], str, file=file, key=join_key(key, "scene"))
        literals = []
        for i, text in enumerate(expect_type(spec["check"], list, file=file, key=join_key(key, "check"))):
            try:
                literals.append(parse_literal(expect_type(text, str, file=file, key=join_key(key, f"check[{i}]"))))
            except LiteralSyntaxError as exc:
                raise ConfigError(file, join_key(key, f"check[{i}]"), str(exc)) from None
        if not literals:
            raise ConfigError(file, join_key(key, "check"), "no goal check")
        tasks[str(name)] = ThorTask(str(name), scene, tuple(literals))
    unsupported = expect_type(data.get("unsupported") or {}, dict, file=file, key="unsupported")
    return ThorTasks(tasks, {str(k): str(v) for k, v in unsupported.items()})


def run_thor_trial(client: Completer, method: str, task: TaskSpec, thor_task: ThorTask, *, backend: str,
                   cap: int | None = None, trial: int = 0, ai2thor_settings: Any = None, temperature: float = 0.0,
                   wording: str = "own") -> TrialResult:
    """One episode of `task` in its FloorPlan on a fresh world of `backend`; success is the
    check on the world's metadata, never the policy's belief."""
    if backend not in THOR_BACKENDS:
        raise TaskLearningError(f"unknown AI2-THOR world backend {backend!r} (known: {', '.join(THOR_BACKENDS)})")
    world = make_backend(backend, thor_task.scene, ai2thor_settings=ai2thor_settings)
    try:
        thor = ThorWorld(world, thor_task.holds, map_name=f"{thor_task.scene}@{backend}")
        return LLMStateAgent(client, method, temperature=temperature, wording=wording).run(thor, task, cap=cap,
                                                                                          trial=trial)
    finally:
        close = getattr(world, "close", None)
        if callable(close):
            close()
