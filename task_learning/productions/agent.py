"""The production agent's loop (seed 001): a task stack, productions sampled by utility, the LLM
when no production applies or a cycle shows, and reinforcement on done.

Per step, for the task on top of the stack: test every production for it; if none applies, or the
last transition closed a cycle in this task's state-transition graph (DFS), ask the advisor (the
LLM: an action, and while bootstrapping a new production too); otherwise sample one applicable
production with P ∝ exp(U). Run the effect: a motor action in the world, a subtask pushed, done
(reward: utilities on the shortest path to done updated; pop) or quit (pop, nothing updated).
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from task_learning.productions.knowledge import EnvKnowledge, UnknownStatement, WorldKnowledge, name_equal
from task_learning.productions.language import (
    DONE,
    MOTOR,
    QUIT,
    SUBTASK,
    MatchContext,
    Production,
    RuleError,
    apply,
    first_match,
    normalize_effect,
)
from task_learning.productions.utility import (
    DONE_NODE,
    GAMMA,
    TransitionGraph,
    path_rewards,
    sample,
    updated_utility,
)

log = logging.getLogger(__name__)


class ProductionWorld(Protocol):
    """The world as the agent sees it: knowledge after each action, the motor options there are,
    and motor actions that return '' or an affordance error."""

    def knowledge(self) -> EnvKnowledge:
        ...

    def motor_options(self) -> list[str]:
        ...

    def execute(self, action: str) -> str:
        ...


@dataclass
class HistoryItem:
    time: int
    task: str
    effect: str
    purpose: str
    source: str  # a production's name, or "llm"
    error: str = ""


@dataclass
class Decision:
    """What the advisor is asked: the top task, what the robot knows, what it did, what it may do."""

    task: str
    env: EnvKnowledge
    history: list[HistoryItem]
    options: list[str]
    blacklist: list[str]
    reason: str  # no_production | cycle | affordance_error
    world: WorldKnowledge


@dataclass
class Advice:
    option: str
    purpose: str = ""
    production: Production | None = None


class Advisor(Protocol):
    def advise(self, decision: Decision) -> Advice | None:
        ...


class ProductionSet:
    """The procedural memory. `on_change(production)` persists a new or updated production."""

    def __init__(self, productions: list[Production] | None = None,
                 on_change: Callable[[Production], None] | None = None,
                 on_remove: Callable[[str], None] | None = None,
                 on_flush: Callable[[list[Production]], None] | None = None) -> None:
        self._items: dict[str, Production] = {}
        self.on_change = on_change
        self.on_remove = on_remove
        # utility updates are written together when a task ends (one transaction), new
        # productions at once
        self.on_flush = on_flush
        self._dirty: dict[str, Production] = {}
        for p in productions or []:
            self._items[p.name] = p

    def __iter__(self) -> Any:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def get(self, name: str) -> Production | None:
        return self._items.get(name)

    def add(self, production: Production) -> Production:
        """Add a production; a name already taken gets a numeric suffix."""
        name, n = production.name, 2
        while name in self._items:
            name = f"{production.name}-{n}"
            n += 1
        production.name = name
        self._items[name] = production
        if self.on_change:
            self.on_change(production)
        return production

    def remove(self, name: str) -> None:
        if self._items.pop(name, None) is not None and self.on_remove:
            self.on_remove(name)

    def copy(self) -> "ProductionSet":
        """A detached copy (no persistence): a test trial that must not change the learned set."""
        return ProductionSet([Production(p.name, p.task, p.conditions, p.effect, p.english, p.utility, p.count,
                                         dict(p.provenance)) for p in self])

    def changed(self, production: Production) -> None:
        if self.on_flush:
            self._dirty[production.name] = production
        elif self.on_change:
            self.on_change(production)

    def flush(self) -> None:
        if self.on_flush and self._dirty:
            self.on_flush(list(self._dirty.values()))
        self._dirty.clear()


@dataclass
class Frame:
    task: str
    graph: TransitionGraph | None = None
    pending: tuple[str, str | None] | None = None
    taken: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class _Progress:
    """The running account of one `ProductionAgent.run`."""

    steps: int = 0
    llm: int = 0  # decisions the LLM was asked for
    used: int = 0  # steps a production chose
    errors_in_row: int = 0  # affordance errors
    learned: list[str] = field(default_factory=list)
    outcome: str = "step_limit"
    last_error: str = ""
    history: list[HistoryItem] = field(default_factory=list)


@dataclass
class Episode:
    task: str
    outcome: str  # done | quit | step_limit | failed
    steps: int
    llm_decisions: int
    productions_used: int
    learned: list[str]
    history: list[HistoryItem]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "outcome": self.outcome, "steps": self.steps,
                "llm_decisions": self.llm_decisions, "productions_used": self.productions_used,
                "learned": list(self.learned)}


class ProductionAgent:
    """Runs one task at a time over a world, with productions and (optionally) an advisor."""

    def __init__(self, productions: ProductionSet, world: ProductionWorld, *,
                 world_knowledge: WorldKnowledge | None = None, advisor: Advisor | None = None,
                 rng: random.Random | None = None, gamma: float = GAMMA, max_steps: int = 150,
                 max_depth: int = 6, affordance_retries: int | None = None) -> None:
        self.productions = productions
        self.world = world
        self.world_knowledge = world_knowledge or WorldKnowledge()
        self.advisor = advisor
        self.rng = rng or random.Random(0)
        self.gamma = gamma
        self.max_steps = max_steps
        self.max_depth = max_depth
        # action-only baseline: after an affordance error the LLM is asked again at most this many
        # times, then the episode fails (None: the error only makes the next step a cycle)
        self.affordance_retries = affordance_retries
        self.previous_tasks: dict[str, bool] = {}

    def applicable(self, task: str, env: EnvKnowledge, stack: list[str]) -> list[tuple[Production, str]]:
        ctx = MatchContext(task, env, self.world_knowledge)
        found = []
        for production in self.productions:
            try:
                binding = first_match(production, ctx)
            except (UnknownStatement, RuleError) as exc:
                log.debug("production %s not applicable: %s", production.name, exc)
                continue
            if binding is None:
                continue
            effect = apply(production, binding)
            if effect.startswith(SUBTASK) and any(name_equal(effect[len(SUBTASK):], t) for t in stack):
                continue  # never recurse into a task already on the stack
            found.append((production, effect))
        return found

    def run(self, task: str) -> Episode:
        stack = [Frame(task)]
        run = _Progress()
        while stack and run.steps < self.max_steps:
            frame = stack[-1]
            env = self.world.knowledge()
            env.previous_tasks = dict(self.previous_tasks)
            key = env.state_key(frame.task)
            cycle = False
            if frame.graph is None:
                frame.graph = TransitionGraph(key)
            if frame.pending is not None:
                cycle = frame.graph.add(frame.pending[0], key, frame.pending[1])
                frame.pending = None
            names = [f.task for f in stack]
            chosen = self._choose(frame, env, key, names, self.applicable(frame.task, env, names), cycle, run)
            if chosen is None:
                run.outcome = "failed"
                break
            effect, purpose, source = chosen
            run.steps += 1
            frame.taken.setdefault(key, []).append(effect)
            item = HistoryItem(run.steps, frame.task, effect, purpose, source or "llm")
            run.history.append(item)
            run.last_error = ""
            if not self._follow(effect, item, stack, key, source, run):
                break
        self.productions.flush()
        return Episode(task, run.outcome, run.steps, run.llm, run.used, run.learned, run.history)

    def _choose(self, frame: Frame, env: EnvKnowledge, key: str, names: list[str],
                candidates: list[tuple[Production, str]], cycle: bool,
                run: _Progress) -> tuple[str, str, str | None] | None:
        """The next effect, what it is for, and the production it came from (None: the LLM's own
        option): a production that applies, drawn by utility, unless the task is going round in
        a cycle; otherwise the LLM's advice (a production it proposed is learned here). None
        when the LLM gave no advice."""
        if candidates and not cycle:
            production, effect = sample(candidates, [p.utility for p, _ in candidates], self.rng)
            run.used += 1
            return effect, production.english or production.describe(), production.name
        if self.advisor is None:
            return QUIT, "no production applies and no LLM to ask", None
        reason = "cycle" if cycle and candidates else ("affordance_error" if run.last_error else "no_production")
        blacklist = [SUBTASK + t for t in names]
        if cycle:
            blacklist += frame.taken.get(key, [])
        decision = Decision(frame.task, env, list(run.history), [MOTOR + o for o in self.world.motor_options()],
                            blacklist, reason, self.world_knowledge)
        run.llm += 1
        advice = self.advisor.advise(decision)
        if advice is None:
            return None
        source = None
        if advice.production is not None:
            # passed its replay check here: this step is its first application
            added = self.productions.add(advice.production)
            run.learned.append(added.name)
            source = added.name
        return normalize_effect(advice.option), advice.purpose, source

    def _follow(self, effect: str, item: HistoryItem, stack: list[Frame], key: str, source: str | None,
                run: _Progress) -> bool:
        """Carry out one effect on the task stack or in the world; False when the run ends in
        failure (more affordance errors in a row than allowed)."""
        frame = stack[-1]
        if effect in (DONE, QUIT):
            if effect == DONE:
                assert frame.graph is not None  # made when the frame was first visited
                frame.graph.add(key, DONE_NODE, source)
                self._reward(frame.graph)
            self.previous_tasks[frame.task] = effect == DONE
            stack.pop()
            if not stack:
                run.outcome = "done" if effect == DONE else "quit"
            return True
        frame.pending = (key, source)
        if effect.startswith(SUBTASK):
            sub = effect[len(SUBTASK):].strip()
            if len(stack) >= self.max_depth or any(name_equal(sub, f.task) for f in stack):
                item.error = run.last_error = f"cannot attend to {sub!r} (stack depth or recursion)"
            else:
                stack.append(Frame(sub))
        elif effect.startswith(MOTOR):
            error = self.world.execute(effect[len(MOTOR):])
            if not error:
                run.errors_in_row = 0
                return True
            item.error = run.last_error = error
            run.errors_in_row += 1
            if self.affordance_retries is not None and run.errors_in_row > self.affordance_retries:
                run.outcome = "failed"
                return False
        else:
            item.error = run.last_error = f"unknown effect {effect!r}"
        return True

    def _reward(self, graph: TransitionGraph) -> None:
        path = graph.shortest_path()
        if path is None:
            return
        for name, delta_t in path_rewards(path):
            production = self.productions.get(name)
            if production is None:
                continue
            production.utility, production.count = updated_utility(
                production.utility, production.count, delta_t, self.gamma)
            self.productions.changed(production)
