"""The finite set of goal sentences the offline model can say for one object, with probabilities.

A goal request is answered by decoding token by token from this set (decoder.py): the probability
of a next token is the probability mass of the sentences that continue the text so far with it.
Because the set depends only on the request's context (object, place, user context, repair
feedback) and never on the prefix, a request whose prefix is any prefix of an earlier answer
continues that answer exactly, as the Search Tree expects of a real model at temperature 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable

from task_learning.inputs.names import normalize_name
from task_learning.llm.tokens import split_tokens
from task_learning.offline_model.hashing import unit_hash
from task_learning.offline_model.stars.goals import ParsedGoal
from task_learning.offline_model.stars.knowledge import Knowledge, ObjectProfile

if TYPE_CHECKING:
    from task_learning.offline_model.stars.feedback import Avoidance


@dataclass(frozen=True)
class GoalQuery:
    """The facts of a goal request the offline model uses (from LLMRequest.context)."""

    task: str
    location: str
    object: str
    object_place: str
    object_relation: str
    prefix: str = ""
    repair_of: str = ""
    feedback: str = ""
    system_context: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sentence:
    """A sentence body (without its end token) as GPT-like tokens, its probability and parts.
    `text` and `ends` (the character offset where each token ends) are derived once."""

    tokens: tuple[str, ...]
    prob: float
    parts: ParsedGoal
    text: str = field(init=False, compare=False)
    ends: tuple[int, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", "".join(self.tokens))
        ends, pos = [], 0
        for token in self.tokens:
            pos += len(token)
            ends.append(pos)
        object.__setattr__(self, "ends", tuple(ends))


def tokenize(text: str) -> list[str]:
    """The sentence as cl100k_base tokens, with the leading space a completion after "(RESULT)"
    starts with (" The", " goal", ..., " dish", "washer")."""
    return split_tokens(" " + " ".join(text.split()))


def build_sentences(query: GoalQuery, knowledge: Knowledge, avoid: "Avoidance | None" = None) -> list[Sentence]:
    """Every sentence the model may say for this query, probabilities summing to 1 (after the
    feedback's exclusions, renormalised). Unknown objects get the generic category's answers."""
    profile = knowledge.profile(query.object or "object", query.object_place, query.system_context)
    if avoid is not None:
        profile = _repair_profile(profile, avoid, knowledge)
    sentences = list(_enumerate(query, knowledge, profile))
    if avoid is not None:
        sentences = [s for s in sentences if avoid.allows(s.parts)]
    merged: dict[tuple[str, ...], Sentence] = {}
    for s in sentences:
        prev = merged.get(s.tokens)
        merged[s.tokens] = s if prev is None else Sentence(s.tokens, prev.prob + s.prob, prev.parts)
    power = knowledge.language.repair_sharpness if avoid is not None else 1.0
    weighted = [(s, s.prob ** power) for s in merged.values()]
    total = sum(w for _, w in weighted)
    if total <= 0:
        return []
    return [Sentence(s.tokens, w / total, s.parts) for s, w in weighted]


def _repair_profile(profile: ObjectProfile, avoid: "Avoidance", knowledge: Knowledge) -> ObjectProfile:
    """Told its answer was rejected, a model looks further afield: destination weights are
    flattened (less likely places come up) and the rejected answer's own destination drops."""
    lang = knowledge.language
    rejected_dest = avoid.rejected.dest if avoid.rejected is not None else ""
    weights = {}
    for dest, w in profile.completion.items():
        w = w ** lang.repair_flatten
        if dest == rejected_dest:
            w *= lang.repair_rejected_factor
        weights[dest] = w
    total = sum(weights.values()) or 1.0
    return replace(profile, completion={d: w / total for d, w in weights.items()})


def _enumerate(query: GoalQuery, knowledge: Knowledge, profile: ObjectProfile) -> Iterable[Sentence]:
    lang = knowledge.language
    obj = normalize_name(query.object) or "object"
    start = normalize_name(query.object_place)
    be = "are" if profile.plural else "is"
    head = f"{lang.opening} the {obj} {be}"
    for verb_token, w_verb in profile.verbs.items():
        verb = verb_token.strip()
        for dest, w_dest in profile.completion.items():
            place = knowledge.place(dest)
            clause1 = f"{head} {verb} {place.relation} the {dest}" if verb else f"{head} {place.relation} the {dest}"
            p1 = w_verb * w_dest
            conj = place.conjunction if place.conjunction is not None else lang.conjunction[place.kind]
            u = 2.0 * unit_hash("conj", obj, start, dest) - 1.0
            conj = min(0.97, max(0.02, conj * math.exp(lang.jitter_conjunction * u)))
            base = ParsedGoal(verb, place.relation, dest)
            yield Sentence(tuple(tokenize(clause1)), p1 * (1.0 - conj), base)
            kinds = dict(lang.second_clause[place.kind])
            if not start or start == dest:
                kinds.pop("start_state", None)
                kinds.pop("start_moved", None)
            elif knowledge.place(knowledge.language.canonical_place(start)).kind == "surface":
                kinds.pop("start_moved", None)
            kind_total = sum(kinds.values())
            if kind_total <= 0:
                continue
            for kind, w_kind in kinds.items():
                p_kind = p1 * conj * w_kind / kind_total
                for subject, state, w_state in _second_clauses(kind, dest, start, knowledge):
                    if kind == "start_moved":
                        text = f"{clause1} and the {subject} {_be(subject, knowledge)} in the {state}"
                    else:
                        text = f"{clause1} and the {subject} {_be(subject, knowledge)} {state}"
                    parts = ParsedGoal(verb, place.relation, dest, kind, subject, state)
                    yield Sentence(tuple(tokenize(text)), p_kind * w_state, parts)


def _be(subject: str, knowledge: Knowledge) -> str:
    return "are" if knowledge.is_plural(subject) else "is"


def _second_clauses(kind: str, dest: str, start: str, knowledge: Knowledge):
    if kind == "dest_state":
        states = knowledge.place(dest).states
        total = sum(states.values()) or 1.0
        for state, w in states.items():
            yield dest, state, w / total
    elif kind == "start_state":
        states = knowledge.start_states(start)
        total = sum(states.values()) or 1.0
        for state, w in states.items():
            yield start, state, w / total
    elif kind == "start_moved":
        yield start, dest, 1.0


# ------------------------------------------------------------------ parsing sentences back
