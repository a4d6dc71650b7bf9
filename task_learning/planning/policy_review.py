"""Stored policies are reviewed as what they do, before they are replayed.

A policy (executor.py) is a lifted action sequence replayed, with no planning and no question,
whenever its goal comes up again. A knowledge-base export is just a file: a "policy for the
butter" may also pick up the eggs and put them in the garbage can, and the operator who confirmed
"the butter in the fridge, the fridge closed" never saw it. So:

- `policy_problem` refuses, at import and again before any replay, a policy that is not made of
  robot actions (world.action_check) or whose actions touch anything but its own object, the
  place it is taken from, and what its goal names (puts, picks and slices: only the object and
  what the goal names);
- a policy this robot did not learn itself (imported, or from a knowledge base older than the
  approval column) is replayed only after an operator said yes to a question built from the
  actions, grounded in the world it is about to act in: which objects, which receptacles, and
  the state they end in. Nothing in the question comes from the file's text. A no, a timeout or
  an operator who cannot be asked leaves it unused: the executor plans instead, and the plan it
  learns replaces the policy.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from task_learning.kb import OBJECT_VAR, KnowledgeBase, Policy
from task_learning.kb.store import parse_goal_key, policy_approved_by
from task_learning.lifecycle.cancellation import RunStopped
from task_learning.oversight.flow import OversightCounts
from task_learning.oversight.operator import TIMEOUT_OPERATOR, Operator
from task_learning.types import (
    ActionCall,
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    Truth,
)
from task_learning.world.action_check import action_call_problem
from task_learning.world.catalog import relation_for, spoken_name

log = logging.getLogger(__name__)

# Actions that move or change the thing they name: only the policy's own object, or what its goal
# names (PutObject: a receptacle the goal names). The others (go to, look for, open, close,
# switch) may also act on the place the object is taken from.
MOVES = frozenset({"PickupObject", "PutObject", "SliceObject"})


def policy_problem(policy: Policy) -> str:
    """Why this lifted policy must never be replayed (refused on import, skipped at run time),
    or "" when it acts only within its goal."""
    try:
        literals = parse_goal_key(policy.goal_key)
    except ValueError as exc:
        return str(exc)
    named = {arg for lit in literals for arg in lit.args} - {OBJECT_VAR}
    if not policy.actions:
        return "a policy needs at least one action"
    for index, call in enumerate(policy.actions, 1):
        problem = action_call_problem(call)
        if problem:
            return f"action {index} {call}: {problem}"
        target = call.object_id
        if not target or target == OBJECT_VAR:
            if call.action == "PutObject":
                return f"action {index} {call} puts it nowhere its goal ({policy.goal_key}) names"
            continue
        if target in named:
            continue
        if call.action in MOVES:
            return (f"action {index} {call} acts on {target}, which its goal ({policy.goal_key}) does "
                    f"not name: a policy for the {policy.object_type} moves only the {policy.object_type} "
                    f"and what its goal names")
        if target != policy.location:
            return (f"action {index} {call} acts on {target}, which is neither the {policy.object_type}, "
                    f"its place ({policy.location}) nor anything its goal ({policy.goal_key}) names")
    return ""


@dataclass
class PolicyRecipe:
    """A grounded policy as the operator is shown it: its steps in words and the state it leaves."""

    steps: list[str]
    effects: list[GoalLiteral]  # on this world's ids
    effect_words: list[str]


def describe_recipe(calls: Sequence[ActionCall], metadata: Mapping[str, Any]) -> PolicyRecipe:
    """The steps and end state of grounded actions, named from the world's own object types."""
    records = {o["objectId"]: o for o in metadata.get("objects") or []}

    def name(object_id: str) -> str:
        record = records.get(object_id)
        return f"the {spoken_name(record['objectType'])}" if record else f"the object {object_id}"

    steps: list[str] = []
    state: dict[tuple[str, str], tuple[GoalLiteral, str]] = {}  # (predicate family, object) -> last
    held = ""
    for call in calls:
        target = call.object_id
        if call.action == "PickupObject":
            held = target
            steps.append(f"pick up {name(target)}")
        elif call.action == "PutObject":
            record = records.get(target) or {}
            relation = relation_for(str(record.get("objectType", "")), record)
            thing = held or "what it holds"
            steps.append(f"put {name(held) if held else thing} {relation} {name(target)}")
            if held:
                literal = GoalLiteral("inside" if relation == "in" else "on", (held, target))
                state[("place", held)] = (literal, f"{name(held)} {relation} {name(target)}")
            held = ""
        elif call.action == "DropHandObject":
            steps.append(f"drop {name(held)}" if held else "drop what it holds")
            if held:
                state[("place", held)] = (GoalLiteral("holding", (held,), Truth.FALSE),
                                          f"{name(held)} dropped")
            held = ""
        elif call.action in ("OpenObject", "CloseObject"):
            is_open = call.action == "OpenObject"
            steps.append(f"{'open' if is_open else 'close'} {name(target)}")
            state[("open", target)] = (GoalLiteral("open", (target,), Truth.TRUE if is_open else Truth.FALSE),
                                       f"{name(target)} {'open' if is_open else 'closed'}")
        elif call.action in ("ToggleObjectOn", "ToggleObjectOff"):
            on = call.action == "ToggleObjectOn"
            steps.append(f"switch {'on' if on else 'off'} {name(target)}")
            state[("switch", target)] = (GoalLiteral("switched_on", (target,), Truth.TRUE if on else Truth.FALSE),
                                         f"{name(target)} switched {'on' if on else 'off'}")
        elif call.action == "SliceObject":
            steps.append(f"slice {name(target)}")
            state[("slice", target)] = (GoalLiteral("sliced", (target,)), f"{name(target)} sliced")
        elif call.action == "NavigateToObject":
            steps.append(f"go to {name(target)}")
        elif call.action == "VisualSearch":
            steps.append(f"look for {name(target)}" if target else "look around")
        else:  # turns, tilts, Pass, Done: no change to any object
            steps.append(call.action)
    if held:
        state[("place", held)] = (GoalLiteral("holding", (held,)), f"{name(held)} in the robot's hand")
    return PolicyRecipe(steps, [lit for lit, _ in state.values()], [words for _, words in state.values()])


