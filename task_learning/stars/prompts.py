"""Prompt templates for STARS (goal, repair, selection), loaded from `config/prompts/` and validated.

Templates live in YAML so the few-shot examples can be edited without touching code; every
placeholder is checked at load time, so a typo names the file and key instead of producing a
malformed prompt at the first request. Every request carries the structured `context` agreed in
COMMON.md (the offline model reads it; real endpoints only see the prompt text).
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from task_learning.config import check_keys, config_path, expect_number, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.llm.base import LLMRequest
from task_learning.types import MismatchKind

GOAL_FILE = "goal.yaml"
REPAIR_FILE = "repair.yaml"
SELECTION_FILE = "selection.yaml"

# What an OpenAI-style endpoint accepts: temperature 0-2, at most 20 token alternatives
# (top_logprobs; the legacy completions API took 5), and at most 4 stop sequences is its rule
# too, though some servers take more.
MAX_TEMPERATURE = 2.0
MAX_LOGPROBS = 20
MAX_TOKENS = 16_384
MAX_STOP = 16
_BRACED = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")

GOAL_PLACEHOLDERS = {"task", "location", "object", "relation", "place", "prefix"}
REPAIR_PLACEHOLDERS = {"repair_of", "feedback", "prefix"}
SELECTION_PLACEHOLDERS = {"task", "location", "object", "relation", "place", "options"}


@dataclass(frozen=True)
class GoalContext:
    """What a goal prompt is instantiated with: the task and the object as the robot perceives it."""

    task: str  # "tidy kitchen"
    location: str  # "kitchen"
    object: str  # spoken type, "mug"
    relation: str  # "in" / "on"
    place: str  # spoken place, "dish rack"
    system_context: tuple[str, ...] = ()  # STARS+CTX: user context for goal prompts and Selection
    selection_context: tuple[str, ...] = ()  # STARS*: context for Selection only (footnote 3)

    @property
    def description(self) -> str:
        """'mug in the dish rack', the phrase the oversight question uses."""
        return f"{self.object} {self.relation} the {self.place}" if self.place else self.object


@dataclass(frozen=True)
class RequestSettings:
    temperature: float
    max_tokens: int
    logprobs: int
    stop: tuple[str, ...]


@dataclass(frozen=True)
class SamplingSettings:
    """TBP's several responses per prompt: one request per temperature (temperature 0 once,
    every other temperature `samples_per_temperature` times)."""

    temperatures: tuple[float, ...] = (0.0,)
    samples_per_temperature: int = 1

    def plan(self) -> list[tuple[float, int]]:
        """(temperature, sample index) of every request, in sending order."""
        out: list[tuple[float, int]] = []
        for temperature in self.temperatures:
            count = 1 if temperature <= 0 else self.samples_per_temperature
            out.extend((temperature, i) for i in range(count))
        return out


@dataclass
class PromptTemplates:
    """All STARS templates, validated; build requests with `goal_request` / `selection_request`."""

    goal_request_settings: RequestSettings
    goal_examples: str
    goal_task: string.Template
    goal_system_prefix: string.Template
    repair_kinds: tuple[MismatchKind, ...]
    repair_attempt: string.Template
    repair_examples: dict[MismatchKind, str]
    repair_default_feedback: dict[MismatchKind, string.Template]
    selection_style: str
    selection_request_settings: RequestSettings
    selection_system_prefix: string.Template
    selection_example: str
    selection_question: string.Template
    selection_retry: string.Template
    source: dict[str, str] = field(default_factory=dict)
    tbp_sampling: SamplingSettings = field(default_factory=SamplingSettings)

    # ----------------------------------------------------------------- goal prompts
    def system_text(self, ctx: GoalContext) -> str:
        if not ctx.system_context:
            return ""
        return self.goal_system_prefix.substitute(system_context=" ".join(ctx.system_context))

    def goal_prompt(self, ctx: GoalContext, prefix: str = "", repair_of: str = "",
                    feedback: str = "", repair_kind: MismatchKind | None = None) -> str:
        """The TBP prompt ending in an open "(RESULT)" (+ the branch prefix). With `repair_of` the
        repair form: the kind's examples, the unviable response, the feedback, a new (RESULT)."""
        examples = self.repair_examples[repair_kind] if repair_of and repair_kind else self.goal_examples
        fields = {"task": ctx.task, "location": ctx.location, "object": ctx.object,
                  "relation": ctx.relation, "place": ctx.place}
        if repair_of:
            task_block = self.goal_task.substitute(fields, prefix="")
            task_block += self.repair_attempt.substitute(repair_of=repair_of, feedback=feedback,
                                                         prefix=prefix)
        else:
            task_block = self.goal_task.substitute(fields, prefix=prefix)
        return f"{self.system_text(ctx)}{examples}\n{task_block}"

    def goal_request(self, ctx: GoalContext, prompt_type: str, prefix: str = "", *,
                     repair_of: str = "", feedback: str = "",
                     repair_kind: MismatchKind | None = None, scope: str = "") -> LLMRequest:
        s = self.goal_request_settings
        context = {
            "task": ctx.task, "location": ctx.location, "object": ctx.object,
            "object_place": ctx.place, "object_relation": ctx.relation, "prefix": prefix,
            "repair_of": repair_of, "feedback": feedback,
            "system_context": list(ctx.system_context),
        }
        return LLMRequest(
            prompt_type=prompt_type,
            prompt=self.goal_prompt(ctx, prefix, repair_of, feedback, repair_kind),
            max_tokens=s.max_tokens, temperature=s.temperature, logprobs=s.logprobs, stop=s.stop,
            context=context, scope=scope,
        )

    def feedback_for(self, kind: MismatchKind, given: str, subject: str) -> str:
        """The robot's feedback line: the analysis' own sentence, else this kind's default."""
        if given.strip():
            return given.strip()
        text = self.repair_default_feedback[kind].safe_substitute(subject=subject or "it")
        return text[:4] + text[4:5].upper() + text[5:] if text.startswith("No. ") else text

    # ----------------------------------------------------------------- selection prompt
    def selection_request(self, ctx: GoalContext, options: Sequence[str], *, retry: bool = False,
                          scope: str = "") -> LLMRequest:
        """Numbered options (already in presentation order: lowest score first)."""
        numbered = "\n".join(f"{i}. {sentence_case(text)}" for i, text in enumerate(options, 1))
        sel_context = tuple(ctx.system_context) + tuple(ctx.selection_context)
        question = self.selection_question.substitute(
            task=ctx.task, location=ctx.location, object=ctx.object, relation=ctx.relation,
            place=ctx.place, options=numbered)
        if retry:
            head, sep, tail = question.rpartition("Answer:")
            instruction = self.selection_retry.substitute(count=len(options))
            question = f"{head}{instruction}{sep}{tail}" if sep else question + "\n" + instruction
        body = f"{self.selection_example}\n{question}"
        system = ""
        if sel_context:
            system = self.selection_system_prefix.substitute(system_context=" ".join(sel_context))
        s = self.selection_request_settings
        context: dict[str, Any] = {"task": ctx.task, "object": ctx.object, "object_place": ctx.place,
                                   "options": list(options), "system_context": list(sel_context)}
        if retry:
            context["attempt"] = 2
        chat = self.selection_style == "chat"
        messages = ((("system", system.strip()),) if system else ()) + (("user", body),) if chat else ()
        return LLMRequest(prompt_type="selection", prompt="" if chat else f"{system}{body}", messages=messages,
                          max_tokens=s.max_tokens, temperature=s.temperature, logprobs=s.logprobs,
                          stop=s.stop, context=context, scope=scope)


