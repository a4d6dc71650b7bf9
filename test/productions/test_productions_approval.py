"""Operator approval of new productions (issue 18, build item 4): one yes/no question per task
family; only an operator's yes approves; a no, a timeout, a description or a dead operator
approves nothing, and the planner then uses none of those productions."""
from __future__ import annotations

import pytest

from task_learning.errors import TaskLearningError
from task_learning.kb import KnowledgeBase
from task_learning.offline_model.productions import load_teacher
from task_learning.oversight.operator import ScriptedOperator
from task_learning.productions.approval import ask_approval, unapproved_families
from task_learning.productions.memory import persistent_set
from task_learning.productions.planning import reacher_from_kb
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest


@pytest.fixture
def kb(tmp_path):
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb:
        stored = persistent_set(kb)
        for strategy in load_teacher().strategies:
            stored.add(strategy.rule)
        yield kb


def _approval(kb: KnowledgeBase) -> dict[str, str]:
    return {row["name"]: row["approval"] for row in kb.productions()}


def test_a_yes_approves_one_family_and_a_no_or_a_timeout_approves_nothing(kb) -> None:
    families = list(unapproved_families(kb))
    assert len(families) >= 3
    operator = ScriptedOperator(["no", "yes", "timeout", "put it somewhere"])
    report = ask_approval(kb, operator, timeout_s=30.0)
    assert report.questions == len(families) == len(operator.asked)
    assert all(r.timeout_s == 30.0 and r.question.endswith(".") for r in operator.asked)
    assert families[1] in operator.asked[1].question
    approval = _approval(kb)
    yes = {row["name"] for row in kb.productions() if row["task"] == families[1]}
    assert yes and set(report.approved) == yes
    assert all(approval[n] == "operator" for n in yes)
    assert all(a == "none" for n, a in approval.items() if n not in yes)
    assert set(report.refused) == set(approval) - yes
    reacher = reacher_from_kb(kb)
    assert reacher is not None and {p.name for p in reacher.productions} == yes
    # Asked again next time: only the families still unapproved.
    again = ScriptedOperator([])
    ask_approval(kb, again)
    assert len(again.asked) == len(families) - 1 and all(r.object_description != f"rules for '{families[1]}'" for r in again.asked)


class DeadOperator:
    name = "dead"

    def __init__(self) -> None:
        self.asked = 0

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self.asked += 1
        raise TaskLearningError("the oversight node went away")


class TimeoutSaysYes:
    """A confused operator port: a "yes" stamped as nobody's (the safe-default path)."""

    name = "timeout"

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        return ConfirmationAnswer(request.request_id, AnswerKind.YES, "", "timeout", 0.0)


def test_a_dead_operator_or_an_answer_nobody_gave_approves_nothing(kb) -> None:
    dead = DeadOperator()
    report = ask_approval(kb, dead)
    assert dead.asked == 1 and not report.approved and set(report.refused) == set(_approval(kb))
    assert "could not be asked" in report.messages[-1]
    ask_approval(kb, TimeoutSaysYes())
    assert set(_approval(kb).values()) == {"none"} and reacher_from_kb(kb) is None


def test_nothing_to_ask_when_every_production_is_approved(kb) -> None:
    for name in _approval(kb):
        kb.approve_production(name, "operator")
    operator = ScriptedOperator([])
    assert ask_approval(kb, operator).questions == 0 and not operator.asked
