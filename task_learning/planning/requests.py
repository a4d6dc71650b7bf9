"""A task or goal request from outside the process (the planner's PerformTask and ReachGoal goals),
validated before anything runs: sizes, control characters, scenes by name only (a path only when
allowed), known subtasks and conditions, known predicates with one or two arguments. A refusal is
`BadRequest`, whose message names the field and says why."""
from __future__ import annotations

import re
from typing import Callable, Iterable, Protocol, Sequence

from task_learning.bcr.literals import KNOWN_PREDICATES
from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.planning.service import keep_subtasks
from task_learning.planning.session import CONDITIONS, check_task
from task_learning.types import GoalLiteral
from task_learning.world.scene import Scene, available_scenes, load_scene

MAX_TEXT_CHARS = 200  # task, scene, condition, subtask, predicate and argument strings
MAX_SUBTASKS = 64
SCENE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class BadRequest(TaskLearningError):
    """A goal request that is refused (says which field and why)."""


class LiteralRequest(Protocol):
    """A goal literal as a request carries it (msg/GoalLiteral)."""

    predicate: str
    args: Sequence[str]


def check_text(value: str, field_name: str) -> str:
    """`value`, when it is short enough and has no control characters."""
    if len(value) > MAX_TEXT_CHARS:
        raise BadRequest(f"{field_name}: {len(value)} characters, at most {MAX_TEXT_CHARS}")
    if printable(value) != value:
        raise BadRequest(f"{field_name}: control characters are not allowed")
    return value


def scene_of(name: str, *, allow_paths: bool) -> Scene:
    """The scene a request names (scene names only, unless `allow_paths`)."""
    check_text(name, "scene")
    if not allow_paths:
        if not SCENE_NAME.match(name):
            raise BadRequest(f"scene: {printable(name)!r} is not a scene name (scenes are named, "
                             f"e.g. store_groceries; paths need the allow_scene_paths parameter)")
        if name not in available_scenes():
            raise BadRequest(f"scene: no scene named {name!r} (known: {', '.join(available_scenes())})")
    return load_scene(name)


def task_request(scene: Scene, task: str, subtasks: Iterable[str], condition: str) -> tuple[str, str]:
    """A task request on `scene`: the task the user named ("" for the scene's) and the condition
    (upper case); `scene` is narrowed to the subtasks asked for."""
    task = check_text(task, "task")
    check_task(scene, task or scene.task)
    subtasks = list(subtasks)
    if len(subtasks) > MAX_SUBTASKS:
        raise BadRequest(f"subtasks: {len(subtasks)} given, at most {MAX_SUBTASKS}")
    keep_subtasks(scene, {check_text(s, "subtasks") for s in subtasks})
    condition = check_text(condition, "condition").upper()
    if condition not in CONDITIONS:
        raise BadRequest(f"condition: unknown {condition!r} (choose from {', '.join(CONDITIONS)})")
    return task, condition


def literals_of(requested: Sequence[LiteralRequest], max_literals: int,
                to_literal: Callable[[LiteralRequest], GoalLiteral]) -> list[GoalLiteral]:
    """A goal's literals, validated: count, known predicates, 1-2 arguments; `to_literal` reads
    the rest (its ValueError, e.g. an unknown truth value, is refused naming the literal)."""
    if not requested:
        raise BadRequest("ReachGoal needs at least one goal literal")
    if len(requested) > max_literals:
        raise BadRequest(f"{len(requested)} goal literals, at most {max_literals}")
    literals = []
    for i, literal in enumerate(requested):
        where = f"goal[{i}]"
        check_text(literal.predicate, f"{where}.predicate")
        if literal.predicate not in KNOWN_PREDICATES:
            raise BadRequest(f"{where}: unknown predicate {printable(literal.predicate)!r} (known: "
                             f"{', '.join(sorted(KNOWN_PREDICATES))})")
        if not 1 <= len(literal.args) <= 2:
            raise BadRequest(f"{where}: {literal.predicate} takes 1 or 2 arguments, got {len(literal.args)}")
        for j, arg in enumerate(literal.args):
            check_text(arg, f"{where}.args[{j}]")
        try:
            literals.append(to_literal(literal))
        except ValueError as exc:
            raise BadRequest(f"{where}: {printable(str(exc))}") from None
    return literals