def sentence_case(text: str) -> str:
    """'the goal is that the mug is in the cupboard' -> 'The goal is that the mug is in the cupboard.'"""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


# --------------------------------------------------------------------- loading and validation
def _template(value: Any, *, file: Path, key: str, allowed: set[str]) -> string.Template:
    expect_type(value, str, file=file, key=key)
    tmpl = string.Template(value)
    try:
        names = {m.group("named") or m.group("braced")
                 for m in tmpl.pattern.finditer(value) if m.group("named") or m.group("braced")}
        bad = [m.group(0) for m in tmpl.pattern.finditer(value) if m.group("invalid") is not None]
    except (TypeError, ValueError) as exc:  # pragma: no cover - defensive
        raise ConfigError(file, key, f"bad template: {exc}") from None
    if bad:
        raise ConfigError(file, key, "a '$' not followed by a placeholder name (write $$ for '$')")
    braces = sorted(set(_BRACED.findall(value)))
    if braces:  # Python's format style would reach the model as literal text
        raise ConfigError(file, key, f"{', '.join('{' + b + '}' for b in braces)}: placeholders are written "
                                     f"$name here (allowed: {', '.join('$' + a for a in sorted(allowed))})")
    unknown = sorted(names - allowed)
    if unknown:
        raise ConfigError(file, key, f"unknown placeholder(s) {', '.join('$' + u for u in unknown)}"
                                     f" (allowed: {', '.join('$' + a for a in sorted(allowed))})")
    return tmpl


