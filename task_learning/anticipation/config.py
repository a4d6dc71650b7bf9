"""config/anticipation/anticipation.yaml: the task list and its aliases, the facts of a day's
context, the validator's threshold, the prompt's settings and the seeded experience.

Every value is checked on load; an error names the file and the key, like every other config."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from task_learning.config import check_keys, config_path, expect_number, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.kb.store import StoredRoutine
from task_learning.names import normalize_name

DAYS = ("weekday", "weekend")


@dataclass(frozen=True)
class Fact:
    name: str
    phrases: tuple[str, ...]  # how a context string names it
    say: str  # how the prompt says it


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


def load_anticipation_config(path: str | Path | None = None, *, wording: str = "own") -> AnticipationConfig:
    """`wording`: own (the project's prompt text) or paper (the traces' own, `--prompts paper`)."""
    from task_learning.prompt_templates import check_wording

    check_wording(wording)
    file = Path(path) if path else default_path()
    data = check_keys(load_yaml(file), file=file, key="",
                      required=("tasks", "aliases", "facts", "validator", "prompt", "experience"))
    tasks = tuple(_names(data["tasks"], file, "tasks"))
    aliases: dict[str, str] = {normalize_name(t): t for t in tasks}
    if len(aliases) != len(tasks):
        raise ConfigError(file, "tasks", "two tasks have the same name (ignoring case and separators)")
    raw_aliases = expect_type(data["aliases"] or {}, dict, file=file, key="aliases")
    for spelling, task in raw_aliases.items():
        key = join_key("aliases", str(spelling))
        if task not in tasks:
            raise ConfigError(file, key, f"{task!r} is not a task of the list")
        norm = normalize_name(str(spelling))
        if aliases.get(norm, task) != task:
            raise ConfigError(file, key, f"already names {aliases[norm]!r}")
        aliases[norm] = task
    facts = {}
    for name, spec in expect_type(data["facts"], dict, file=file, key="facts").items():
        key = join_key("facts", str(name))
        spec = check_keys(spec, file=file, key=key, required=("phrases", "say"))
        facts[str(name)] = Fact(str(name), tuple(_names(spec["phrases"], file, join_key(key, "phrases"))),
                                str(expect_type(spec["say"], str, file=file, key=join_key(key, "say"))))
    validator = check_keys(data["validator"], file=file, key="validator", required=("threshold",))
    threshold = _number(validator["threshold"], file, "validator.threshold", 0.0, 1.0)
    prompt = check_keys(data["prompt"], file=file, key="prompt", required=("examples", "temperature", "max_tokens"))
    examples = int(_number(prompt["examples"], file, "prompt.examples", 0, 10))
    temperature = _number(prompt["temperature"], file, "prompt.temperature", 0.0, 2.0)
    max_tokens = int(_number(prompt["max_tokens"], file, "prompt.max_tokens", 1, 4096))
    cfg = AnticipationConfig(str(file), tasks, aliases, facts, threshold, examples, temperature,
                             max_tokens, ())
    experience = []
    for i, item in enumerate(expect_type(data["experience"], list, file=file, key="experience")):
        key = f"experience[{i}]"
        item = check_keys(item, file=file, key=key, required=("context", "tasks"), optional=("explanation",))
        from task_learning.anticipation.context import parse_context

        try:
            ctx = parse_context(str(item["context"]), cfg)
        except ConfigError as exc:
            raise ConfigError(file, join_key(key, "context"), exc.message) from None
        if ctx.unknown_words:
            raise ConfigError(file, join_key(key, "context"), f"unknown words {' '.join(ctx.unknown_words)!r}")
        routine = []
        for j, name in enumerate(_names(item["tasks"], file, join_key(key, "tasks"))):
            task = cfg.task_named(name)
            if task is None:
                raise ConfigError(file, f"{key}.tasks[{j}]", f"{name!r} is not a task of the list")
            routine.append(task)
        experience.append(StoredRoutine(ctx.day, tuple(sorted(ctx.facts)), tuple(routine),
                                        str(item.get("explanation") or ""), source="config"))
    return AnticipationConfig(str(file), tasks, aliases, facts, threshold, examples, temperature,
                              max_tokens, tuple(experience), wording)


def _names(value: Any, file: Path, key: str) -> list[str]:
    expect_type(value, list, file=file, key=key)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(file, f"{key}[{i}]", f"expected a non-empty name, got {item!r}")
        out.append(item.strip())
    if not out:
        raise ConfigError(file, key, "empty list")
    return out


def _number(value: Any, file: Path, key: str, low: float, high: float) -> float:
    return float(expect_number(value, file=file, key=key, low=low, high=high))
