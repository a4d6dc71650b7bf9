"""Prompt templates for STARS (goal, repair, selection), loaded from `config/prompts/` and validated.

Templates live in YAML so the few-shot examples can be edited without touching code; every
placeholder is checked at load time, so a typo names the file and key instead of producing a
malformed prompt at the first request. Every request carries the structured `context` agreed in
COMMON.md (the offline model reads it; real endpoints only see the prompt text).
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Sequence

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, bounded, invalid, known_key, load_model
from task_learning.llm.base import LLMRequest
from task_learning.llm.constraints import Constraint
from task_learning.stars.grounded import GroundedSettings
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
    # --decoding grounded: goal.yaml's `grounded_examples` / `grounded_task` (the paper's without them)
    grounded_goal_examples: str = ""
    grounded_goal_task: string.Template | None = None
    # --decoding grounded: the answer is an option's number, or its sentence (selection.yaml
    # `grounded_answer`; `grounded_example` is the one-shot example answered that way)
    selection_grounded_answer: str = "number"
    selection_grounded_example: str = ""
    source: dict[str, str] = field(default_factory=dict)
    tbp_sampling: SamplingSettings = field(default_factory=SamplingSettings)
    grounded: GroundedSettings = field(default_factory=GroundedSettings)

    # ----------------------------------------------------------------- goal prompts
    def for_grounded(self) -> "PromptTemplates":
        """These templates with the goal prompt in its grounded framing (goal.yaml
        `grounded_examples`, `grounded_task`; unchanged where the file gives none)."""
        return replace(self, goal_examples=self.grounded_goal_examples or self.goal_examples,
                       goal_task=self.grounded_goal_task or self.goal_task)

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
                          scope: str = "", constrained: bool = False) -> LLMRequest:
        """Numbered options (already in presentation order: lowest score first). `constrained`
        (--decoding grounded): the answer can only be " 1" ... " N", or with `grounded_answer:
        sentence` one of the options' sentences (the model names the goal, not its position)."""
        by_sentence = constrained and self.selection_grounded_answer == "sentence"
        numbered = "\n".join(f"{i}. {sentence_case(text)}" for i, text in enumerate(options, 1))
        sel_context = tuple(ctx.system_context) + tuple(ctx.selection_context)
        question = self.selection_question.substitute(
            task=ctx.task, location=ctx.location, object=ctx.object, relation=ctx.relation,
            place=ctx.place, options=numbered)
        if retry:
            head, sep, tail = question.rpartition("Answer:")
            instruction = self.selection_retry.substitute(count=len(options))
            question = f"{head}{instruction}{sep}{tail}" if sep else question + "\n" + instruction
        body = f"{self.selection_grounded_example if by_sentence else self.selection_example}\n{question}"
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
        constraint = Constraint(choices=tuple(f" {i}" for i in range(1, len(options) + 1))) if constrained else None
        max_tokens = s.max_tokens
        if by_sentence:  # the server stops at the word that leaves one option (the rest is known)
            constraint = Constraint(choices=option_sentences(options), stop_when_unique=True)
            max_tokens = max(max_tokens, SENTENCE_ANSWER_TOKENS)
        return LLMRequest(prompt_type="selection", prompt="" if chat else f"{system}{body}", messages=messages,
                          max_tokens=max_tokens, temperature=s.temperature, logprobs=s.logprobs,
                          stop=s.stop, context=context, scope=scope, constraint=constraint)


SENTENCE_ANSWER_TOKENS = 48  # a goal sentence up to the word that leaves one option, with room


def option_sentences(options: Sequence[str]) -> tuple[str, ...]:
    """The options as a Selection answer writes them after "Answer:" (grounded_answer: sentence)."""
    return tuple(f" {sentence_case(text)}" for text in options)


def option_of_sentence(answer: str, options: Sequence[str]) -> int | None:
    """The 1-based option whose sentence the answer is, or begins as only it does (the server
    stopped where one option was left); None for any other text."""
    text = answer.strip()
    if not text:
        return None
    found = [i for i, s in enumerate(option_sentences(options), 1) if s.strip().startswith(text)]
    exact = [i for i in found if option_sentences(options)[i - 1].strip() == text]
    return exact[0] if exact else (found[0] if len(found) == 1 else None)


