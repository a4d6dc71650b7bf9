"""Errors the core raises, each precise enough for a user to fix the cause without a traceback."""
from __future__ import annotations

from pathlib import Path


class TaskLearningError(Exception):
    """Base class: every error the core raises on bad input derives from it."""


class ConfigError(TaskLearningError):
    """A configuration file is malformed; names the file and the offending key path."""

    def __init__(self, file: str | Path | None, key: str | None, message: str) -> None:
        self.file = str(file) if file is not None else None
        self.key = key
        self.message = message
        where = self.file or "<config>"
        if key:
            where = f"{where}: {key}"
        super().__init__(f"{where}: {message}")


class UnknownObjectError(TaskLearningError):
    """A name or id matches no object (or several) in the world."""


# How every LLMUnavailableError message starts; a node that reports one to another (goal
# elicitation to the planner, in a LearnGoal result) is recognised by it.
LLM_UNAVAILABLE = "the LLM endpoint is unavailable"


class LLMUnavailableError(TaskLearningError):
    """The LLM endpoint stopped serving the run (circuit breaker open): the run ends early."""
