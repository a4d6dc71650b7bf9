"""Routines as experience: the days the robot has seen, stored in the knowledge base.

A new knowledge base gets the config's seeded days once (`seed_experience`); a day the robot
watched is added with `record_day`. The validator asks for the routines of a context; a context
never seen falls back to the routines of the same day type and then to all of them, and says so
(`ContextRoutines.fallback`), so an unseen context is handled and counted, never an error."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from task_learning.anticipation.config import AnticipationConfig
from task_learning.anticipation.context import DayContext
from task_learning.kb.store import KnowledgeBase, StoredRoutine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContextRoutines:
    routines: tuple[StoredRoutine, ...]
    fallback: str  # "" (the context itself), "same day" or "all days"
    described: str  # what the routines are, for reasons: "weekday the human is ..."


class Experience:
    """The robot's past routines (read from the knowledge base once, or given)."""

    def __init__(self, routines: Sequence[StoredRoutine]) -> None:
        self.routines = tuple(routines)

    @classmethod
    def from_kb(cls, kb: KnowledgeBase) -> "Experience":
        return cls(kb.routines())

    def in_context(self, ctx: DayContext, cfg: AnticipationConfig) -> ContextRoutines:
        same = tuple(r for r in self.routines if r.day == ctx.day and frozenset(r.facts) == ctx.facts)
        if same:
            return ContextRoutines(same, "", ctx.describe(cfg))
        day = tuple(r for r in self.routines if r.day == ctx.day)
        if day:
            log.info("context %r never seen: using the %d routines of a %s", ctx.describe(cfg), len(day), ctx.day)
            return ContextRoutines(day, "same day", f"{ctx.day} (any context)")
        log.info("context %r never seen, nor any %s: using all %d routines", ctx.describe(cfg), ctx.day,
                 len(self.routines))
        return ContextRoutines(self.routines, "all days", "any day")


def seed_experience(kb: KnowledgeBase, cfg: AnticipationConfig) -> int:
    """Give a knowledge base without routines the config's seeded days; returns how many."""
    if kb.routines():
        return 0
    kb.add_routines(list(cfg.experience))
    return len(cfg.experience)


def record_day(kb: KnowledgeBase, ctx: DayContext, tasks: Sequence[str], explanation: str = "") -> int:
    """Remember a day the robot watched (the tasks the human did, in order)."""
    return kb.add_routines([StoredRoutine(ctx.day, tuple(sorted(ctx.facts)), tuple(tasks), explanation,
                                          source="observed")])[0]
