"""Settings of the goal-sentence grammar (config/grounding/grammar.yaml), validated on load.

The productions themselves are implemented by `parser.py`; the file chooses among them (frames,
clause kinds, subject extensions) and bounds the input, so the accepted language is data.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator

from task_learning.errors import ConfigError
from task_learning.grounding.lexicon import split_words
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, invalid, load_model

CLAUSE_KINDS = ("location", "state")


@dataclass(frozen=True)
class Grammar:
    frames: tuple[tuple[str, ...], ...]  # longest first
    frame_required: bool
    clauses: frozenset[str]
    conjoined_subjects: bool
    subject_modifiers: bool
    negated_states: bool
    max_chars: int
    max_clauses: int
    source: str = ""


def _positive(value: Any) -> Any:
    """An integer >= 1 (the grammar's own words, kept)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid(f"must be a positive integer, got {value!r}")
    return value


def _clause_kind(kind: Any) -> Any:
    if kind not in CLAUSE_KINDS:
        raise invalid(f"unknown clause kind {kind!r} (known: {', '.join(CLAUSE_KINDS)})")
    return kind


Positive = Annotated[int, BeforeValidator(_positive)]


class GrammarDoc(Schema):
    """grammar.yaml."""

    frames: list[str]
    clauses: list[Annotated[str, BeforeValidator(_clause_kind)]]
    frame_required: bool = False
    conjoined_subjects: bool = True
    subject_modifiers: bool = True
    negated_states: bool = True
    max_chars: Positive = 1000
    max_clauses: Positive = 12


def load_grammar(path: str | Path | None = None) -> Grammar:
    file = Path(path) if path is not None else config_path("grounding", "grammar.yaml")
    doc = load_model(GrammarDoc, file)
    frames = []
    for i, frame in enumerate(doc.frames):
        words = split_words(frame)
        if not words:
            raise ConfigError(file, join_key("frames", i), "empty frame")
        frames.append(words)
    if not doc.clauses:
        raise ConfigError(file, "clauses", "needs at least one clause kind")
    if doc.frame_required and not frames:
        raise ConfigError(file, "frames", "frame_required needs at least one frame")
    return Grammar(
        frames=tuple(sorted(frames, key=len, reverse=True)),
        frame_required=doc.frame_required,
        clauses=frozenset(doc.clauses),
        conjoined_subjects=doc.conjoined_subjects,
        subject_modifiers=doc.subject_modifiers,
        negated_states=doc.negated_states,
        max_chars=doc.max_chars,
        max_clauses=doc.max_clauses,
        source=str(file),
    )