def _request_settings(value: Any, *, file: Path, key: str, logprobs_required: bool) -> RequestSettings:
    check_keys(value, file=file, key=key,
               required=["temperature", "max_tokens"] + (["logprobs"] if logprobs_required else []),
               optional=["stop"] + ([] if logprobs_required else ["logprobs"]))
    temperature = float(expect_number(value["temperature"], file=file, key=join_key(key, "temperature"),
                                      low=0.0, high=MAX_TEMPERATURE))
    max_tokens = expect_number(value["max_tokens"], file=file, key=join_key(key, "max_tokens"), low=1,
                               high=MAX_TOKENS, integer=True)
    if logprobs_required and value["logprobs"] == 0:
        raise ConfigError(file, join_key(key, "logprobs"), "the search tree needs token alternatives (> 0)")
    logprobs = expect_number(value.get("logprobs", 0), file=file, key=join_key(key, "logprobs"),
                             low=1 if logprobs_required else 0, high=MAX_LOGPROBS, integer=True)
    stop = expect_type(value.get("stop", []), list, file=file, key=join_key(key, "stop"))
    if len(stop) > MAX_STOP:
        raise ConfigError(file, join_key(key, "stop"), f"{len(stop)} stop sequences, at most {MAX_STOP}")
    for i, item in enumerate(stop):
        expect_type(item, str, file=file, key=join_key(join_key(key, "stop"), i))
    return RequestSettings(temperature, max_tokens, logprobs, tuple(stop))


