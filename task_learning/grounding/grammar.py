"""Settings of the goal-sentence grammar (config/grounding/grammar.yaml), validated on load.

The productions themselves are implemented by `parser.py`; the file chooses among them (frames,
clause kinds, subject extensions) and bounds the input, so the accepted language is data.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from task_learning.config import check_keys, config_path, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.grounding.lexicon import split_words

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


def load_grammar(path: str | Path | None = None) -> Grammar:
    file = Path(path) if path is not None else config_path("grounding", "grammar.yaml")
    data = load_yaml(file)
    check_keys(data, file=file, key="", required=("frames", "clauses"), optional=(
        "frame_required", "conjoined_subjects", "subject_modifiers", "negated_states", "max_chars",
        "max_clauses"))
    frames_raw = expect_type(data["frames"], list, file=file, key="frames")
    frames = []
    for i, frame in enumerate(frames_raw):
        expect_type(frame, str, file=file, key=join_key("frames", i))
        words = split_words(frame)
        if not words:
            raise ConfigError(file, join_key("frames", i), "empty frame")
        frames.append(words)
    clauses = expect_type(data["clauses"], list, file=file, key="clauses")
    for i, kind in enumerate(clauses):
        if kind not in CLAUSE_KINDS:
            raise ConfigError(file, join_key("clauses", i),
                              f"unknown clause kind {kind!r} (known: {', '.join(CLAUSE_KINDS)})")
    if not clauses:
        raise ConfigError(file, "clauses", "needs at least one clause kind")

    def flag(name: str, default: bool) -> bool:
        return expect_type(data.get(name, default), bool, file=file, key=name)

    def positive(name: str, default: int) -> int:
        value = expect_type(data.get(name, default), int, file=file, key=name)
        if isinstance(value, bool) or value < 1:
            raise ConfigError(file, name, f"must be a positive integer, got {value!r}")
        return value

    if data.get("frame_required", False) and not frames:
        raise ConfigError(file, "frames", "frame_required needs at least one frame")
    return Grammar(
        frames=tuple(sorted(frames, key=len, reverse=True)),
        frame_required=flag("frame_required", False),
        clauses=frozenset(clauses),
        conjoined_subjects=flag("conjoined_subjects", True),
        subject_modifiers=flag("subject_modifiers", True),
        negated_states=flag("negated_states", True),
        max_chars=positive("max_chars", 1000),
        max_clauses=positive("max_clauses", 12),
        source=str(file),
    )