def sentence_case(text: str) -> str:
    """'the goal is that the mug is in the cupboard' -> 'The goal is that the mug is in the cupboard.'"""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


# --------------------------------------------------------------------- loading and validation
def placeholders(allowed: set[str]) -> AfterValidator:
    """A string.Template text whose $placeholders are all in `allowed`."""

    def check(value: str) -> str:
        pattern = string.Template.pattern
        names = {m.group("named") or m.group("braced")
                 for m in pattern.finditer(value) if m.group("named") or m.group("braced")}
        if any(m.group("invalid") is not None for m in pattern.finditer(value)):
            raise invalid("a '$' not followed by a placeholder name (write $$ for '$')")
        braces = sorted(set(_BRACED.findall(value)))
        if braces:  # Python's format style would reach the model as literal text
            raise invalid(f"{', '.join('{' + b + '}' for b in braces)}: placeholders are written "
                          f"$name here (allowed: {', '.join('$' + a for a in sorted(allowed))})")
        unknown = sorted(names - allowed)
        if unknown:
            raise invalid(f"unknown placeholder(s) {', '.join('$' + u for u in unknown)}"
                          f" (allowed: {', '.join('$' + a for a in sorted(allowed))})")
        return value

    return AfterValidator(check)


def _open_result(value: str) -> str:
    if not value.rstrip().endswith("(RESULT)$prefix"):
        raise invalid("must end with an open '(RESULT)$prefix' for the model to continue")
    return value


def _tree_logprobs(value: Any) -> Any:
    if value == 0 and not isinstance(value, bool):
        raise invalid("the search tree needs token alternatives (> 0)")
    return value


def _stop_count(value: Any) -> Any:
    if isinstance(value, list) and len(value) > MAX_STOP:
        raise invalid(f"{len(value)} stop sequences, at most {MAX_STOP}")
    return value


def _mismatch_kind(name: str) -> str:
    if name not in {k.value for k in MismatchKind}:
        raise invalid(f"unknown mismatch kind {name!r} (allowed: {', '.join(k.value for k in MismatchKind)})")
    return name


Temperature = Annotated[float, bounded(low=0.0, high=MAX_TEMPERATURE)]
SystemPrefix = Annotated[str, placeholders({"system_context"})]
KindKey = Annotated[str, known_key([k.value for k in MismatchKind])]


class RequestDoc(Schema):
    temperature: Temperature
    max_tokens: Annotated[int, bounded(low=1, high=MAX_TOKENS, integer=True)]
    logprobs: Annotated[int, bounded(low=0, high=MAX_LOGPROBS, integer=True)] = 0
    stop: Annotated[list[str], BeforeValidator(_stop_count)] = Field(default_factory=list)

    def settings(self) -> RequestSettings:
        return RequestSettings(self.temperature, self.max_tokens, self.logprobs, tuple(self.stop))


class TreeRequestDoc(RequestDoc):
    """The goal prompt's request: the search tree reads the alternatives of every token."""

    logprobs: Annotated[int, bounded(low=1, high=MAX_LOGPROBS, integer=True), BeforeValidator(_tree_logprobs)]


class SamplingDoc(Schema):
    temperatures: list[Temperature]
    samples_per_temperature: Annotated[int, bounded(low=1, high=100, integer=True)] = 1


class GroundedDoc(Schema):
    """goal.yaml `grounded:`: the Search Tree and scoring under --decoding grounded."""

    logprobs: Annotated[int, bounded(low=1, high=MAX_LOGPROBS, integer=True)] = 20
    alternative_above: Annotated[float, bounded(low=0.0, high=1.0)] = 0.001
    max_depth: Annotated[int, bounded(low=1, high=64, integer=True)] = 12
    normalise: Literal["sum", "mean"] = "sum"
    search: Literal["decisive", "paths"] = "decisive"
    probabilities: Literal["raw", "constrained"] = "raw"

    def settings(self) -> GroundedSettings:
        return GroundedSettings(self.logprobs, self.alternative_above, self.max_depth, self.normalise, self.search,
                                self.probabilities)


