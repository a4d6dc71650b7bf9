"""Selection engines: which candidate to try next.

* `HeuristicEngine`: deterministic, no LLM. Prefers untried actions of the first unmet goal,
  actions whose effects do not already hold, actions about the object the blocked action needs
  (open the container that holds it), the deepest resolution, and actions nothing blocks now.
* `LLMEngine`: the BCR paper's prompt through `LLMClient` (prompt_type "bcr_selection"), a fresh
  conversation per decision; an answer outside the list is asked again with a warning, up to 5
  times. Then, and on an LLM error, mode `guarded` lets the heuristic decide (the note says so);
  mode `paper` has no fallback: the selection reports `invalid_answer` or `llm_error` and the
  trial ends there. With `state_notes` (a callable returning LLM-State's current state text,
  e.g. `LatestState.render`), every prompt also shows the open state (see bcr/prompt.py).
  `answers="bounded"` (a base model's: llm/answer_bounds.py) asks for one line after
  "Selected action:" instead of the `$$` format; `transcript` keeps every answer and what became
  of it (the first MAX_TRANSCRIPT).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from task_learning.bcr.agent import MODES, DecisionContext, Selection, SelectionEngine
from task_learning.bcr.domain import GroundAction
from task_learning.bcr.literals import holds
from task_learning.bcr.prompt import build_request, match_candidate, parse_answer
from task_learning.bcr.tree import Candidate
from task_learning.errors import ConfigError
from task_learning.llm.answer_bounds import bound_for
from task_learning.types import GoalLiteral, Truth

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient

log = logging.getLogger(__name__)

MAX_REASKS = 5
MAX_TRANSCRIPT = 500  # answers kept per engine (a node's engine lives long: the first ones only)
ENGINES = ("heuristic", "llm")


class HeuristicEngine:
    """Deterministic ranking of the candidates (see module doc)."""

    name = "heuristic"

    def select(self, context: DecisionContext) -> Selection:
        best = max(enumerate(context.candidates),
                   key=lambda item: self._score(item[1], item[0], context))[1]
        return Selection(best.action, note="heuristic")

    def rank(self, context: DecisionContext) -> list[Candidate]:
        scored = sorted(enumerate(context.candidates),
                        key=lambda item: self._score(item[1], item[0], context), reverse=True)
        return [c for _, c in scored]

    def _score(self, cand: Candidate, index: int, context: DecisionContext) -> tuple[bool, int, float, int, bool, int]:
        untried = cand.action not in context.dead_here
        worth = _usefulness(cand.action, context) + _relevance(cand, context)
        free = context.domain.check_blocking(cand.action, context.state) is None
        return (untried, -cand.goal_index, worth, cand.depth, free, -index)


def _usefulness(action: GroundAction, context: DecisionContext) -> float:
    """1 when some definite effect does not hold yet, 0.5 when only a possible one may still
    help, 0 when trying it can change nothing the effects describe."""
    schema = context.domain.actions[action.schema]
    binding = dict(zip(schema.param_names, action.args))
    definite_open = possible_open = False
    for effect in schema.effects:
        if "*" in effect.args:
            possible_open = True
            continue
        literal = GoalLiteral(effect.predicate, tuple(binding.get(a, a) for a in effect.args),
                              effect.truth)
        if holds(literal, context.state):
            continue
        if effect.truth in (Truth.TRUE, Truth.FALSE):
            definite_open = True
        else:
            possible_open = True
    return 1.0 if definite_open else (0.5 if possible_open else 0.0)


def _relevance(cand: Candidate, context: DecisionContext) -> float:
    """How directly a resolution serves the action it resolves: acting on the same object, or
    opening the container the needed object is in."""
    parent = cand.parent_action
    if parent is None:
        return 0.0
    target = parent.args[0] if parent.args else ""
    if cand.action.schema == "OpenObject" and cand.action.args[0] in context.state.parents(target):
        return 2.0
    if target and target in cand.action.args:
        return 1.0
    return 0.0


class LLMEngine:
    """The paper's selection engine over the project's LLM client."""

    name = "llm"

    def __init__(self, client: LLMClient, max_reasks: int = MAX_REASKS, scope: str = "bcr",
                 fallback: HeuristicEngine | None = None, mode: str = "guarded",
                 state_notes: Callable[[], str] | None = None, answers: str = "paper",
                 decoding: str = "free") -> None:
        if mode not in MODES:
            raise ConfigError(None, "mode", f"unknown BCR mode {mode!r} (expected one of {', '.join(MODES)})")
        self.client = client
        self.max_reasks = max_reasks
        self.scope = scope
        self.mode = mode
        self.state_notes = state_notes  # LLM-State's state text, read afresh for each decision
        self.answers = answers  # paper | bounded (a base model's answers: llm/answer_bounds.py)
        self.grounded = decoding == "grounded"  # the answer constrained to the candidates
        # Every answer the model gave, in order, with what became of it (shown by `bcr --json`)
        self.transcript: list[dict[str, Any]] = []
        self.fallback: HeuristicEngine | None = None if mode == "paper" else (fallback or HeuristicEngine())

    def select(self, context: DecisionContext) -> Selection:
        texts = context.texts
        errors = list(context.errors)
        requests = 0
        last_prompt = ""
        notes = self.state_notes() if self.state_notes is not None else ""
        bound = bound_for("bcr_selection", self.answers)
        allowed = live_choices(context) if self.grounded else None
        for attempt in range(self.max_reasks + 1):
            request = build_request(context.goals, context.completed, texts, context.history,
                                    errors, scope=self.scope, mode=self.mode, state_notes=notes,
                                    answers=self.answers, grounded=self.grounded, allowed=allowed)
            last_prompt = request.messages[0][1] if request.messages else request.prompt
            response = self.client.complete(request)
            requests += 1
            if not response.ok:
                if self.fallback is None:
                    return _no_choice(context, requests, attempt, "llm_error",
                                      f"LLM error: {response.error}", last_prompt)
                log.warning("BCR selection: LLM call failed (%s); heuristic decides",
                            response.error)
                chosen = self.fallback.select(context)
                chosen.requests, chosen.reasks = requests, attempt
                chosen.note = f"llm error: {response.error}; heuristic"
                chosen.prompt = last_prompt
                return chosen
            answer = parse_answer(bound.answer(response.text) if bound else response.text, self.answers)
            match = match_candidate(answer, texts)
            if len(self.transcript) < MAX_TRANSCRIPT:
                self.transcript.append({"candidates": len(texts), "attempt": attempt + 1,
                                        "answer": response.text[:300], "read": answer, "accepted": match})
            if match is not None:
                action = context.candidates[texts.index(match)].action
                return Selection(action, requests=requests, reasks=attempt, note="llm",
                                 prompt=last_prompt)
            shown = answer if answer is not None else response.text.strip()[:120]
            errors.append(f"Your last choice '{shown}' was not in the list of candidate actions."
                          " Read the list carefully and copy one action exactly.")
            log.debug("BCR selection: %r is not a candidate (attempt %d)", shown, attempt + 1)
        if self.fallback is None:
            return _no_choice(context, requests, self.max_reasks, "invalid_answer",
                              f"no answer from the candidate list after {self.max_reasks} re-asks",
                              last_prompt)
        chosen = self.fallback.select(context)
        chosen.requests, chosen.reasks = requests, self.max_reasks
        chosen.note = f"no valid answer after {self.max_reasks} re-asks; heuristic"
        chosen.prompt = last_prompt
        return chosen


def live_choices(context: DecisionContext) -> list[str]:
    """What grounded decoding lets the model choose: the candidates whose retry in this very
    state can change something (`DecisionContext.dead_here`: not one already done or failed here,
    nor one blocked here whose resolutions were all tried here); every candidate when none is.
    Measured (apple_in_fridge, 2026-12-02): constrained to every candidate, the model chose
    NavigateToObject(Fridge|1) again and again in front of the fridge, each time "ok" with nothing
    changed, then the put failed again, to the 100-action cap. The same state gives the same
    result, in any mode: the prompt still lists every candidate, as the paper's does."""
    live = [c.text for c in context.candidates if c.action not in context.dead_here]
    return live or list(context.texts)


def _no_choice(context: DecisionContext, requests: int, reasks: int, kind: str, note: str,
               prompt: str) -> Selection:
    """Paper mode: the engine could not choose; the agent ends the trial with `kind`."""
    return Selection(context.candidates[0].action, requests=requests, reasks=reasks, note=note,
                     prompt=prompt, failure=kind)


def make_engine(name: str, client: LLMClient | None = None, **options: Any) -> SelectionEngine:
    """'heuristic' or 'llm' (needs an LLMClient; option mode='guarded'|'paper')."""
    if name == "heuristic":
        return HeuristicEngine()
    if name == "llm":
        if client is None:
            raise ConfigError(None, "engine", "the llm engine needs an LLM client (--llm)")
        return LLMEngine(client, **options)
    raise ConfigError(None, "engine", f"unknown selection engine {name!r} "
                      f"(expected one of {', '.join(ENGINES)})")
