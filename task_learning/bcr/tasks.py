"""BCR tasks as data: goal literals per task (config/domains/bcr_tasks.yaml)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from task_learning.bcr.domain import Domain
from task_learning.bcr.literals import LiteralSyntaxError, is_type_placeholder, parse_literal
from task_learning.errors import ConfigError, TaskLearningError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, load_model
from task_learning.types import GoalLiteral

TASKS_FILE = ("domains", "bcr_tasks.yaml")


@dataclass(frozen=True)
class BCRTask:
    name: str
    goals: tuple[GoalLiteral, ...]
    description: str = ""


@dataclass(frozen=True)
class TaskSet:
    scene: str
    domain: str
    tasks: Mapping[str, BCRTask]
    file: str

    def task(self, name: str) -> BCRTask:
        try:
            return self.tasks[name]
        except KeyError:
            raise TaskLearningError(f"unknown BCR task {name!r} (known: "
                                    f"{', '.join(sorted(self.tasks))})") from None


class TaskDoc(Schema):
    goals: list[str]  # literals
    description: str | None = None


class TasksDoc(Schema):
    scene: str
    domain: str | None = None  # default: household
    tasks: dict[str, TaskDoc]
    doc: str = ""


def load_tasks(path: str | Path | None = None) -> TaskSet:
    path = Path(path) if path else config_path(*TASKS_FILE)
    doc = load_model(TasksDoc, path)
    tasks: dict[str, BCRTask] = {}
    for name, spec in doc.tasks.items():
        key = join_key(join_key("tasks", name), "goals")
        goals = []
        for i, text in enumerate(spec.goals):
            try:
                goals.append(parse_literal(text))
            except LiteralSyntaxError as exc:
                raise ConfigError(path, join_key(key, i), str(exc)) from None
        if not goals:
            raise ConfigError(path, key, "a task needs at least one goal")
        tasks[name] = BCRTask(name, tuple(goals), spec.description or "")
    return TaskSet(doc.scene, doc.domain or "household", tasks, str(path))


def check_goals(goals: list[GoalLiteral] | tuple[GoalLiteral, ...], domain: Domain,
                metadata: Mapping[str, Any]) -> None:
    """Goals must use the domain's predicates with the right arity and name objects (or types)
    of the world; a clear error otherwise."""
    ids = {str(o["objectId"]) for o in metadata.get("objects") or []}
    for goal in goals:
        if goal.predicate not in domain.predicates:
            raise TaskLearningError(f"goal {goal}: unknown predicate '{goal.predicate}' "
                                    f"(domain {domain.name}: {', '.join(sorted(domain.predicates))})")
        if len(goal.args) != domain.predicates[goal.predicate]:
            raise TaskLearningError(f"goal {goal}: '{goal.predicate}' takes "
                                    f"{domain.predicates[goal.predicate]} argument(s)")
        for arg in goal.args:
            if is_type_placeholder(arg):
                continue  # may come to exist (slices)
            if arg not in ids:
                raise TaskLearningError(f"goal {goal}: no object {arg!r} in the world")
