"""Bounded answers: where a base model's answer ends, per protocol (config/prompts/bounded_answers.yaml).

A base model (the local Gemma 3 270M) does not end its answer: it continues the prompt's pattern
until `max_tokens`. Measured (docs/llm.md "Bounded answers"): every BCR decision generated its
full 300 tokens, 45 s each on a loaded core, and never wrote the `$$ ... $$` the parser reads; the
LLM-State prompts continued their examples' lists to any limit. The parsers read one line (BCR)
or a short block of calls (LLM-State), so `bounded` answers add a cue where the answer starts,
stop sequences where it ends and a `max_tokens` that fits what the parser reads. `paper` leaves
each protocol's own values. This is a protocol change for base models, chosen per command
(`--answers`; `auto`: bounded with `--llm local`, paper otherwise) and printed with the results.

The offline stand-in reads the request's context, never its text: its answers are the same
under either choice.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Mapping

from task_learning.inputs.config import config_path
from task_learning.inputs.schema import Schema, bounded, load_model
from task_learning.llm.prompt_templates import fill, slots

ANSWER_PROTOCOLS = ("auto", "paper", "bounded")


@dataclass(frozen=True)
class AnswerBound:
    """How a bounded answer is asked for and read back."""

    cue: str
    stop: tuple[str, ...]
    max_tokens: int
    reads_as: str = ""  # put before the answer for the parser: the section it reads, where the cue names it otherwise

    def prompt(self, text: str, goal: str = "") -> str:
        """The prompt with the cue where the answer starts."""
        return text + fill(self.cue, {"goal": goal})

    def answer(self, text: str, goal: str = "") -> str:
        """What the parser reads: `reads_as`, the cue's last line (the answer's start) and the model's text."""
        return self.reads_as + fill(self.cue, {"goal": goal}).rsplit("\n", 1)[-1] + text

    def describe(self) -> str:
        return f"cue {self.cue.strip()!r}, stop {list(self.stop)!r}, max_tokens {self.max_tokens}"


class AnswerBoundDoc(Schema):
    cue: Annotated[str, slots(("goal",))]
    stop: list[str]
    max_tokens: Annotated[int, bounded(low=1, high=4096, integer=True)]
    reads_as: str = ""


class BoundedAnswersDoc(Schema):
    bcr_selection: AnswerBoundDoc
    llm_state_attention: AnswerBoundDoc
    llm_state_estimator: AnswerBoundDoc
    llm_state_policy: AnswerBoundDoc
    llm_state_progprompt: AnswerBoundDoc
    production_selection: AnswerBoundDoc
    production_english: AnswerBoundDoc
    production_rule: AnswerBoundDoc
    production_revision: AnswerBoundDoc


def default_path() -> Path:
    return config_path("prompts", "bounded_answers.yaml")


@functools.lru_cache(maxsize=4)
def load_bounds(path: str | None = None) -> Mapping[str, AnswerBound]:
    """protocol -> its bound (the file is read once per process)."""
    doc = load_model(BoundedAnswersDoc, Path(path) if path else default_path())
    return {name: AnswerBound(d.cue, tuple(d.stop), d.max_tokens, d.reads_as) for name, d in doc}


def resolve(answers: str, llm: str | None) -> str:
    """`auto` -> bounded for the local base model, paper for every other provider."""
    if answers not in ANSWER_PROTOCOLS:
        raise ValueError(f"answers: expected one of {', '.join(ANSWER_PROTOCOLS)}, got {answers!r}")
    if answers != "auto":
        return answers
    return "bounded" if (llm or "").strip().lower() == "local" else "paper"


def bound_for(protocol: str, answers: str) -> AnswerBound | None:
    """The bound of `protocol` under `answers` (resolved: paper or bounded); None for paper."""
    if answers == "paper":
        return None
    if answers != "bounded":
        raise ValueError(f"answers must be resolved to paper or bounded, got {answers!r}")
    return load_bounds()[protocol]
