"""The offline model's answers to the bootstrapped-productions paper's prompts (action selection, English rule, rule writing,
revision, critic, world statements).

NOT a language model: a deterministic teacher over hand-written kitchen strategies
(config/offline_model/productions.yaml), many of which transcribe the GPT-4 productions the paper
prints (docs/productions.md lists which), never tuned to the paper's tables or to any floor plan. It reads the request's
structured context (the task and the robot's environment knowledge as the prompt shows them),
never the world's ground truth: it sees only what the robot has perceived. Same request, same
answer. Its answers are text in the prompts' sections, parsed by the caller like any model's.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, load_yaml
from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError
from task_learning.llm.tokens import count_tokens
from task_learning.productions.knowledge import EnvKnowledge, UnknownStatement, WorldKnowledge, name_equal
from task_learning.productions.language import (
    DONE,
    QUIT,
    SUBTASK,
    MatchContext,
    Production,
    RuleError,
    apply,
    first_match,
    normalize_effect,
    production_from_dict,
    same_option,
    task_binding,
)

PROMPT_TYPES = ("production_selection", "production_english", "production_rule", "production_revision",
                "production_critic", "world_statement")
_STORED = re.compile(r"^(.+?) is commonly stored in (?:a/an|a|an|the) (.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Strategy:
    english: str
    rule: Production


@dataclass(frozen=True)
class Teacher:
    strategies: tuple[Strategy, ...]
    stored_in: Mapping[str, tuple[str, ...]]

    def statement(self, statement: str) -> bool:
        found = _STORED.match(" ".join(statement.split()))
        if not found:
            return False
        thing = re.sub(r"[\s_\-]+", "", found.group(1).lower())
        kinds = self.stored_in.get(thing, ())
        return any(name_equal(kind, found.group(2)) for kind in kinds)

    def world(self) -> WorldKnowledge:
        return WorldKnowledge(oracle=self.statement)


@functools.lru_cache(maxsize=4)
def load_teacher(path: str | None = None) -> Teacher:
    file = Path(path) if path else config_path("offline_model", "productions.yaml")
    data = load_yaml(file)
    if not isinstance(data, Mapping) or not isinstance(data.get("strategies"), list):
        raise ConfigError(file, "strategies", "expected a list of {english, rule}")
    strategies = []
    for i, entry in enumerate(data["strategies"]):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("english"), str):
            raise ConfigError(file, f"strategies[{i}]", "expected {english: text, rule: {...}}")
        try:
            rule = production_from_dict(entry.get("rule"), where=f"strategies[{i}].rule")
        except RuleError as exc:
            raise ConfigError(file, f"strategies[{i}].rule", str(exc)) from None
        rule.english = entry["english"]
        strategies.append(Strategy(entry["english"], rule))
    stored = data.get("stored_in") or {}
    if not isinstance(stored, Mapping):
        raise ConfigError(file, "stored_in", "expected a mapping object -> [receptacle types]")
    return Teacher(tuple(strategies), {str(k).lower(): tuple(str(v) for v in vs) for k, vs in stored.items()})


def _allowed(option: str, ctx: Mapping[str, Any]) -> bool:
    if any(name_equal(option, b) for b in ctx.get("blacklist") or []):
        return False
    if option in (DONE, QUIT) or any(same_option(option, o) for o in ctx.get("options") or []):
        return True
    if option.startswith(SUBTASK):
        sub = option[len(SUBTASK):].strip()
        return any(task_binding(p, sub) is not None for p in ctx.get("subtasks") or [])
    return False


def _choices(teacher: Teacher, task: str, env: EnvKnowledge) -> list[tuple[Strategy, str]]:
    """Every strategy that applies here with the effect it gives, in the teacher's order."""
    ctx = MatchContext(task, env, teacher.world())
    out = []
    for strategy in teacher.strategies:
        try:
            binding = first_match(strategy.rule, ctx)
        except (UnknownStatement, RuleError):
            continue
        if binding is not None:
            out.append((strategy, normalize_effect(apply(strategy.rule, binding))))
    return out


def _env(ctx: Mapping[str, Any]) -> EnvKnowledge:
    data = ctx.get("env")
    if not isinstance(data, Mapping):
        raise ProviderError("offline model: a production request needs context['env'] (the robot's knowledge)")
    return EnvKnowledge.from_dict(dict(data))


