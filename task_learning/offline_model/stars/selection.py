"""Selection: pick the best numbered goal option by the offline model's judgement weights.

Each option is read back into its parts (destination, second clause); its rating is the
category's judgement weight for the destination in this starting place under the user context,
a little higher when its second clause completes the destination naturally (closing a door,
turning the dishwasher on), a little lower for any other second clause. Ties go to the later option, like a model leaning to the last.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from task_learning.inputs.names import normalize_name
from task_learning.llm.base import TokenLogprob
from task_learning.offline_model.stars.goals import parse_goal
from task_learning.offline_model.stars.knowledge import Knowledge

UNKNOWN_RATING = 0.05
COMPLETE_BONUS = 1.15
OTHER_CLAUSE = 0.85


def _completes(parts, knowledge: Knowledge) -> bool:
    """A second clause a person finds natural: closing an openable destination, or the state a
    model most often says of that destination ("the dishwasher is turned on"). The judge is a
    person-like reader: it does not know which words this robot can use."""
    if parts.clause_kind != "dest_state":
        return False
    place = knowledge.place(parts.dest)
    if parts.clause_state == "closed" and place.kind == "openable":
        return True
    return bool(place.states) and parts.clause_state == max(place.states, key=lambda state: place.states[state])


@dataclass(frozen=True)
class SelectionAnswer:
    index: int  # 1-based
    ratings: tuple[float, ...]


def rate_options(options: list[str], object_name: str, object_place: str,
                 system_context: tuple[str, ...], knowledge: Knowledge) -> SelectionAnswer:
    profile = knowledge.profile(object_name or "object", object_place, system_context)
    ratings = []
    for option in options:
        parts = parse_goal(str(option), object_name)
        if parts is None:
            ratings.append(UNKNOWN_RATING * 0.5)
            continue
        rating = profile.judgement.get(normalize_name(parts.dest), UNKNOWN_RATING)
        if parts.clause_kind:
            rating *= COMPLETE_BONUS if _completes(parts, knowledge) else OTHER_CLAUSE
        ratings.append(rating)
    best = max(range(len(ratings)), key=lambda i: (ratings[i], i))
    return SelectionAnswer(best + 1, tuple(ratings))


def answer_tokens(answer: SelectionAnswer, leading_space: bool, top_k: int) -> list[TokenLogprob]:
    """The integer as one token, alternatives = the other option numbers by rating (sharpened)."""
    weights = [max(r, 1e-6) ** 4 for r in answer.ratings]
    total = sum(weights)
    pad = " " if leading_space else ""
    dist = {f"{pad}{i + 1}": w / total * 0.98 for i, w in enumerate(weights)}
    chosen = f"{pad}{answer.index}"
    order = {t: i for i, t in enumerate(dist)}
    ranked = sorted(dist.items(), key=lambda kv: (kv[0] != chosen, -kv[1], -order[kv[0]]))
    top = tuple((t, math.log(p)) for t, p in ranked[:top_k]) if top_k else ()
    if top_k and chosen not in {t for t, _ in top}:
        top = ((chosen, math.log(dist[chosen])),) + top[: top_k - 1]
    return [TokenLogprob(chosen, math.log(dist[chosen]), top)]
