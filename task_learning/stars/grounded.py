"""STARS under `--decoding grounded`: the Search Tree inside the goals the robot can ground, and
SayCan-style scoring of every one of them.

The goal prompt is the paper's (config/prompts/goal.yaml). What changes is what the model may
write: one of the object's grounded goals (grounding/goal_space.py), sent to the server as a
grammar (llm/constraints.py). The tree starts where those goals start to differ (the shared
" The goal is that the yogurt is" goes with the prompt, so its tokens cost no decoding) and
follows every alternative token above `alternative_above` that some grounded goal continues, to
any depth: the grammar bounds the tree, so every grounded goal the model gives a probability is
reached, each prefix asked once (the server's prefix cache serves the shared prompt).

Scoring (SayCan: the language model's probability of a skill times its feasibility): each goal's
probability under the constraint, the product of its tokens' probabilities (`normalise: sum` of
log probabilities) or their geometric mean (`mean`), times a feasibility term from the robot's
analysis (1 for a viable goal, 0 otherwise), normalised over the goals found. That is the goal's
`score`, so the highest score (ST, STAR), Selection's order (STARS) and the operator's proposals
(+O) all follow it; `distribution` sums it by place ("fridge 0.61, pantry 0.22, ...").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from task_learning.grounding.goal_space import GroundedGoal, grounded_goals
from task_learning.llm.base import LLMRequest
from task_learning.llm.constraints import Constraint
from task_learning.stars.tree import TreeRoot, TreeSettings, TreeState, normalize_response
from task_learning.types import GoalCandidate, WorldState


@dataclass(frozen=True)
class GroundedSettings:
    """goal.yaml `grounded:` (fixed before the held-out scenes were run: docs/llm.md)."""

    logprobs: int = 20  # token alternatives per position: the places compete at one position
    alternative_above: float = 0.001  # an alternative this likely or less is not followed
    max_depth: int = 12  # tree levels (the grammar ends every branch well before)
    normalise: str = "sum"  # sum: product of token probabilities; mean: their geometric mean
    # decisive: one token per request, asked only where the goals part (`decisive_steps`);
    # paths: the Search Tree's requests, each written on until one goal is left (stars/tree.py)
    search: str = "decisive"
    # raw: the alternatives' probabilities before the grammar (llama.cpp's top `logprobs` of the
    # whole vocabulary: an allowed token outside them gets no share); constrained: the
    # distribution under the grammar, every allowed token renormalised (llm/constraints.py
    # `constrained_probabilities`; with `search: decisive` only, one token a request)
    probabilities: str = "raw"

    def tree(self, base: TreeSettings) -> TreeSettings:
        """The tree's settings under the constraint: branch at every token (a grounded goal's
        place is one token among the others), follow every alternative above the floor."""
        return TreeSettings(branch_below=1.0 + 1e-6, alternative_above=self.alternative_above,
                            continue_at_least=0.0, max_depth=self.max_depth,
                            max_requests=base.max_requests, max_workers=base.max_workers)


@dataclass
class GoalSpace:
    """One object's grounded goals as the tree and the server see them."""

    goals: list[GroundedGoal]
    start: str = ""
    choices: tuple[str, ...] = ()
    by_key: dict[str, GroundedGoal] = field(default_factory=dict)  # normalised text -> goal

    @classmethod
    def build(cls, state: WorldState, object_id: str, object_name: str) -> "GoalSpace":
        goals = other_kinds(state, object_id, grounded_goals(state, object_id, object_name))
        choices = tuple(g.text for g in goals)
        return cls(goals, shared_start(choices), choices, {normalize_response(g.text): g for g in goals})

    def allows(self, text: str) -> bool:
        return any(c.startswith(text) for c in self.choices)

    def complete(self, text: str) -> bool:
        return text in self.choices

    def settled(self, text: str) -> str | None:
        """The one goal `text` leaves (None: none or several)."""
        found = [c for c in self.choices if c.startswith(text)]
        return found[0] if len(found) == 1 else None

    def forced(self, head: str, token: str) -> bool:
        """Every goal that continues `head` continues with `token` (" the" after " in"): the
        grammar forces it, so an alternative there is only another spelling of the same goals."""
        found = [c for c in self.choices if c.startswith(head)]
        return bool(found) and bool(token) and all(c.startswith(head + token) for c in found)

    def forced_end(self, text: str) -> str:
        """`text` and the whole words every goal continuing it continues with (" in" -> " in the"):
        the model need not be asked for what the grammar forces (it never counts in a score)."""
        found = [c for c in self.choices if c.startswith(text)]
        if not found:
            return text
        shared = shared_start(found) if len(found) > 1 else found[0]
        if len(found) == 1 or len(shared) <= len(text) or not shared.startswith(text):
            return text
        return shared

    def constraint(self, prefix: str, constrained_probabilities: bool = False) -> Constraint:
        return Constraint(choices=self.choices, after=prefix, stop_when_unique=True,
                          constrained_probabilities=constrained_probabilities)

    def expand(self, text: str) -> str:
        """A text only one goal starts with, as that goal (the server stopped where the rest was
        forced: Constraint.stop_when_unique); any other text as it is."""
        if text in self.choices:
            return text
        found = [c for c in self.choices if c.startswith(text)]
        return found[0] if len(found) == 1 else text

    def root(self, build: Callable[[str, str], LLMRequest], key: str, logprobs: int,
             constrained_probabilities: bool = False, **fields: Any) -> TreeRoot:
        """A tree root whose requests carry the constraint for their prefix (and ask for
        `logprobs` alternatives per token, under the grammar with `constrained_probabilities`)."""
        def constrained(prompt_type: str, prefix: str) -> LLMRequest:
            return replace(build(prompt_type, prefix), constraint=self.constraint(prefix, constrained_probabilities),
                           logprobs=logprobs)

        return TreeRoot(build_request=constrained, key=key, start=self.start, allows=self.allows,
                        complete=self.complete, expand=self.expand, settled=self.settled, forced=self.forced,
                        **fields)