def review_question(object_description: str, recipe: PolicyRecipe) -> str:
    after = "; ".join(recipe.effect_words) or "nothing changed"
    return (f"For the {object_description}, may the robot reuse a stored recipe it did not learn itself "
            f"(imported, or from an older knowledge base)? It would {', then '.join(recipe.steps)}. "
            f"Afterwards: {after}.")


@dataclass
class PolicyVerdict:
    approval: str = ""  # policy_approved_by(operator) on a yes; "" otherwise
    counts: OversightCounts = field(default_factory=OversightCounts)  # the question, for the run's measures


@dataclass
class PolicyReviewer:
    """Puts an unreviewed policy to the operator (one yes/no question built from its grounded
    actions); records the question and answer in `kb` when given (in process; on the ROS graph
    the oversight node does)."""

    operator: Operator
    kb: KnowledgeBase | None = None
    task: str = ""
    timeout_s: float = 0.0

    def __call__(self, policy: Policy, calls: Sequence[ActionCall], *, object_id: str,
                 object_description: str, metadata: Mapping[str, Any]) -> PolicyVerdict:
        """Approved (by whom) or not, and the question asked."""
        verdict = PolicyVerdict()
        recipe = describe_recipe(calls, metadata)
        candidate = GoalCandidate(text="the recipe ends with " + " and ".join(recipe.effect_words), score=1.0,
                                  source=CandidateSource.INITIAL, candidate_id=1, viable=True,
                                  literals=list(recipe.effects))
        request = ConfirmationRequest(request_id=f"policy-{uuid.uuid4().hex[:12]}",
                                      question=review_question(object_description, recipe),
                                      object_id=object_id, object_description=object_description,
                                      candidate=candidate, timeout_s=self.timeout_s)
        if self.kb is not None:
            self.kb.record_question(request, task=self.task, context=object_description)
        try:
            answer = self.operator.ask(request)
        except RunStopped:
            raise
        except Exception as exc:  # noqa: BLE001 - a dead operator approves nothing
            log.warning("stored policy for %s not reviewed: the operator could not be asked (%s)",
                        object_description, exc)
            return verdict
        if not isinstance(answer, ConfirmationAnswer) or answer.request_id != request.request_id:
            log.error("operator returned an answer for another question: %r", answer)
            return verdict
        if self.kb is not None:
            self.kb.record_answer(answer)
        if answer.answer is AnswerKind.TIMEOUT or answer.operator == TIMEOUT_OPERATOR:
            return verdict
        verdict.counts.instructions += 1
        verdict.counts.yes_no += 1
        verdict.counts.words += 1
        if answer.answer is AnswerKind.YES:
            verdict.approval = policy_approved_by(answer.operator or getattr(self.operator, "name", ""))
        log.info("stored policy for %s %s by the operator", object_description,
                 "approved" if verdict.approval else "not approved")
        return verdict
