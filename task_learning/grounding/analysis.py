"""Internal simulation of using a goal sentence (the STARS paper §4.2 and appendix B.4).

Stages, each stopping the analysis when it finds mismatches (a sentence gets the mismatches of the
first stage that fails, as the paper's agent classifies each response under one kind):
1. language, words: a word outside the vocabulary -> unknown_word ("No. Unknown word started.")
2. language, grammar: known words that do not form goal clauses -> uninterpretable
3. situation: a noun with no perceived object -> ungrounded_object ("No. Cannot see a cabinet.")
4. embodiment/affordance: an object moved that is not grabbable ("No. Rack is not grabbable."),
   a destination that is not a receptacle/surface, a state the object cannot have ("empty" needs
   fillable) -> affordance_mismatch
5. the object in context: a goal asked for object X must be about X (one of its literals names
   X), else wrong_object ("No. The goal must be about the cheese.") -- not in the paper, whose
   analysis never met a model answering about another object; without it such an answer became
   a viable goal for every object it was asked about.
A sentence with no mismatch is viable and comes with its goal literals on object ids.

Grounding a singular noun when several objects could be meant (documented rule):
  a. the object in context, if the noun can name it ("the steak knife" while the steak knife on
     the table is in context means that very knife);
  b. objects a subject modifier allows ("the steak knife on the counter");
  c. among the rest, one that affords the role the clause gives it (a grabbable object to move,
     a receptacle to put into, an openable object to close): the one the goal would use;
  d. then the noun's preferred type, visible before unseen, nearest, lowest id number.
  The same noun (with the same modifier) names the same object throughout one sentence.
Plural nouns ("the mugs", "all the forks") ground to every matching object.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from task_learning.errors import UnknownObjectError
from task_learning.grounding.knowledge import GroundingKnowledge
from task_learning.grounding.lexicon import NounEntry
from task_learning.grounding.parser import (
    NounPhrase,
    ParsedClause,
    ParseError,
    clean_text,
    parse,
    tokenize,
    unknown_words,
)
from task_learning.grounding.world_index import StateIndex, object_order
from task_learning.types import GoalLiteral, Mismatch, MismatchKind, Truth, WorldObject, WorldState

logger = logging.getLogger(__name__)

UNINTERPRETABLE_FEEDBACK = "No. Could not understand. Rephrase."
# The affordance each role in a clause needs.
ROLE_AFFORDANCE = {"move": "grabbable", "inside": "receptacle", "on": "surface"}


@dataclass
class ClauseAnalysis:
    """One goal clause as understood and grounded."""

    text: str
    kind: str  # location | state
    subjects: list[str] = field(default_factory=list)  # object ids
    predicate: str = ""  # inside | on for location clauses
    destination: str = ""  # object id
    states: list[str] = field(default_factory=list)  # "closed", "not open"

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "subjects": list(self.subjects),
                "predicate": self.predicate, "destination": self.destination,
                "states": list(self.states)}


@dataclass
class GoalAnalysis:
    """The verdict on one goal sentence: viable, or the mismatches that make it unusable."""

    sentence: str
    viable: bool
    mismatches: list[Mismatch] = field(default_factory=list)
    literals: list[GoalLiteral] = field(default_factory=list)
    clauses: list[ClauseAnalysis] = field(default_factory=list)
    groundings: dict[str, list[str]] = field(default_factory=dict)  # noun phrase -> object ids

    @property
    def feedback(self) -> str:
        """What the robot answers to this response in a repair prompt ("Ok." when viable)."""
        return self.mismatches[0].feedback if self.mismatches else "Ok."

    @property
    def kind(self) -> MismatchKind | None:
        return self.mismatches[0].kind if self.mismatches else None

    def to_dict(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "viable": self.viable,
                "mismatches": [m.to_dict() for m in self.mismatches],
                "literals": [lit.to_dict() for lit in self.literals],
                "clauses": [c.to_dict() for c in self.clauses],
                "groundings": {k: list(v) for k, v in self.groundings.items()}}


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def _sentence_case(detail: str) -> str:
    return f"No. {detail[:1].upper()}{detail[1:]}."


def _failed(sentence: str, mismatches: list[Mismatch]) -> GoalAnalysis:
    for m in mismatches:
        logger.debug("%r: %s %s", sentence, m.kind.value, m.detail)
    return GoalAnalysis(sentence=sentence, viable=False, mismatches=mismatches)


def uninterpretable(sentence: str, detail: str, subject: str = "") -> GoalAnalysis:
    return _failed(sentence, [Mismatch(MismatchKind.UNINTERPRETABLE, detail,
                                       UNINTERPRETABLE_FEEDBACK, subject)])


def wrong_object(context: WorldObject) -> Mismatch:
    """The goal does not mention the object it was asked for; the feedback names that object."""
    from task_learning.world.catalog import spoken_name

    noun = spoken_name(context.object_type)
    return Mismatch(MismatchKind.WRONG_OBJECT, f"the goal says nothing about the {noun} "
                    f"({context.object_id}) it was asked for",
                    f"No. The goal must be about the {noun}.", noun)


class _Grounder:
    """Grounds the noun phrases of one sentence against one state index."""

    def __init__(self, index: StateIndex, context: WorldObject | None) -> None:
        self.index = index
        self.context = context
        # (phrase, plural, (preposition, modifier's entry) or None) -> its entry and the objects chosen
        self.bindings: dict[tuple[str, bool, tuple[str, str] | None], tuple[NounEntry, list[WorldObject]]] = {}
        self.ungrounded: list[Mismatch] = []
        self.groundings: dict[str, list[str]] = {}
        self.entries: dict[int, NounEntry] = {}  # id(phrase) -> the reading that grounded it

    def head(self, phrase: NounPhrase) -> str:
        """The word the robot uses for this phrase in feedback ("rack" for "dish rack")."""
        return self.entries.get(id(phrase), phrase.form.entry).head

    def types(self, phrase: NounPhrase) -> tuple[str, ...]:
        return self.entries.get(id(phrase), phrase.form.entry).types

    def ground(self, phrase: NounPhrase, role: str | None,
               modifier: tuple[str, NounPhrase] | None = None) -> list[WorldObject]:
        mod_key = (modifier[0], modifier[1].form.entry.name) if modifier else None
        key = (phrase.text, phrase.plural, mod_key)
        if key in self.bindings:  # the same noun names the same object throughout the sentence
            self.entries[id(phrase)], chosen = self.bindings[key]
            return chosen
        entry, plural, candidates = phrase.form.entry, phrase.plural, []
        for form, form_plural in phrase.readings():
            candidates = self.index.objects_for(form.entry.types, form.entry.name)
            if candidates:
                entry, plural = form.entry, form_plural
                break
        self.entries[id(phrase)] = entry
        described = phrase.text
        if modifier is not None and candidates:
            places = self.ground(modifier[1], None)
            if not places:
                self.bindings[key] = (entry, [])
                return []
            place_ids = {p.object_id for p in places}
            candidates = [c for c in candidates if place_ids.intersection(c.parent_receptacles)]
            described = f"{phrase.text} {modifier[0] if modifier[0] == 'on' else 'in'} the " \
                        f"{modifier[1].text}"
        if not candidates:
            self._report_ungrounded(phrase, described)
            chosen = []
        elif plural:
            chosen = candidates
        else:
            chosen = [self._choose(candidates, entry.types, role)]
        self.bindings[key] = (entry, chosen)
        self.groundings[described] = [o.object_id for o in chosen]
        return chosen

    def _report_ungrounded(self, phrase: NounPhrase, described: str) -> None:
        if phrase.plural:
            feedback = f"No. Cannot see any {described}."
        else:
            feedback = f"No. Cannot see {_article(described)} {described}."
        if any(m.feedback == feedback for m in self.ungrounded):
            return
        self.ungrounded.append(Mismatch(MismatchKind.UNGROUNDED_OBJECT,
                                        f"ungrounded object {described}", feedback, phrase.text))

    def _choose(self, candidates: list[WorldObject], types: tuple[str, ...],
                role: str | None) -> WorldObject:
        if self.context is not None and any(c is self.context for c in candidates):
            return self.context
        pool = candidates
        needed = ROLE_AFFORDANCE.get(role or "", role)
        if needed:
            able = [c for c in candidates if needed in self.index.affordances(c)]
            pool = able or candidates
        rank = {t: i for i, t in enumerate(types)}
        return min(pool, key=lambda o: (rank.get(o.object_type, len(rank)), object_order(o)))


def _check_affordances(index: StateIndex, grounder: "_Grounder", clause: ParsedClause,
                       subjects: list[WorldObject], destination: WorldObject | None) -> list[Mismatch]:
    found: list[Mismatch] = []

    def add(detail: str, subject: str) -> None:
        if all(m.detail != detail for m in found):
            found.append(Mismatch(MismatchKind.AFFORDANCE_MISMATCH, detail, _sentence_case(detail),
                                  subject))

    for obj in subjects:
        head = _head_for(obj, clause.subjects, grounder)
        affordances = index.affordances(obj)
        if clause.kind == "location":
            assert destination is not None and clause.destination is not None
            if obj is destination:
                add(f"{head} cannot be {'on' if clause.predicate == 'on' else 'in'} itself", head)
            elif "grabbable" not in affordances:
                add(f"{head} is not grabbable", head)
        else:
            for state, _negated in clause.states:
                if state.needs not in affordances:
                    add(f"{head} cannot have property {state.word}", state.word)
    if clause.kind == "location" and destination is not None and clause.destination is not None:
        needed = ROLE_AFFORDANCE[clause.predicate]
        if needed not in index.affordances(destination):
            head = grounder.head(clause.destination)
            add(f"{head} is not {_article(needed)} {needed}", head)
    return found


def _head_for(obj: WorldObject, phrases: list[NounPhrase], grounder: "_Grounder") -> str:
    """The feedback word for a subject object: the head of the noun phrase that named it."""
    for phrase in phrases[1:]:
        if obj.object_type in grounder.types(phrase):
            return grounder.head(phrase)
    return grounder.head(phrases[0])


def _contradictions(literals: list[GoalLiteral]) -> str:
    """A reason the literals cannot all hold at once, or ''."""
    truth: dict[tuple[str, tuple[str, ...]], Truth] = {}
    place: dict[str, str] = {}
    for lit in literals:
        key = (lit.predicate, lit.args)
        if truth.get(key, lit.truth) is not lit.truth:
            return f"{lit.predicate}({', '.join(lit.args)}) is asked both true and false"
        truth[key] = lit.truth
        if lit.predicate in ("inside", "on") and lit.truth is Truth.TRUE:
            where = place.setdefault(lit.args[0], lit.args[1])
            if where != lit.args[1]:
                return f"{lit.args[0]} cannot be both in/on {where} and {lit.args[1]}"
    return ""


def analyze_goal(sentence: str, state: WorldState, context_object_id: str | None = None,
                 knowledge: GroundingKnowledge | None = None) -> GoalAnalysis:
    """Would the robot understand, ground and achieve this goal sentence here and now?

    `context_object_id` is the task object the sentence is about ("Mug|1", the mug in the dish
    rack); it decides which of several same-typed objects a noun means. Raises UnknownObjectError
    when that id is not in `state`; any sentence (empty, huge, non-ASCII...) gets a verdict.
    """
    knowledge = knowledge or GroundingKnowledge.load()
    index = knowledge.index(state)
    context = None
    if context_object_id:
        context = index.by_id.get(context_object_id)
        if context is None:
            raise UnknownObjectError(f"context object {context_object_id!r} is not in the world "
                                     f"state of scene {state.scene!r}")
    if not isinstance(sentence, str):
        # A goal parsed from generated text may carry a non-string: checked, not trusted.
        return uninterpretable(str(sentence), f"not a sentence: {type(sentence).__name__}")  # type: ignore[unreachable]
    lexicon, grammar = knowledge.lexicon, knowledge.grammar

    # 1. words
    try:
        tokens = tokenize(clean_text(sentence, grammar))
    except ParseError as exc:
        return uninterpretable(sentence, exc.detail, exc.subject)
    unknown = unknown_words(tokens, lambda w: w in lexicon.known_words or w in index.extra_words)
    if unknown:
        return _failed(sentence, [Mismatch(MismatchKind.UNKNOWN_WORD, f"unknown word {w}",
                                           f"No. Unknown word {w}.", w) for w in unknown])
    # 2. grammar
    try:
        parsed = parse(tokens, lexicon, grammar, index.extra_forms)
    except ParseError as exc:
        return uninterpretable(sentence, exc.detail, exc.subject)

    # 3. grounding
    grounder = _Grounder(index, context)
    grounded = _ground_clauses(sentence, parsed, grounder)
    if isinstance(grounded, GoalAnalysis):
        return grounded
    if grounder.ungrounded:
        return _failed(sentence, grounder.ungrounded)

    # 4. affordances
    mismatches: list[Mismatch] = []
    for clause, subjects, destination in grounded:
        for m in _check_affordances(index, grounder, clause, subjects, destination):
            if all(m.detail != other.detail for other in mismatches):
                mismatches.append(m)
    if mismatches:
        return _failed(sentence, mismatches)

    # 5. the goal's literals
    literals, clauses = _literals(grounded)
    reason = _contradictions(literals)
    if reason:
        return uninterpretable(sentence, f"contradictory goal: {reason}")
    if context is not None and not any(context.object_id in lit.args for lit in literals):
        return _failed(sentence, [wrong_object(context)])
    return GoalAnalysis(sentence=sentence, viable=True, literals=literals, clauses=clauses,
                        groundings=grounder.groundings)


Grounded = list[tuple[ParsedClause, list[WorldObject], WorldObject | None]]  # clause, subjects, destination


def _ground_clauses(sentence: str, parsed: Sequence[ParsedClause], grounder: _Grounder) -> Grounded | GoalAnalysis:
    """Each clause's subjects and destination as objects of the world (what could not be grounded
    is left in `grounder.ungrounded`); the verdict when a clause asks the impossible."""
    grounded: Grounded = []
    for clause in parsed:
        subject_role = "move" if clause.kind == "location" else (
            clause.states[0][0].needs if clause.states else None)
        subjects: list[WorldObject] = []
        for phrase in clause.subjects:
            for obj in grounder.ground(phrase, subject_role, clause.modifier):
                if obj not in subjects:
                    subjects.append(obj)
        destination = None
        if clause.destination is not None:
            found = grounder.ground(clause.destination, clause.predicate)
            destination = found[0] if found else None
            if clause.destination.plural and len(found) > 1:
                return uninterpretable(sentence, f"cannot put objects in several "
                                       f"{clause.destination.text} at once", clause.destination.text)
        grounded.append((clause, subjects, destination))
    return grounded


def _literals(grounded: Grounded) -> tuple[list[GoalLiteral], list[ClauseAnalysis]]:
    """The goal's literals (without repeats) and each clause's analysis."""
    literals: list[GoalLiteral] = []
    clauses: list[ClauseAnalysis] = []
    for clause, subjects, destination in grounded:
        ids = [o.object_id for o in subjects]
        if clause.kind == "location":
            assert destination is not None
            for object_id in ids:
                literals.append(GoalLiteral(clause.predicate, (object_id, destination.object_id)))
            clauses.append(ClauseAnalysis(clause.text, "location", ids, clause.predicate,
                                          destination.object_id))
        else:
            for state_word, negated in clause.states:
                truth = state_word.truth != negated
                for object_id in ids:
                    literals.append(GoalLiteral(state_word.predicate, (object_id,),
                                                Truth.TRUE if truth else Truth.FALSE))
            clauses.append(ClauseAnalysis(clause.text, "state", ids, states=[
                ("not " if negated else "") + s.word for s, negated in clause.states]))
    return list(dict.fromkeys(literals)), clauses