def load_templates(folder: str | Path | None = None) -> PromptTemplates:
    """Read and validate goal.yaml, repair.yaml and selection.yaml (default: config/prompts/)."""
    base = Path(folder) if folder is not None else config_path("prompts")
    goal_file, repair_file, sel_file = base / GOAL_FILE, base / REPAIR_FILE, base / SELECTION_FILE

    goal = check_keys(load_yaml(goal_file), file=goal_file, key="",
                      required=["request", "examples", "task"], optional=["system_prefix", "tbp_sampling"])
    goal_settings = _request_settings(goal["request"], file=goal_file, key="request", logprobs_required=True)
    examples = expect_type(goal["examples"], str, file=goal_file, key="examples")
    task = _template(goal["task"], file=goal_file, key="task", allowed=GOAL_PLACEHOLDERS)
    if not goal["task"].rstrip().endswith("(RESULT)$prefix"):
        raise ConfigError(goal_file, "task", "must end with an open '(RESULT)$prefix' for the model to continue")
    goal_system = _template(goal.get("system_prefix", "$system_context\n"), file=goal_file,
                            key="system_prefix", allowed={"system_context"})

    sampling = _sampling_settings(goal.get("tbp_sampling"), file=goal_file)

    repair = check_keys(load_yaml(repair_file), file=repair_file, key="",
                        required=["repair_kinds", "attempt", "templates", "default_feedback"])
    kinds_raw = expect_type(repair["repair_kinds"], list, file=repair_file, key="repair_kinds")
    kinds: list[MismatchKind] = []
    for i, name in enumerate(kinds_raw):
        try:
            kinds.append(MismatchKind(name))
        except ValueError:
            raise ConfigError(repair_file, join_key("repair_kinds", i),
                              f"unknown mismatch kind {name!r} (allowed: "
                              f"{', '.join(k.value for k in MismatchKind)})") from None
    attempt = _template(repair["attempt"], file=repair_file, key="attempt", allowed=REPAIR_PLACEHOLDERS)
    all_kinds = [k.value for k in MismatchKind]
    templates = check_keys(repair["templates"], file=repair_file, key="templates", required=all_kinds)
    repair_examples: dict[MismatchKind, str] = {}
    for kind in MismatchKind:
        entry = check_keys(templates[kind.value], file=repair_file,
                           key=join_key("templates", kind.value), required=["examples"])
        repair_examples[kind] = expect_type(entry["examples"], str, file=repair_file,
                                            key=join_key(join_key("templates", kind.value), "examples"))
    defaults = check_keys(repair["default_feedback"], file=repair_file, key="default_feedback",
                          required=all_kinds)
    default_feedback = {kind: _template(defaults[kind.value], file=repair_file,
                                        key=join_key("default_feedback", kind.value),
                                        allowed={"subject"}) for kind in MismatchKind}

    sel = check_keys(load_yaml(sel_file), file=sel_file, key="",
                     required=["style", "request", "example", "question", "retry_instruction"],
                     optional=["system_prefix"])
    style = expect_type(sel["style"], str, file=sel_file, key="style")
    if style not in ("completion", "chat"):
        raise ConfigError(sel_file, "style", f"must be 'completion' or 'chat', got {style!r}")
    sel_settings = _request_settings(sel["request"], file=sel_file, key="request", logprobs_required=False)
    return PromptTemplates(
        goal_request_settings=goal_settings,
        goal_examples=examples,
        goal_task=task,
        goal_system_prefix=goal_system,
        repair_kinds=tuple(kinds),
        repair_attempt=attempt,
        repair_examples=repair_examples,
        repair_default_feedback=default_feedback,
        selection_style=style,
        selection_request_settings=sel_settings,
        selection_system_prefix=_template(sel.get("system_prefix", "$system_context\n"), file=sel_file,
                                          key="system_prefix", allowed={"system_context"}),
        selection_example=expect_type(sel["example"], str, file=sel_file, key="example"),
        selection_question=_template(sel["question"], file=sel_file, key="question",
                                     allowed=SELECTION_PLACEHOLDERS),
        selection_retry=_template(sel["retry_instruction"], file=sel_file, key="retry_instruction",
                                  allowed={"count"}),
        source={"goal": str(goal_file), "repair": str(repair_file), "selection": str(sel_file)},
        tbp_sampling=sampling,
    )


def _sampling_settings(value: Any, *, file: Path) -> SamplingSettings:
    if value is None:
        return SamplingSettings()
    check_keys(value, file=file, key="tbp_sampling", required=["temperatures"],
               optional=["samples_per_temperature"])
    temps = expect_type(value["temperatures"], list, file=file, key="tbp_sampling.temperatures")
    if not temps:
        raise ConfigError(file, "tbp_sampling.temperatures", "needs at least one temperature")
    out = []
    for i, t in enumerate(temps):
        key = join_key("tbp_sampling.temperatures", i)
        out.append(float(expect_number(t, file=file, key=key, low=0.0, high=MAX_TEMPERATURE)))
    if len(set(out)) != len(out):
        raise ConfigError(file, "tbp_sampling.temperatures", "a temperature is listed twice")
    samples = expect_number(value.get("samples_per_temperature", 1), file=file,
                            key="tbp_sampling.samples_per_temperature", low=1, high=100, integer=True)
    return SamplingSettings(tuple(out), samples)
