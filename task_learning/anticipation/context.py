"""A day's context from free text: "weekday, working from home and need a snack" ->
DayContext(day="weekday", facts={"working_from_home", "needs_snack"}).

The day is weekday or weekend (a day of the week names one of them); the facts are the phrases of
the config's `facts`, longest first, so "not having guests" is never also "having guests". Words
that name nothing are kept in `unknown_words` (the CLI reports them), never guessed."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Protocol

from task_learning.errors import ConfigError

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
WEEKEND_DAYS = ("saturday", "sunday")
FILLER = frozenset({"a", "an", "the", "on", "is", "are", "and", "human", "person", "user", "day", "today",
                    "it", "who", "they", "he", "she", "s", "also", "will", "be"})
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Fact:
    name: str
    phrases: tuple[str, ...]  # how a context string names it
    say: str  # how the prompt says it


class FactTable(Protocol):
    """What a context is read against: the facts of the anticipation config (config.py)."""

    @property
    def facts(self) -> Mapping[str, Fact]: ...


@dataclass(frozen=True)
class DayContext:
    day: str  # weekday | weekend
    facts: frozenset[str]
    unknown_words: tuple[str, ...] = field(default=(), compare=False)

    def key(self) -> tuple[str, tuple[str, ...]]:
        return (self.day, tuple(sorted(self.facts)))

    def describe(self, cfg: FactTable) -> str:
        """As the prompt says it: "weekday the human is working from home and need a snack"."""
        said = [cfg.facts[f].say for f in cfg.facts if f in self.facts]  # config order
        return f"{self.day} the human is {' and '.join(said)}" if said else self.day


def parse_context(text: str, cfg: FactTable) -> DayContext:
    """Raises ConfigError (key "context") when no day is named or two are."""
    words = " ".join(_WORD.findall(text.lower().replace("work-station", "workstation")))
    words = f" {words} "
    facts: set[str] = set()
    phrases = sorted(((p.lower(), f.name) for f in cfg.facts.values() for p in f.phrases),
                     key=lambda pair: -len(pair[0]))
    for phrase, fact in phrases:
        needle = f" {' '.join(_WORD.findall(phrase))} "
        if needle in words:
            facts.add(fact)
            words = words.replace(needle, " ")
    days = set()
    for token in words.split():
        if token in ("weekday", "weekdays") or token in WEEKDAYS:
            days.add("weekday")
        elif token in ("weekend", "weekends") or token in WEEKEND_DAYS:
            days.add("weekend")
    if len(days) != 1:
        problem = "names no day" if not days else "names both a weekday and a weekend day"
        raise ConfigError(None, "context", f"{text.strip()!r} {problem}: say weekday, weekend or a day of the week")
    day_words = {"weekday", "weekdays", "weekend", "weekends", *WEEKDAYS, *WEEKEND_DAYS}
    unknown = tuple(w for w in words.split() if w not in FILLER and w not in day_words)
    return DayContext(days.pop(), frozenset(facts), unknown)