def other_kinds(state: WorldState, object_id: str, goals: Sequence[GroundedGoal]) -> list[GroundedGoal]:
    """The goals whose place is not of a kind the object is in or on now: putting an object away
    moves it to another kind of place (a grocery from its bag to the fridge, not to another bag).
    Decided 2026-12-02 on the papers' scenes only (docs/llm.md: "the bag" was the model's first
    goal for 8 of store_groceries' 15 groceries); the place the object is in was already no goal."""
    by_id = {o.object_id: o for o in state.objects}
    target = by_id.get(object_id)
    kinds = {by_id[p].object_type for p in (target.parent_receptacles if target else ()) if p in by_id}
    return [g for g in goals if g.place_id not in by_id or by_id[g.place_id].object_type not in kinds]


def shared_start(choices: Sequence[str]) -> str:
    """The words every choice starts with (cut at a word's end, so the model still writes the
    first word that differs whole): " The goal is that the eggs are"."""
    if not choices:
        return ""
    first, last = min(choices), max(choices)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    cut = first[:n].rfind(" ")
    return first[:cut] if cut > 0 else ""


@dataclass(frozen=True)
class PlaceShare:
    place_id: str
    name: str
    probability: float

    def to_dict(self) -> dict[str, Any]:
        return {"place": self.place_id, "name": self.name, "p": round(self.probability, 4)}


