"""The BCR loop (the BCR paper §III-B): pick a candidate, try it, grow or shrink the tree.

`BCRAgent.next_action(metadata, last_outcome)` is the whole interface: it books the outcome of
the action it proposed last (success: the action and its siblings leave the tree; failure: the
simulator's error text becomes the blocking condition, verbatim), then selects until it finds an
action that no blocking condition stops in the current state, and returns it for execution.
Blocking conditions visible in the state (not holding, not near, closed...) are found without
running anything; each such try still counts as one of the 100 actions, as in the paper.

Two modes:
* `paper` (the BCR paper as published): every resolution of a blocking condition joins the tree, a
  repeated action is simply tried again, an engine that cannot answer ends the trial. Its
  failures are what the paper saw: loops of repeated actions that run into the 100-action cap.
* `guarded` (this project's extension, the default for robots): loops are caught by remembering
  which actions were tried in which state: the same action in the same state gives the same
  result, so a repeat is not executed; its resolutions are offered again minus those already
  tried in this state, or it is pruned. The LLM engine falls back to the heuristic.

Every failure has a kind (`failure_kind`): loop, max_actions, no_candidates, llm_error,
invalid_answer.
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from task_learning.bcr.domain import Domain, GroundAction
from task_learning.bcr.literals import StateSignature, StateView, holds, literal_text
from task_learning.bcr.tree import Candidate, CandidateTree
from task_learning.types import ActionCall, ActionOutcome, GoalLiteral

log = logging.getLogger(__name__)

MAX_ACTIONS = 100
HISTORY_LEN = 5
MODES = ("guarded", "paper")
# A trial that hits the action cap after trying one action this often in one unchanged state
# was looping (the paper's failure), not merely slow.
LOOP_REPEATS = 3
MAX_ERRORS_KEPT = 20  # errors handed to the engines (the prompt shows the latest few)


@dataclass
class DecisionContext:
    """Everything a selection engine may use for one decision."""

    goals: list[GoalLiteral]  # remaining, in order
    completed: list[GoalLiteral]
    candidates: list[Candidate]
    history: list[str]  # last actions, oldest first, with their outcome
    errors: list[str]  # blocking conditions and simulator errors met so far (latest last)
    state: StateView
    domain: Domain
    tried_here: Any  # set-like: actions already tried in this very state
    dead_fn: Any = None  # computes `dead_here` on demand (only the heuristic needs it)

    @functools.cached_property
    def dead_here(self) -> set[GroundAction]:
        """Actions whose retry in this state cannot help (see BCRAgent._dead)."""
        return set(self.dead_fn()) if self.dead_fn is not None else set()

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.candidates]


@dataclass
class Selection:
    action: GroundAction
    requests: int = 0  # LLM requests made
    reasks: int = 0  # answers outside the list that were asked again
    note: str = ""
    prompt: str = ""
    failure: str = ""  # llm_error | invalid_answer: the engine could not choose (paper mode)


class SelectionEngine(Protocol):
    name: str

    def select(self, context: DecisionContext) -> Selection:
        ...


@dataclass
class StepRecord:
    """One selected action and what came of it."""

    action: str
    outcome: str  # executed | blocked | loop | failed
    detail: str = ""
    candidates: int = 0
    requests: int = 0


@dataclass
class AgentStats:
    actions: int = 0  # selected actions tried (blocked, executed or caught as a loop)
    decisions: int = 0
    candidates_per_decision: list[int] = field(default_factory=list)
    llm_requests: int = 0
    reasks: int = 0
    loops_broken: int = 0
    overhead_s: list[float] = field(default_factory=list)  # per decision, LLM time excluded


class BCRAgent:
    """Selects actions for one task (a list of goal literals worked in order)."""

    def __init__(self, domain: Domain, goals: list[GoalLiteral], engine: SelectionEngine,
                 max_actions: int = MAX_ACTIONS, mode: str = "guarded") -> None:
        if not goals:
            raise ValueError("BCR needs at least one goal literal")
        if mode not in MODES:
            raise ValueError(f"unknown BCR mode {mode!r} (expected one of {', '.join(MODES)})")
        self.mode = mode
        self.guarded = mode == "guarded"
        self.domain = domain
        self.goals = list(goals)
        self.engine = engine
        self.max_actions = max_actions
        self.tree = CandidateTree()
        self.stats = AgentStats()
        self.log: list[StepRecord] = []
        self.errors: list[str] = []
        self.history: list[str] = []
        self.status = "running"  # running | success | failure
        self.failure = ""
        self.failure_kind = ""  # loop | max_actions | no_candidates | llm_error | invalid_answer
        self._repeats: dict[tuple[StateSignature, GroundAction], int] = {}
        # state signature -> {action: outcome kind}; a repeat in the same state is a loop
        self._tried: dict[StateSignature, dict[GroundAction, str]] = {}
        self._pending: tuple[GroundAction, StateSignature, int] | None = None  # proposed, not reported
        self._last_condition: dict[tuple[StateSignature, GroundAction], list[GroundAction]] = {}
        self._retried: set[tuple[StateSignature, GroundAction]] = set()  # see _retry_once
        # actions the world refused here with an error a blocking condition reads ("too far
        # away"): what made them fail may be what the state summary does not show
        self._failed_in_world: set[tuple[StateSignature, GroundAction]] = set()

    # ---- public ------------------------------------------------------------------------------
    def remaining(self, state: StateView) -> list[GoalLiteral]:
        return [g for g in self.goals if not holds(g, state)]

    def next_action(self, metadata: Mapping[str, Any],
                    last: ActionOutcome | None = None) -> tuple[GroundAction, ActionCall] | None:
        """Book `last` (the outcome of the previously proposed action, in the world now described
        by `metadata`), then return the next action to execute, or None when the task is over
        (`status` says success or failure)."""
        state = StateView(metadata)
        if self._pending is not None:
            self._book(last, state)
        while self.status == "running":
            started = time.perf_counter()
            remaining = self.remaining(state)
            if not remaining:
                self.status = "success"
                break
            if self.stats.actions >= self.max_actions:
                looping = max(self._repeats.values(), default=0) >= LOOP_REPEATS
                self._fail(f"reached the {self.max_actions}-action limit"
                           + (" repeating actions in an unchanged state" if looping else ""),
                           "loop" if looping else "max_actions")
                break
            signature = self._signature(state)
            self._sync_goals(remaining, state, signature)
            candidates = self.tree.candidates()
            if not candidates:
                self._fail("no candidate action left for: "
                           + ", ".join(literal_text(g) for g in remaining), "no_candidates")
                break
            tried = self._tried.setdefault(signature, {})
            context = DecisionContext(
                goals=remaining, completed=[g for g in self.goals if g not in remaining],
                candidates=candidates, history=self.history[-HISTORY_LEN:],
                errors=self.errors[-MAX_ERRORS_KEPT:], state=state, domain=self.domain,
                tried_here=tried.keys(), dead_fn=functools.partial(self._dead, signature, tried))
            self.stats.overhead_s.append(time.perf_counter() - started)
            if len(candidates) == 1:
                selection = Selection(candidates[0].action, note="only candidate")
            else:
                selection = self.engine.select(context)
            self.stats.decisions += 1
            self.stats.candidates_per_decision.append(len(candidates))
            self.stats.llm_requests += selection.requests
            self.stats.reasks += selection.reasks
            if selection.failure:
                self._fail(selection.note or selection.failure, selection.failure)
                break
            self.stats.actions += 1
            action = selection.action
            chosen = next((c for c in candidates if c.action == action), candidates[0])
            action = chosen.action  # an engine naming a non-candidate gets the first one
            self.tree.mark_selected(chosen.node)
            repeat_key = (signature, action)
            self._repeats[repeat_key] = self._repeats.get(repeat_key, 0) + 1
            if action in tried and self.guarded and not self._retry_once(signature, action, tried):
                self._break_loop(chosen, signature, tried, state, len(candidates))
                continue
            blocked = self.domain.check_blocking(action, state)
            if blocked is not None:
                tried[action] = "blocked"
                self._last_condition[(signature, action)] = blocked.actions
                self._apply_block(chosen, blocked.condition, blocked.description, blocked.actions,
                                  self._exclude(tried), len(candidates), selection.requests)
                continue
            call = self.domain.call_for(action)
            self._pending = (action, signature, len(candidates))
            return action, call
        return None

    def to_dot(self, peak: bool = False) -> str:
        """The tree now (or at its largest: `peak`) in Graphviz DOT."""
        tree = self.tree.peak() if peak else self.tree
        return tree.to_dot(" & ".join(literal_text(g) for g in self.goals))

    # ---- internals ---------------------------------------------------------------------------
    def _book(self, last: ActionOutcome | None, state: StateView) -> None:
        assert self._pending is not None, "nothing proposed to book against"
        action, signature, n_candidates = self._pending
        self._pending = None
        tried = self._tried.setdefault(signature, {})
        nodes = self.tree.nodes_for(action)
        if last is None or last.success:
            tried[action] = "success"
            for node in nodes:
                if node in self.tree.graph:
                    self.tree.succeed(node)
            self._record(action, "executed", "", n_candidates)
            return
        error = last.error_message or last.blocking_condition or "action failed"
        tried[action] = "failed"
        blocked = self.domain.check_blocking(action, state, error_text=error)
        if blocked is not None and nodes:
            tried[action] = "blocked"
            self._failed_in_world.add((signature, action))
            self._last_condition[(signature, action)] = blocked.actions
            self._apply_block_node(nodes[0], blocked.condition, error, blocked.actions,
                                   self._exclude(self._tried.setdefault(self._signature(state), {})))
            self._record(action, "failed", error, n_candidates)
            self.errors.append(f"{action} failed: {error}")
        else:
            self.errors.append(f"{action} failed: {error}")
            self._record(action, "failed", error, n_candidates)

    def _apply_block(self, cand: Candidate, condition: str, description: str,
                     resolutions: list[GroundAction], exclude: set[GroundAction],
                     n_candidates: int, requests: int) -> None:
        self._apply_block_node(cand.node, condition, description, resolutions, exclude)
        self.errors.append(description)
        self._record(cand.action, "blocked", description, n_candidates, requests)

    def _apply_block_node(self, node: int, condition: str, description: str,
                          resolutions: list[GroundAction], exclude: set[GroundAction]) -> None:
        fresh = [a for a in resolutions if a not in exclude]
        added = self.tree.block(node, condition, description, fresh)
        if not added:
            self.tree.prune(node, f"{condition}: no untried resolution")

    def _dead(self, signature: StateSignature, tried: dict[GroundAction, str]) -> set[GroundAction]:
        """Actions whose retry in this state is a pure loop: they succeeded or failed here
        already, or were blocked here with every resolution already tried here."""
        dead = set()
        for action, outcome in tried.items():
            if outcome != "blocked":
                dead.add(action)
                continue
            resolutions = self._last_condition.get((signature, action)) or []
            if all(r in tried for r in resolutions):
                dead.add(action)
        return dead

    def _retry_once(self, signature: StateSignature, action: GroundAction, tried: dict[GroundAction, str]) -> bool:
        """True (once per action and state) when the world refused `action` here with an error
        a blocking condition reads and one of its resolutions has since succeeded here. The state summary does not see everything a
        resolution changes: a robot that drove to the fridge's handle from where it put the
        butter in is "at the fridge" before and after, yet can now reach the handle. Without
        this retry the blocked action would count as a loop and the goal would fail."""
        if (signature, action) not in self._failed_in_world or (signature, action) in self._retried:
            return False
        resolutions = self._last_condition.get((signature, action)) or []
        if not any(tried.get(r) == "success" for r in resolutions):
            return False
        self._retried.add((signature, action))
        return True

    def _break_loop(self, cand: Candidate, signature: StateSignature, tried: dict[GroundAction, str],
                    state: StateView, n_candidates: int) -> None:
        """The chosen action was already tried in this exact state: its result is known. Offer
        its untried resolutions again, or drop it."""
        self.stats.loops_broken += 1
        previous = tried[cand.action]
        note = (f"{cand.action} was already tried in this situation ({previous}); "
                "repeating it changes nothing")
        log.debug("loop: %s", note)
        self.errors.append(note)
        resolutions = self._last_condition.get((signature, cand.action))
        if previous == "blocked" and resolutions:
            fresh = [a for a in resolutions if a not in tried]
            if fresh:
                self.tree.block(cand.node, "loop", note, fresh)
                self._record(cand.action, "loop", note, n_candidates)
                return
        self.tree.prune(cand.node, "loop")
        self._record(cand.action, "loop", note, n_candidates)

    def _sync_goals(self, remaining: list[GoalLiteral], state: StateView,
                    signature: StateSignature) -> None:
        for goal in list(self.tree.goals):
            if goal not in remaining:
                self.tree.remove_goal(goal)
        tried = self._exclude(self._tried.get(signature, {}))
        for goal in remaining:
            node = self.tree.add_goal(goal, self.goals.index(goal))
            if not self.tree.children(node):
                roots = [a for a in self.domain.achievers(goal, state) if a not in tried]
                self.tree.add_children(node, roots)

    def _signature(self, state: StateView) -> StateSignature:
        """State summary over the objects the task talks about (tree and goal objects), so the
        cost does not grow with the size of the scene."""
        ids: set[str] = set(state.held)
        for goal in self.goals:
            for arg in goal.args:
                ids.update(state.expand(arg))
        for _, data in self.tree.graph.nodes(data=True):
            action = data.get("action")
            if action is not None:
                ids.update(action.args)
        for oid in list(ids):  # what is in them: a hidden or cleared view shows there
            ids.update(state.contents(oid))
        return state.signature(ids)

    def _record(self, action: GroundAction, outcome: str, detail: str, n_candidates: int,
                requests: int = 0) -> None:
        self.log.append(StepRecord(str(action), outcome, detail, n_candidates, requests))
        tag = {"executed": "ok", "blocked": "blocked", "failed": "failed", "loop": "loop"}[outcome]
        self.history.append(f"{action} -> {tag}")

    def _exclude(self, tried: Mapping[GroundAction, str]) -> set[GroundAction]:
        """Actions kept out of the tree in this state: those tried here (guarded), none (paper:
        all resolutions)."""
        return set(tried) if self.guarded else set()

    def _fail(self, reason: str, kind: str) -> None:
        self.status = "failure"
        self.failure = reason
        self.failure_kind = kind
        log.info("BCR failed (%s): %s", kind, reason)
