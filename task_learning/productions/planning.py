"""Productions in the planner (the bootstrapped-productions paper in the stack): before BCR selects actions for a goal, the
learned productions try to reach it alone, with no LLM.

A goal the production families cover is turned into a task: inside/on(X, R) -> "pick and place
a/an X in/on a/an R", sliced(X) -> "slice a/an X". The production agent runs it with no advisor
(a gap or a cycle ends it: quit); if afterwards every goal literal holds, the goal is reached with
productions alone; otherwise the executor goes on with BCR from the state reached. Only approved
productions are used when `approved_only` (the planner's default on a robot).
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Callable

from task_learning.bcr.literals import StateView, holds
from task_learning.kb.store import KnowledgeBase
from task_learning.productions.agent import Episode, ProductionAgent, ProductionSet
from task_learning.productions.knowledge import WorldKnowledge
from task_learning.productions.memory import load_productions
from task_learning.productions.world import WorldAdapter
from task_learning.types import ActionOutcome, GoalLiteral, Truth
from task_learning.world.backend import WorldBackend

log = logging.getLogger(__name__)


def task_for(literals: list[GoalLiteral]) -> str | None:
    """The production task that reaches these literals, or None when no family covers them."""
    positive = [lit for lit in literals if lit.truth is Truth.TRUE]
    placing = [lit for lit in positive if lit.predicate in ("inside", "on") and len(lit.args) == 2]
    slicing = [lit for lit in positive if lit.predicate == "sliced" and len(lit.args) == 1]
    if len(placing) == 1:
        obj, place = placing[0].args
        return f"pick and place a/an {obj} in/on a/an {place}"
    if len(slicing) == 1 and not placing:
        return f"slice a/an {slicing[0].args[0]}"
    return None


@dataclass
class ProductionAttempt:
    task: str
    reached: bool
    episode: Episode
    outcomes: list[ActionOutcome] = field(default_factory=list)


class ProductionReacher:
    """Reaches a goal with productions alone (no LLM, no learning)."""

    def __init__(self, productions: ProductionSet, world_knowledge: WorldKnowledge | None = None, *,
                 max_steps: int = 200, seed: int = 0) -> None:
        self.productions = productions
        self.world_knowledge = world_knowledge or WorldKnowledge()
        self.max_steps = max_steps
        self.seed = seed

    def attempt(self, world: WorldBackend, literals: list[GoalLiteral],
                on_outcome: Callable[[ActionOutcome], None] | None = None) -> ProductionAttempt | None:
        task = task_for(literals)
        if task is None or not len(self.productions):
            return None
        outcomes: list[ActionOutcome] = []

        def record(outcome: ActionOutcome) -> None:
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)

        adapter = WorldAdapter(world, on_outcome=record)
        agent = ProductionAgent(self.productions, adapter, world_knowledge=self.world_knowledge,
                                rng=random.Random(self.seed), max_steps=self.max_steps)
        episode = agent.run(task)
        state = StateView(world.metadata)
        reached = episode.outcome == "done" and all(holds(lit, state) for lit in literals)
        log.info("productions on %r: %s after %d steps (%s)", task, "reached" if reached else "not reached",
                 episode.steps, episode.outcome)
        return ProductionAttempt(task, reached, episode, outcomes)


def reacher_from_kb(kb: KnowledgeBase, *, approved_only: bool = True) -> ProductionReacher | None:
    """The planner's productions from a knowledge base (None when there are none to use): with
    `approved_only`, only those an operator approved (`task-learning kb approve`); imported ones
    only once approved, whatever `approved_only` says. World knowledge
    is what the knowledge base holds; nothing is asked of an LLM. Utility updates are written back."""
    rows = {row["name"]: row["approval"] for row in kb.productions()}
    usable = [p for p in load_productions(kb, unreviewed_imports=False)
              if not approved_only or rows.get(p.name, "none") != "none"]
    if not usable:
        return None
    productions = ProductionSet(usable, on_flush=lambda ps: kb.update_production_utilities(
        [(p.name, p.utility, p.count) for p in ps]))
    return ProductionReacher(productions, WorldKnowledge(kb.statements()))
