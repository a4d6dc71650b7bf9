"""The goals the robot can ground for one object, here and now: the language of `--decoding grounded`.

For an object to put away, every goal sentence of the form the robot's parser reads,
"the goal is that the <object> is|are in the <container> and the <container> is closed" (a
closable container: the completion measure closes what was used), "... is in the <container>"
(one that does not close) or "... is on the <surface>", for every receptacle and surface the robot
perceives, under each of its spoken names and aliases (config/scenes/object_types.yaml). Each
sentence is kept only when the robot's own analysis (`analyze_goal`) finds it viable, about this
object, and not already true: a place the object is in already is no goal.

The texts are written as the model continues the goal prompt after "(RESULT)" (" The goal is that
..."), so they serve as the constraint's choices (llm/constraints.py) and as candidates alike.
These rules were fixed on 2026-12-01 before any held-out scene was run (docs/llm.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from task_learning.grounding.analysis import analyze_goal
from task_learning.grounding.knowledge import GroundingKnowledge
from task_learning.grounding.lexicon import split_words
from task_learning.types import GoalLiteral, Truth, WorldObject, WorldState

OPENING = " The goal is that the"


@dataclass(frozen=True)
class GroundedGoal:
    """One goal the robot can ground: its text as the model writes it, the place it names (the
    object id and the name used) and its literals."""

    text: str
    place_id: str
    place_name: str
    literals: tuple[GoalLiteral, ...]


def grounded_goals(state: WorldState, object_id: str, object_name: str,
                   knowledge: GroundingKnowledge | None = None) -> list[GroundedGoal]:
    """Every grounded goal for `object_id` (named `object_name`, the prompt's spoken name), in the
    order of the scene's objects and their names; [] for an object the robot cannot move."""
    from task_learning.world.catalog import relation_for, type_names

    knowledge = knowledge or GroundingKnowledge.load()
    index = knowledge.index(state)
    target = index.by_id.get(object_id)
    if target is None or "grabbable" not in index.affordances(target):
        return []
    subject = f"{OPENING} {object_name} {_copula(object_name, knowledge)}"
    goals: list[GroundedGoal] = []
    for place in state.objects:
        if place.object_id == object_id:
            continue
        affordances = index.affordances(place)
        if not affordances & {"receptacle", "surface"}:
            continue
        relation = relation_for(place.object_type, place.properties)
        closes = relation == "in" and "openable" in affordances
        for name in sorted(type_names(place.object_type)):
            clause = f"{subject} {relation} the {name}"
            text = f"{clause} and the {name} is closed" if closes else clause
            goal = _checked(text, state, target, place, name, knowledge)
            if goal is not None:
                goals.append(goal)
    return list({g.text: g for g in goals}.values())


def _checked(text: str, state: WorldState, target: WorldObject, place: WorldObject, name: str,
             knowledge: GroundingKnowledge) -> GroundedGoal | None:
    """The goal when the analysis finds it viable, about this place, and not already true."""
    analysis = analyze_goal(text, state, target.object_id, knowledge)
    if not analysis.viable:
        return None
    moves = [lit for lit in analysis.literals if lit.predicate in ("inside", "on") and lit.args[0] == target.object_id]
    if not moves or any(lit.args[1] != place.object_id for lit in moves):
        return None  # the name grounds to another object of the type: that object has its own entry
    if all(_holds(lit, state) for lit in analysis.literals):
        return None
    return GroundedGoal(text, place.object_id, name, tuple(analysis.literals))


def _holds(literal: GoalLiteral, state: WorldState) -> bool:
    """Whether a goal literal is already true in `state` (inside/on by the object's parents,
    open by its flag)."""
    obj = next((o for o in state.objects if o.object_id == literal.args[0]), None)
    if obj is None:
        return False
    if literal.predicate in ("inside", "on"):
        value = literal.args[1] in obj.parent_receptacles
    elif literal.predicate == "open":
        value = bool(obj.properties.get("isOpen"))
    else:
        return False
    return value if literal.truth is Truth.TRUE else not value


def _copula(object_name: str, knowledge: GroundingKnowledge) -> str:
    """'are' when the lexicon reads the object's name as plural ("plastic cups", "eggs")."""
    words = split_words(object_name)
    for form in knowledge.lexicon.forms.get(words[0] if words else "", ()):
        if form.words == words:
            return "are" if form.plural else "is"
    return "are" if words and words[-1].endswith("s") and not words[-1].endswith("ss") else "is"