def respond(request: LLMRequest, teacher: Teacher | None = None) -> LLMResponse:
    teacher = teacher or load_teacher()
    ctx = request.context or {}
    kind = request.prompt_type
    if kind == "production_selection":
        text = _selection(teacher, ctx)
    elif kind == "production_english":
        text = _english(teacher, ctx)
    elif kind in ("production_rule", "production_revision"):
        text = _rule(teacher, ctx)
    elif kind == "production_critic":
        text = _critic(ctx)
    elif kind == "world_statement":
        text = "True" if teacher.statement(str(ctx.get("statement", ""))) else "False"
    else:
        raise ProviderError(f"offline model: unsupported prompt_type {kind!r}")
    return LLMResponse(text=text, completion_tokens=count_tokens(text), finish_reason="stop")


def _selection(teacher: Teacher, ctx: Mapping[str, Any]) -> str:
    task = str(ctx.get("task", ""))
    env = _env(ctx)
    chosen, purpose = "", ""
    for strategy, effect in _choices(teacher, task, env):
        if _allowed(effect, ctx):
            chosen, purpose = effect, strategy.english
            break
    if not chosen:
        held = env.held
        fallback = [o for o in ctx.get("options") or [] if held and o.startswith(f"motor action: put {held[0]} ")]
        chosen = fallback[0] if fallback and _allowed(fallback[0], ctx) else QUIT
        purpose = "No strategy I know fits this situation."
    shown = "done" if chosen == DONE else "quit" if chosen == QUIT else chosen
    return "\n".join([
        f"[Current Task]\n{task}", "",
        f"[Common Strategies for \"{task}\"]\n* Use what is already known before exploring further.", "",
        "[Goal Conditions]\n* The task is complete as its name says.", "",
        f"[Current Situation Analysis]\nThe robot is in front of {env.location or 'nothing in particular'} and "
        f"holds {', '.join(env.held) or 'nothing'}.", "",
        "[Task Analysis]\nChoose the step that makes progress with the least effort.", "",
        f"[Plan]\nStep1: {shown}", "",
        f"[Option Evaluation]\n\"{shown}\": useful now.", "",
        f"[Option Suggestion]\n\"{chosen}\"", "",
        f"[Purpose]\n{purpose}", "", "[End]",
    ])


def _english(teacher: Teacher, ctx: Mapping[str, Any]) -> str:
    task, option = str(ctx.get("task", "")), normalize_effect(str(ctx.get("option", "")))
    env = _env(ctx)
    strategy = next((s for s, effect in _choices(teacher, task, env) if same_option(effect, option)), None)
    if strategy is None:
        return "[Relevant Information]\n* None that generalises.\n\n[Generalized Rule]\nnone\n"
    return "\n".join([
        "[Relevant Information]", f"* The current task is {task}.", "",
        "[Specific Rule]", f"IF the current task is {task} THEN choose {option}.", "",
        "[Generalizable Constants]", "* The names of objects and places could be any of their kind.", "",
        "[Generalized Rule]", strategy.english, "",
        "[Correspondence]", f"* as in: {option}", "",
    ])


def _rule(teacher: Teacher, ctx: Mapping[str, Any]) -> str:
    english = " ".join(str(ctx.get("english", "")).split())
    strategy = next((s for s in teacher.strategies if " ".join(s.english.split()) == english), None)
    if strategy is None:
        return "[Rule Implementation]\nI cannot express this rule with the given predicates.\n"
    return "\n".join([
        "[Variable Bindings]", "* As in the rule below.", "",
        "[Precondition Relation]", "* Each condition relates to the variables it names.", "",
        "[Precondition Test]", "* One predicate per condition.", "",
        "[Rule Implementation]", "```json", json.dumps(strategy.rule.to_dict(), indent=1), "```", "",
    ])


def _critic(ctx: Mapping[str, Any]) -> str:
    rules = [r for r in ctx.get("rules") or [] if isinstance(r, Mapping)]
    done = [str(r.get("english", "")) for r in rules if normalize_effect(str(r.get("effect", ""))) == DONE]
    end = ""
    if done:
        found = re.search(r"\bAND (.+?) THEN", done[0])
        end = (found.group(1) if found else done[0]).strip()
    lines = ["[End Condition]", end or "unknown", "", "[Rule Review]"]
    lines += [f"{r.get('name')}: keep" for r in rules]
    return "\n".join(lines) + "\n"
