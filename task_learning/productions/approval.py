"""Operator approval of new productions (the bootstrapped-productions paper on a robot): before the planner uses productions
nobody approved, it asks the operator, one yes/no question per task family, through the same
Operator port as goal confirmation (on the ROS graph: the oversight node's Confirm service).

Only an operator's "yes" approves (recorded as approval "operator" in the knowledge base, as
`task-learning kb approve` does). A "no", a timeout (the oversight node's safe default), a
description instead of an answer, or an operator who cannot be asked approves nothing; the
productions stay unapproved and are asked about again before a later task.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from task_learning.errors import TaskLearningError
from task_learning.kb.store import KnowledgeBase
from task_learning.oversight.operator import TIMEOUT_OPERATOR, Operator
from task_learning.productions.language import MOTOR, RuleError, production_from_dict, variables_in
from task_learning.types import AnswerKind, ConfirmationRequest

log = logging.getLogger(__name__)

MAX_RULES_SHOWN = 12  # rules listed in one question (a family rarely has more)


@dataclass
class ApprovalReport:
    approved: list[str] = field(default_factory=list)  # production names
    refused: list[str] = field(default_factory=list)  # "no", timeout or no operator
    questions: int = 0
    messages: list[str] = field(default_factory=list)


def unapproved_families(kb: KnowledgeBase) -> dict[str, list[dict[str, Any]]]:
    """Productions nobody approved, by task family (the rule's task pattern), in stored order."""
    families: dict[str, list[dict[str, Any]]] = {}
    for row in kb.productions():
        if row["approval"] == "none":
            families.setdefault(str(row["task"]), []).append(row)
    return families


def rule_summary(row: dict[str, Any]) -> str:
    """What a stored production does, from the rule itself: its effect, what each of the
    effect's variables is (the conditions that bind it: which object, which receptacle), the
    whole rule, and its utility. Never its English description or name: those are text an
    import (or an LLM) wrote, and a rule that puts the butter in the garbage can may describe
    itself as "put it carefully in the receptacle the operator asked for"."""
    try:
        rule = production_from_dict(row["rule"], where="rule")
    except RuleError as exc:
        return f"an invalid rule that is never used ({exc})"
    effect = rule.effect
    if effect.startswith(MOTOR):
        effect = effect[len(MOTOR):]
    roles = []
    for var in dict.fromkeys(variables_in(rule.effect)):
        binding = [str(c) for c in rule.conditions if c.pred != "none" and not c.negated
                   and any(var in a.variables() for a in c.args)]
        in_task = f"<{var}>" in rule.task
        said = ([f"named by the task '{rule.task}'"] if in_task else []) + binding
        roles.append(f"<{var}>: {' and '.join(said) or 'unbound'}")
    where = f" where {'; '.join(roles)}" if roles else ""
    return (f"{effect}{where} [utility {float(row['utility']):.2f}, applied {int(row['count'])} times; "
            f"rule: {rule.describe()}]")


def approval_question(family: str, rows: list[dict[str, Any]]) -> str:
    shown = [f"{i}. {rule_summary(row)}" for i, row in enumerate(rows[:MAX_RULES_SHOWN], 1)]
    more = f" (and {len(rows) - MAX_RULES_SHOWN} more)" if len(rows) > MAX_RULES_SHOWN else ""
    return (f"The robot has {len(rows)} rule(s) nobody approved for the task '{family}'{more}. May it use "
            f"them to act without asking a language model? What each does: " + " ".join(shown) + ".")


def ask_approval(kb: KnowledgeBase, operator: Operator, *, timeout_s: float = 0.0) -> ApprovalReport:
    """Ask the operator about every family with unapproved productions; record each "yes"."""
    report = ApprovalReport()
    for family, rows in unapproved_families(kb).items():
        names = [str(row["name"]) for row in rows]
        request = ConfirmationRequest(request_id=f"productions-{uuid.uuid4().hex[:12]}",
                                      question=approval_question(family, rows),
                                      object_description=f"rules for '{family}'", timeout_s=timeout_s)
        report.questions += 1
        try:
            answer = operator.ask(request)
        except TaskLearningError as exc:  # a dead operator: nothing approved, nothing more asked
            report.refused = [str(r["name"]) for rs in unapproved_families(kb).values() for r in rs]
            report.messages.append(f"the operator could not be asked: {exc}")
            log.warning("productions not approved: the operator could not be asked (%s)", exc)
            return report
        if answer.answer is AnswerKind.YES and answer.operator != TIMEOUT_OPERATOR:
            for name in names:
                kb.approve_production(name, "operator")
            report.approved.extend(names)
            report.messages.append(f"'{family}': approved by the operator")
        else:
            report.refused.extend(names)
            why = "no answer in time" if answer.answer is AnswerKind.TIMEOUT else f"answer {answer.answer.value!r}"
            report.messages.append(f"'{family}': not approved ({why})")
        log.info("productions for %r: %s", family, report.messages[-1])
    return report