def score_candidates(candidates: Sequence[GoalCandidate], tree: TreeState, space: GoalSpace,
                     settings: GroundedSettings) -> list[PlaceShare]:
    """Set each candidate's score to its share of the grounded distribution (model probability
    times feasibility, normalised); returns the distribution by place, most likely first."""
    weights: dict[int, float] = {}
    for cand in candidates:
        probs = decisive(tree.paths.get(cand.candidate_id, ()), tree.pieces.get(cand.candidate_id, ()), space)
        feasible = 1.0 if cand.viable else 0.0
        weights[cand.candidate_id] = feasible * _probability(probs, settings.normalise)
    total = sum(weights.values())
    by_place: dict[str, PlaceShare] = {}
    for cand in candidates:
        cand.score = weights[cand.candidate_id] / total if total > 0 else 0.0
        goal = space.by_key.get(cand.text)
        if goal is None or cand.score <= 0:
            continue
        known = by_place.get(goal.place_id)
        by_place[goal.place_id] = PlaceShare(goal.place_id, known.name if known else goal.place_name,
                                             cand.score + (known.probability if known else 0.0))
    return sorted(by_place.values(), key=lambda s: (-s.probability, s.place_id))


def decisive(probs: Sequence[float], pieces: Sequence[str], space: GoalSpace) -> list[float]:
    """The probabilities of the tokens that chose among the grounded goals: a token that leaves
    fewer goals possible than before it (or a sentence end where a longer goal could go on). A
    token every remaining goal continues with was forced by the grammar (" and the fridge is
    closed" once "fridge" is written) and says nothing about the model's choice; llama.cpp reports
    the raw probabilities with a grammar (measured), so such tokens would otherwise count against
    the longer goals. Without token texts (another tree), every token counts."""
    if len(pieces) != len(probs):
        return list(probs)
    kept, text = [], space.start
    for p, piece in zip(probs, pieces):
        before = sum(1 for c in space.choices if c.startswith(text))
        after = sum(1 for c in space.choices if c.startswith(text + piece)) if piece else 1
        if after < before:
            kept.append(p)
        text += piece
    return kept


def one_per_goal(candidates: Sequence[GoalCandidate]) -> list[GoalCandidate]:
    """The viable candidates with one per goal: goals the same literals make ("the fridge", "the
    refrigerator") are one choice for Selection and one question for the operator, the best
    worded of them standing for all with their summed share."""
    best: dict[tuple[str, ...], GoalCandidate] = {}
    share: dict[tuple[str, ...], float] = {}
    for cand in candidates:
        if not cand.viable:
            continue
        key = tuple(sorted(str(lit) for lit in cand.literals))
        share[key] = share.get(key, 0.0) + cand.score
        if key not in best or cand.score > best[key].score:
            best[key] = cand
    return [replace(cand, score=share[key]) for key, cand in best.items()]


def _probability(probs: Sequence[float], normalise: str) -> float:
    if not probs:
        return 0.0
    logs = [math.log(max(p, 1e-300)) for p in probs]
    total = sum(logs)
    return math.exp(total / len(logs) if normalise == "mean" else total)


def place_order(candidates: Sequence[GoalCandidate], paths: Mapping[int, tuple[float, int]],
                normalise: str) -> list[dict[str, Any]]:
    """The places ranked by the viable goals' probabilities normalised `normalise` (sum: the product
    of the decisive tokens' probabilities; mean: their geometric mean), from one tree's `paths`
    (candidate id -> summed log probability, token count): both rankings from the same answers."""
    weights: dict[str, float] = {}
    for cand in candidates:
        logprob, tokens = paths.get(cand.candidate_id, (0.0, 0))
        if not cand.viable or not tokens:
            continue
        place = next((lit.args[1] for lit in cand.literals if lit.predicate in ("inside", "on")), "")
        weights[place] = weights.get(place, 0.0) + math.exp(logprob / tokens if normalise == "mean" else logprob)
    total = sum(weights.values()) or 1.0
    return [{"place": p, "p": round(w / total, 4)} for p, w in sorted(weights.items(), key=lambda item: (-item[1], item[0]))]


def describe_distribution(shares: Sequence[PlaceShare], limit: int = 5) -> str:
    """"fridge 0.61, pantry 0.22, cupboard 0.09" (the most likely places first)."""
    return ", ".join(f"{s.name} {s.probability:.2f}" for s in shares[:limit])
