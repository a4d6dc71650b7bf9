"""A simulated day in the traces' household: a human works through a routine, an ad hoc agent helps.

The human does the routine's tasks in order, each with the planner moving straight where it wants
to be (its moves are not checked, as in the traces; its other actions follow the rules). A task is
done when its goal literals hold. Each step the human and the agent each take at most one action.

Agents:
* "none": the human alone (what the team's steps are measured against);
* "base8": Base8, the LLM choosing every action for the current task (base8.py);
* "proposed": seed 002's agent: anticipate at the start of the day and after each finished task,
  validate, merge with the current task, and plan for all of them (planner.py, adjacent moves);
  with an operator, every anticipated task is proposed first and only confirmed ones are planned
  for ("proposed+O"). The current task (the one the human is doing) is assigned, not anticipated.

Objects another unfinished task of the agent's list needs elsewhere are left alone, and within the
current task the agent works from the last literal backwards (the human starts from the first):
our choices, so the two do not chase the same object."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from task_learning.anticipation.anticipator import AnticipationResult, Anticipator, Completer
from task_learning.anticipation.base8 import Base8Agent
from task_learning.anticipation.config import AnticipationConfig
from task_learning.anticipation.context import parse_context
from task_learning.anticipation.experience import Experience
from task_learning.anticipation.household import Action, Household, HouseholdSpec, Literal, log_line
from task_learning.anticipation.planner import next_action
from task_learning.anticipation.proposals import Proposals
from task_learning.kb.store import KnowledgeBase
from task_learning.oversight.operator import Operator

log = logging.getLogger(__name__)
AGENTS = ("none", "base8", "proposed")
MAX_STEPS = 200


@dataclass
class DayResult:
    day: str
    source: str
    context: str
    routine: list[str]
    agent: str
    steps: int = 0
    finished: bool = False
    done: list[str] = field(default_factory=list)
    anticipations: list[AnticipationResult] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    performed: list[str] = field(default_factory=list)  # anticipated tasks the agent acted for
    llm_calls: int = 0
    tokens: int = 0
    corrections: int = 0
    refused_after_limit: int = 0
    agent_actions: int = 0
    agent_blocked: int = 0  # chosen actions that could not be done (the human got there first)
    unconfirmed_actions: int = 0  # actions for anticipated tasks nobody confirmed: must stay 0 with +O
    log: list[str] = field(default_factory=list)

    def precision_recall(self, which: str = "kept", first_only: bool = False) -> tuple[float | None, float | None]:
        """Anticipated tasks against the true remaining routine when each anticipation was made
        (micro-averaged over the day's anticipations, or the first one only)."""
        found = predicted = wanted = 0
        for a in self.anticipations[:1] if first_only else self.anticipations:
            remaining = [t for t in self.routine if t not in a.done]
            guess = a.kept if which == "kept" else a.proposed
            found += len(set(guess) & set(remaining))
            predicted += len(guess)
            wanted += len(remaining)
        if not self.anticipations:
            return None, None
        return (found / predicted if predicted else None), (found / wanted if wanted else None)

    def issues(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for a in self.anticipations:
            for k, v in a.issues.items():
                total[k] = total.get(k, 0) + v
        return total

    def to_dict(self) -> dict[str, Any]:
        p, r = self.precision_recall()
        p1, r1 = self.precision_recall(first_only=True)
        rp, rr = self.precision_recall("proposed")
        return {
            "day": self.day, "source": self.source, "context": self.context, "routine": self.routine,
            "agent": self.agent, "steps": self.steps, "finished": self.finished, "done": self.done,
            "precision": p, "recall": r, "first_precision": p1, "first_recall": r1,
            "llm_precision": rp, "llm_recall": rr,
            "anticipations": [{"done": a.done, "proposed": a.proposed, "kept": a.kept, "dropped": a.dropped,
                               "issues": a.issues} for a in self.anticipations],
            "asked": self.asked, "confirmed": self.confirmed, "refused": self.refused,
            "performed": self.performed, "llm_calls": self.llm_calls, "tokens": self.tokens,
            "corrections": self.corrections, "refused_after_limit": self.refused_after_limit,
            "agent_actions": self.agent_actions, "agent_blocked": self.agent_blocked,
            "unconfirmed_actions": self.unconfirmed_actions, "issues": self.issues(),
        }


def _avoid_for(task_list: Sequence[str], index: int, goals: dict[str, tuple[Literal, ...]]) -> set[str]:
    """Objects that a task earlier in the list needs somewhere else than task `index` does."""
    mine = {lit.args[0]: lit.args[1] for lit in goals[task_list[index]] if lit.predicate in ("on", "in")}
    avoid = set()
    for earlier in task_list[:index]:
        for lit in goals[earlier]:
            if lit.predicate in ("on", "in") and lit.args[0] in mine and mine[lit.args[0]] != lit.args[1]:
                avoid.add(lit.args[0])
    return avoid


def proposed_action(house: Household, work: Sequence[str], goals: dict[str, tuple[Literal, ...]],
                    agent: str = "agent") -> tuple[Action | None, str]:
    """The proposed agent's action for its work list (current task first) and the task it serves."""
    others = {o for a, held in house.held.items() if a != agent for o in held}
    for i, task in enumerate(work):
        literals = list(goals[task])
        if i == 0:
            literals.reverse()
        action = next_action(house, agent, literals, adjacent_only=True, avoid=others | _avoid_for(work, i, goals))
        if action is not None:
            return action, task
    return None, ""


def run_day(spec: HouseholdSpec, cfg: AnticipationConfig, experience: Experience, day: dict[str, Any], *,
            agent: str = "proposed", client: Completer | None = None, operator: Operator | None = None,
            kb: KnowledgeBase | None = None, seed: int = 0, max_steps: int = MAX_STEPS) -> DayResult:
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r} (expected one of {', '.join(AGENTS)})")
    if agent != "none" and client is None:
        raise ValueError(f"the {agent} agent needs an LLM client")
    ctx = parse_context(str(day["context"]), cfg)
    routine = list(day["tasks"])
    label = agent + ("+O" if operator is not None and agent == "proposed" else "")
    result = DayResult(str(day["name"]), str(day.get("source", "")), ctx.describe(cfg), routine, label)
    goals = spec.task_goals
    house = Household.initial(spec)
    anticipator = Anticipator(client, cfg, experience, agent="agent", seed=seed) if agent == "proposed" and client else None
    base8 = (Base8Agent(client, ctx.describe(cfg), temperature=cfg.temperature, wording=cfg.wording)
             if agent == "base8" and client else None)
    proposals = Proposals(operator, ctx.describe(cfg), kb) if operator is not None and anticipator else None
    work: list[str] = []
    previous: dict[str, str] = {}

    def anticipate() -> None:
        nonlocal work
        current = [t for t in routine if t not in result.done][:1]
        assert anticipator is not None
        res = anticipator.anticipate(ctx, result.done, assigned=current)
        result.anticipations.append(res)
        result.llm_calls += 1
        result.tokens += res.prompt_tokens + res.completion_tokens
        anticipated = [t for t in res.merged if t not in current]
        if proposals is not None:
            anticipated = proposals.confirm_new(anticipated)
        work = current + anticipated

    if anticipator is not None:
        anticipate()
    while len(result.done) < len(routine) and result.steps < max_steps:
        current = next(t for t in routine if t not in result.done)
        if work and work[0] != current:
            work = [current] + [t for t in work if t != current and t not in result.done]
        others = set(house.held["agent"])
        human = next_action(house, "human", list(goals[current]), adjacent_only=False, avoid=others)
        mine: Action | None = None
        serves = current
        if base8 is not None:
            mine = base8.decide(house, current[:1].lower() + current[1:], goals[current], previous)
        elif anticipator is not None:
            mine, serves = proposed_action(house, work or [current], goals)
        if human is not None:
            problem = house.apply("human", human, checked=False)
            if problem is not None:
                log.debug("human: %s not done (%s)", human.text("human"), problem.why)
                human = None
        mine = _agent_acts(house, mine, serves, current, proposals, result)
        result.steps += 1
        result.log.append(log_line({"human": human, "agent": mine}))
        previous = {"human": human.text("human") if human else "none", "agent": mine.text() if mine else "none"}
        if _finish_tasks(house, routine, goals, result) and anticipator is not None and \
                len(result.done) < len(routine):
            anticipate()
    result.finished = len(result.done) == len(routine)
    if base8 is not None:
        result.llm_calls = len(base8.calls)
        result.tokens = sum(c.prompt_tokens + c.completion_tokens for c in base8.calls)
        result.corrections = base8.corrections
        result.refused_after_limit = base8.refused_after_limit
    if proposals is not None:
        result.asked, result.confirmed, result.refused = proposals.asked, proposals.confirmed, proposals.refused
    return result


def _agent_acts(house: Household, mine: Action | None, serves: str, current: str, proposals: Proposals | None,
                result: DayResult) -> Action | None:
    """Apply the agent's action (for `serves`, the current task or one it anticipated); the
    action, or None when it had none or the household blocked it."""
    if mine is None:
        return None
    if serves != current and proposals is not None and serves not in proposals.confirmed:
        result.unconfirmed_actions += 1  # never expected: the work list holds confirmed tasks only
    if house.apply("agent", mine) is not None:
        result.agent_blocked += 1
        return None
    result.agent_actions += 1
    if serves != current and serves not in result.performed:
        result.performed.append(serves)
    return mine


def _finish_tasks(house: Household, routine: list[str], goals: dict[str, tuple[Literal, ...]],
                  result: DayResult) -> bool:
    """Mark the routine's next tasks done while their goals hold; whether any was."""
    finished_one = False
    while len(result.done) < len(routine):
        current = next(t for t in routine if t not in result.done)
        if not all(house.holds(g) for g in goals[current]):
            break
        result.done.append(current)
        finished_one = True
    return finished_one
