"""The robot's long-term memory: learned goals, policies, questions and answers, in SQLite.

`KnowledgeBase` is a façade: the one object callers open, close and pass around, composed of the
database (kb/database.py: the file, its schema and migrations, the atomic write transaction, the
race guard for two processes opening one new file) and one repository per concern
(kb/repositories/: questions and answers, paired operators, goals, policies, productions and world
knowledge, routines, export and import). Its methods hand each call to the repository that owns
it; code that needs one concern only may take that repository (`kb.goals_repo`, ...).

Goals are keyed by (task, context): the context is the object in its gross location as the paper
learns it ("mug in dish rack"), so two mugs in different places learn different goals. Literals are
stored lifted: the object itself becomes `?object` and other arguments their object type, so a
goal learned once grounds again in a world whose ids differ.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from task_learning.kb.database import (  # noqa: F401  (the names callers import from here)
    DEFAULT_BUSY_TIMEOUT_S,
    DEFAULT_DB,
    SCHEMA_VERSION,
    SQLITE_COMPANIONS,
    Database,
    KnowledgeBaseError,
    default_db_path,
    describe_db_error,
    remove_knowledge_base,
    resolve_db_path,
    writer_holds_lock,
)
from task_learning.kb.records import (  # noqa: F401
    MAX_POLICY_ACTIONS,
    OBJECT_VAR,
    POLICY_LEARNED,
    POLICY_UNREVIEWED,
    TIMEOUT_OPERATOR,
    Confirmation,
    ImportCounts,
    LearnedGoal,
    Policy,
    StoredRoutine,
    action_from_dict,
    action_to_dict,
    goal_key,
    ground_lifted,
    lift_literals,
    parse_confirmation,
    parse_goal_key,
    policy_approved_by,
)
from task_learning.kb.repositories.goals import GoalRepository
from task_learning.kb.repositories.operators import OperatorRepository
from task_learning.kb.repositories.policies import PolicyRepository
from task_learning.kb.repositories.productions import ProductionRepository
from task_learning.kb.repositories.questions import QuestionRepository
from task_learning.kb.repositories.routines import RoutineRepository
from task_learning.kb.repositories.transfer import Transfer, check_export_keys, imported_free_text
from task_learning.types import ConfirmationAnswer, ConfirmationRequest, Truth


class KnowledgeBase:
    """Thread-safe access to one knowledge base file (or ":memory:"); see Database for
    `read_only`. `on_change` sees every committed write as (kind, what was written): an episode
    records the changes with their provenance (task_learning.episode); None: nobody watches."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                 read_only: bool = False) -> None:
        self.database = Database(path, busy_timeout_s=busy_timeout_s, read_only=read_only)
        self.questions_repo = QuestionRepository(self.database)
        self.operators_repo = OperatorRepository(self.database)
        self.goals_repo = GoalRepository(self.database)
        self.policies_repo = PolicyRepository(self.database)
        self.productions_repo = ProductionRepository(self.database)
        self.routines_repo = RoutineRepository(self.database)
        self.transfer = Transfer(self.goals_repo, self.policies_repo, self.questions_repo, self.productions_repo,
                                 self.routines_repo)

    @property
    def path(self) -> str:
        return self.database.path

    @property
    def busy_timeout_s(self) -> float:
        return self.database.busy_timeout_s

    @property
    def read_only(self) -> bool:
        return self.database.read_only

    @property
    def on_change(self) -> Callable[[str, dict[str, Any]], None] | None:
        return self.database.on_change

    @on_change.setter
    def on_change(self, observer: Callable[[str, dict[str, Any]], None] | None) -> None:
        self.database.on_change = observer

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- questions (kb/repositories/questions.py) -------------------------------------------------
    def record_question(self, request: ConfirmationRequest, *, task: str = "", context: str = "",
                        asked_by: str = "") -> None:
        return self.questions_repo.record_question(request, task=task, context=context, asked_by=asked_by)

    def record_answer(self, answer: ConfirmationAnswer, *, client: str = "", verified: bool = False,
                      confirmation_id: str = "") -> None:
        return self.questions_repo.record_answer(answer, client=client, verified=verified,
                                                 confirmation_id=confirmation_id)

    def previous_answer(self, *, task: str, question: str, context: str | None = None, asked_by: str = "",
                        object_id: str | None = None, candidate_text: str | None = None) -> ConfirmationAnswer | None:
        return self.questions_repo.previous_answer(task=task, question=question, context=context,
                                                   asked_by=asked_by, object_id=object_id,
                                                   candidate_text=candidate_text)

    def question_log(self) -> list[dict[str, Any]]:
        return self.questions_repo.question_log()

    def answer_history(self, operator: str, limit: int = 20) -> list[dict[str, Any]]:
        return self.questions_repo.answer_history(operator, limit)

    # --- operators (kb/repositories/operators.py) -------------------------------------------------
    def save_operator(self, name: str, verifier: str, created_by: str) -> None:
        return self.operators_repo.save_operator(name, verifier, created_by)

    def operator_verifier(self, name: str) -> str | None:
        return self.operators_repo.operator_verifier(name)

    def operator_by_verifier(self, verifier: str) -> str | None:
        return self.operators_repo.operator_by_verifier(verifier)

    def revoke_operator(self, name: str) -> bool:
        return self.operators_repo.revoke_operator(name)

    def operator_records(self) -> list[dict[str, Any]]:
        return self.operators_repo.operator_records()

    def save_pairing_code(self, code_id: str, verifier: str, name: str, expires_at: float) -> None:
        return self.operators_repo.save_pairing_code(code_id, verifier, name, expires_at)

    def use_pairing_code(self, code_id: str, verifier: str, now: float) -> str | None:
        return self.operators_repo.use_pairing_code(code_id, verifier, now)

    # --- goals (kb/repositories/goals.py) ---------------------------------------------------------
    def learn_goal(self, goal: LearnedGoal) -> None:
        return self.goals_repo.learn_goal(goal)

    def set_confirmation(self, task: str, context: str, confirmation: Confirmation, confirmed_by: dict[str,
                         Any] | None = None) -> bool:
        return self.goals_repo.set_confirmation(task, context, confirmation, confirmed_by)

    def goal_for(self, task: str, context: str) -> LearnedGoal | None:
        return self.goals_repo.goal_for(task, context)

    def goals(self) -> list[LearnedGoal]:
        return self.goals_repo.goals()

    # --- policies (kb/repositories/policies.py) ---------------------------------------------------
    def save_policy(self, policy: Policy) -> None:
        return self.policies_repo.save_policy(policy)

    def policy_for(self, task: str, object_type: str, location: str, goal_key_text: str) -> Policy | None:
        return self.policies_repo.policy_for(task, object_type, location, goal_key_text)

    def policies(self) -> list[Policy]:
        return self.policies_repo.policies()

    # --- productions (kb/repositories/productions.py) ---------------------------------------------
    def save_production(self, record: dict[str, Any]) -> None:
        return self.productions_repo.save_production(record)

    def update_production_utilities(self, updates: list[tuple[str, float, int]]) -> None:
        return self.productions_repo.update_production_utilities(updates)

    def approve_production(self, name: str, approval: str) -> bool:
        return self.productions_repo.approve_production(name, approval)

    def delete_production(self, name: str) -> None:
        return self.productions_repo.delete_production(name)

    def productions(self) -> list[dict[str, Any]]:
        return self.productions_repo.productions()

    def statement_truth(self, statement: str) -> bool | None:
        return self.productions_repo.statement_truth(statement)

    def record_statement(self, statement: str, truth: bool, source: str) -> None:
        return self.productions_repo.record_statement(statement, truth, source)

    def family_end_conditions(self) -> dict[str, str]:
        return self.productions_repo.family_end_conditions()

    def set_family_end_condition(self, family: str, end_condition: str) -> None:
        return self.productions_repo.set_family_end_condition(family, end_condition)

    def statements(self, source: str | None = None) -> dict[str, bool]:
        return self.productions_repo.statements(source)

    def bootstrap_records(self) -> dict[str, dict[str, Any]]:
        return self.productions_repo.bootstrap_records()

    def record_bootstrap(self, family: str, record: dict[str, Any]) -> None:
        return self.productions_repo.record_bootstrap(family, record)

    def import_productions(self, records: list[dict[str, Any]]) -> int:
        return self.productions_repo.import_productions(records)

    # --- routines (kb/repositories/routines.py) ---------------------------------------------------
    def add_routines(self, routines: list[StoredRoutine]) -> list[int]:
        return self.routines_repo.add_routines(routines)

    def routines(self) -> list[StoredRoutine]:
        return self.routines_repo.routines()

    # --- transfer (kb/repositories/transfer.py) ---------------------------------------------------
    def export_dict(self) -> dict[str, Any]:
        return self.transfer.export_dict()

    def import_dict(self, data: dict[str, Any], *, source: str = "<import>", trust_confirmations: bool = False,
                    verify: Callable[[LearnedGoal, str], None] | None = None,
                    verify_routine: Callable[[StoredRoutine, str], None] | None = None,
                    verify_policy: Callable[[Policy, str], None] | None = None) -> ImportCounts:
        return self.transfer.import_dict(data, source=source, trust_confirmations=trust_confirmations,
                                         verify=verify, verify_routine=verify_routine, verify_policy=verify_policy)


__all__ = [
    "Confirmation",
    "parse_confirmation",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "LearnedGoal",
    "Policy",
    "StoredRoutine",
    "ImportCounts",
    "OBJECT_VAR",
    "POLICY_LEARNED",
    "POLICY_UNREVIEWED",
    "policy_approved_by",
    "parse_goal_key",
    "imported_free_text",
    "check_export_keys",
    "lift_literals",
    "ground_lifted",
    "goal_key",
    "Truth",
]