class GoalDoc(Schema):
    """goal.yaml."""

    request: TreeRequestDoc
    examples: str
    task: Annotated[str, placeholders(GOAL_PLACEHOLDERS), AfterValidator(_open_result)]
    system_prefix: SystemPrefix = "$system_context\n"
    tbp_sampling: SamplingDoc | None = None
    grounded: GroundedDoc = Field(default_factory=GroundedDoc)
    # --decoding grounded only: the examples and task block in the grounded framing (empty: the
    # paper's above); the papers' protocols (free decoding) always get `examples` and `task`
    grounded_examples: str = ""
    grounded_task: Annotated[str, placeholders(GOAL_PLACEHOLDERS), AfterValidator(_open_result)] | None = None


class RepairExamplesDoc(Schema):
    examples: str


class RepairDoc(Schema):
    """repair.yaml."""

    repair_kinds: list[Annotated[str, AfterValidator(_mismatch_kind)]]
    attempt: Annotated[str, placeholders(REPAIR_PLACEHOLDERS)]
    templates: dict[KindKey, RepairExamplesDoc]  # one per mismatch kind
    default_feedback: dict[KindKey, Annotated[str, placeholders({"subject"})]]  # one per mismatch kind


class SelectionDoc(Schema):
    """selection.yaml."""

    style: Literal["completion", "chat"]
    request: RequestDoc
    example: str
    question: Annotated[str, placeholders(SELECTION_PLACEHOLDERS)]
    retry_instruction: Annotated[str, placeholders({"count"})]
    system_prefix: SystemPrefix = "$system_context\n"
    grounded_answer: Literal["number", "sentence"] = "number"
    grounded_example: str = ""

    @model_validator(mode="after")
    def _sentence_needs_its_example(self) -> "SelectionDoc":
        if self.grounded_answer == "sentence" and not self.grounded_example.strip():
            raise ValueError("grounded_answer: sentence needs grounded_example (its one-shot example)")
        return self


def load_templates(folder: str | Path | None = None) -> PromptTemplates:
    """Read and validate goal.yaml, repair.yaml and selection.yaml (default: config/prompts/)."""
    base = Path(folder) if folder is not None else config_path("prompts")
    goal_file, repair_file, sel_file = base / GOAL_FILE, base / REPAIR_FILE, base / SELECTION_FILE
    goal = load_model(GoalDoc, goal_file)
    sampling = _sampling_settings(goal.tbp_sampling, file=goal_file)
    repair = load_model(RepairDoc, repair_file)
    for table in ("templates", "default_feedback"):
        missing = [k.value for k in MismatchKind if k.value not in getattr(repair, table)]
        if missing:
            raise ConfigError(repair_file, join_key(table, missing[0]), "missing required key")
    sel = load_model(SelectionDoc, sel_file)
    return PromptTemplates(
        goal_request_settings=goal.request.settings(),
        goal_examples=goal.examples,
        goal_task=string.Template(goal.task),
        grounded_goal_examples=goal.grounded_examples or goal.examples,
        grounded_goal_task=string.Template(goal.grounded_task or goal.task),
        goal_system_prefix=string.Template(goal.system_prefix),
        repair_kinds=tuple(MismatchKind(k) for k in repair.repair_kinds),
        repair_attempt=string.Template(repair.attempt),
        repair_examples={kind: repair.templates[kind.value].examples for kind in MismatchKind},
        repair_default_feedback={kind: string.Template(repair.default_feedback[kind.value]) for kind in MismatchKind},
        selection_style=sel.style,
        selection_request_settings=sel.request.settings(),
        selection_system_prefix=string.Template(sel.system_prefix),
        selection_example=sel.example,
        selection_question=string.Template(sel.question),
        selection_retry=string.Template(sel.retry_instruction),
        selection_grounded_answer=sel.grounded_answer,
        selection_grounded_example=sel.grounded_example,
        source={"goal": str(goal_file), "repair": str(repair_file), "selection": str(sel_file)},
        tbp_sampling=sampling,
        grounded=goal.grounded.settings(),
    )


def _sampling_settings(doc: SamplingDoc | None, *, file: Path) -> SamplingSettings:
    if doc is None:
        return SamplingSettings()
    if not doc.temperatures:
        raise ConfigError(file, "tbp_sampling.temperatures", "needs at least one temperature")
    if len(set(doc.temperatures)) != len(doc.temperatures):
        raise ConfigError(file, "tbp_sampling.temperatures", "a temperature is listed twice")
    return SamplingSettings(tuple(doc.temperatures), doc.samples_per_temperature)
