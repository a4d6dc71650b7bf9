"""config/anticipation/anticipation.yaml: the task list and its aliases, the facts of a day's
context, the validator's threshold, the prompt's settings and the seeded experience.

Every value is checked on load; an error names the file and the key, like every other config."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from task_learning.anticipation.context import Fact, parse_context
from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.names import normalize_name
from task_learning.inputs.schema import Schema, bounded, invalid, load_model
from task_learning.kb.store import StoredRoutine

DAYS = ("weekday", "weekend")


@dataclass(frozen=True)
class AnticipationConfig:
    source: str
    tasks: tuple[str, ...]
    aliases: dict[str, str]  # normalized spelling -> task of the list (the list's own names too)
    facts: dict[str, Fact]
    threshold: float
    examples: int
    temperature: float
    max_tokens: int
    experience: tuple[StoredRoutine, ...]
    # own (default): the project's prompt wording; paper: the traces' own (paper_prompts.py)
    wording: str = "own"

    def task_named(self, name: str) -> str | None:
        """The task of the list `name` means (its own name or an alias), or None."""
        return self.aliases.get(normalize_name(name))


def default_path() -> Path:
    return config_path("anticipation", "anticipation.yaml")


def _name(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"expected a non-empty name, got {value!r}")
    return value.strip()


def _not_empty(value: list[str]) -> list[str]:
    if not value:
        raise invalid("empty list")
    return value


Names = Annotated[list[Annotated[str, BeforeValidator(_name)]], AfterValidator(_not_empty)]


class FactDoc(Schema):
    phrases: Names  # how a context string names it
    say: str  # how the prompt says it


class ValidatorDoc(Schema):
    threshold: Annotated[float, bounded(low=0.0, high=1.0)]


class PromptDoc(Schema):
    examples: Annotated[int, bounded(low=0, high=10, integer=True)]
    temperature: Annotated[float, bounded(low=0.0, high=2.0)]
    max_tokens: Annotated[int, bounded(low=1, high=4096, integer=True)]


class ExperienceDoc(Schema):
    context: str
    tasks: Names
    explanation: str | None = None


class AnticipationDoc(Schema):
    """anticipation.yaml."""

    tasks: Names
    aliases: dict[str, str] | None  # another spelling -> a task of the list
    facts: dict[str, FactDoc]
    validator: ValidatorDoc
    prompt: PromptDoc
    experience: list[ExperienceDoc]


def load_anticipation_config(path: str | Path | None = None, *, wording: str = "own") -> AnticipationConfig:
    """`wording`: own (the project's prompt text) or paper (the traces' own, `--prompts paper`)."""
    from task_learning.llm.prompt_templates import check_wording

    check_wording(wording)
    file = Path(path) if path else default_path()
    doc = load_model(AnticipationDoc, file)
    tasks = tuple(doc.tasks)
    aliases: dict[str, str] = {normalize_name(t): t for t in tasks}
    if len(aliases) != len(tasks):
        raise ConfigError(file, "tasks", "two tasks have the same name (ignoring case and separators)")
    for spelling, task in (doc.aliases or {}).items():
        key = join_key("aliases", spelling)
        if task not in tasks:
            raise ConfigError(file, key, f"{task!r} is not a task of the list")
        norm = normalize_name(spelling)
        if aliases.get(norm, task) != task:
            raise ConfigError(file, key, f"already names {aliases[norm]!r}")
        aliases[norm] = task
    facts = {name: Fact(name, tuple(spec.phrases), spec.say) for name, spec in doc.facts.items()}
    cfg = AnticipationConfig(str(file), tasks, aliases, facts, doc.validator.threshold, doc.prompt.examples,
                             doc.prompt.temperature, doc.prompt.max_tokens, ())
    experience = []
    for i, item in enumerate(doc.experience):
        key = f"experience[{i}]"
        try:
            ctx = parse_context(item.context, cfg)
        except ConfigError as exc:
            raise ConfigError(file, join_key(key, "context"), exc.message) from None
        if ctx.unknown_words:
            raise ConfigError(file, join_key(key, "context"), f"unknown words {' '.join(ctx.unknown_words)!r}")
        routine = []
        for j, name in enumerate(item.tasks):
            named = cfg.task_named(name)
            if named is None:
                raise ConfigError(file, f"{key}.tasks[{j}]", f"{name!r} is not a task of the list")
            routine.append(named)
        experience.append(StoredRoutine(ctx.day, tuple(sorted(ctx.facts)), tuple(routine),
                                        item.explanation or "", source="config"))
    return dataclasses.replace(cfg, experience=tuple(experience), wording=wording)
