"""Export and import: a knowledge base as one JSON-able mapping, and the merge of one into
another, all or nothing, trusting nothing the file says about confirmations or reviews."""
from __future__ import annotations

from typing import Any, Callable

from task_learning.kb.database import SCHEMA_VERSION
from task_learning.kb.records import Confirmation, ImportCounts, LearnedGoal, Policy, StoredRoutine
from task_learning.kb.repositories.goals import GoalRepository
from task_learning.kb.repositories.policies import PolicyRepository
from task_learning.kb.repositories.productions import ProductionRepository
from task_learning.kb.repositories.questions import QuestionRepository
from task_learning.kb.repositories.routines import RoutineRepository


class Transfer:
    def __init__(self, goals: GoalRepository, policies: PolicyRepository, questions: QuestionRepository,
                 productions: ProductionRepository, routines: RoutineRepository) -> None:
        self.goals = goals
        self.policies = policies
        self.questions = questions
        self.productions = productions
        self.routines = routines


    def export_dict(self) -> dict[str, Any]:  # its keys: EXPORT_KEYS
        return {
            "schema_version": SCHEMA_VERSION,
            "goals": [g.to_dict() for g in self.goals.goals()],
            "policies": [p.to_dict() for p in self.policies.policies()],
            "questions": self.questions.question_log(),
            "productions": self.productions.productions(),
            "family_end_conditions": self.productions.family_end_conditions(),
            "world_statements": self.productions.statements(),
            "routines": [r.to_dict() for r in self.routines.routines()],
        }

    def import_dict(self, data: dict[str, Any], *, source: str = "<import>",
                    trust_confirmations: bool = False,
                    verify: Callable[[LearnedGoal, str], None] | None = None,
                    verify_routine: Callable[[StoredRoutine, str], None] | None = None,
                    verify_policy: Callable[[Policy, str], None] | None = None) -> ImportCounts:
        """Merge goals, policies and routines (task anticipation's experience) from an export;
        returns how many of each were imported (a routine already stored, the same day with the
        same time, is not added again: importing a file twice does not double the experience the
        validator counts).

        All or nothing: every entry is parsed (and checked by `verify(goal, key)`, which raises
        ConfigError naming the entry, e.g. a goal whose literals do not say what its text says)
        (and every routine by `verify_routine(routine, key)`, every policy by
        `verify_policy(policy, key)`) before anything is written. Confirmations are not taken on
        the file's word: an imported goal is unconfirmed, unless `trust_confirmations`, when a
        goal the file says an operator confirmed is stored as IMPORTED_TRUSTED. An imported policy
        is unreviewed whatever the file or the flag says (replayed only once an operator
        approves it), unless it repeats the actions of the policy already stored for its goal."""
        from task_learning.errors import ConfigError

        check_export_keys(data, source)
        goals, policies = data.get("goals") or [], data.get("policies") or []
        routines = data.get("routines") or []
        for key, value in (("goals", goals), ("policies", policies), ("routines", routines)):
            if not isinstance(value, list):
                raise ConfigError(source, key, f"expected a list, got {type(value).__name__}")
        parsed_goals, parsed_policies = [], []
        for i, item in enumerate(goals):
            try:
                goal = LearnedGoal.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(source, f"goals[{i}]", f"invalid goal: {_problem(exc)}") from None
            claimed = goal.confirmed or (isinstance(item, dict) and item.get("confirmed") is True)
            goal.confirmation = (Confirmation.IMPORTED_TRUSTED if trust_confirmations and claimed
                                 else Confirmation.NONE)
            if verify is not None:
                verify(goal, f"goals[{i}] ({goal.task} | {goal.context})")
            parsed_goals.append(goal)
        for i, item in enumerate(policies):
            try:
                policy = Policy.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(source, f"policies[{i}]", f"invalid policy: {_problem(exc)}") from None
            if verify_policy is not None:
                verify_policy(policy, f"policies[{i}] ({policy.task} | {policy.object_type} in {policy.location})")
            stored_policy = self.policies.policy_for(policy.task, policy.object_type, policy.location, policy.goal_key)
            if stored_policy is not None and stored_policy.actions == policy.actions:
                policy.approval = stored_policy.approval  # nothing new to review
            parsed_policies.append(policy)
        parsed_routines: list[StoredRoutine] = []
        for i, item in enumerate(routines):
            try:
                routine = StoredRoutine.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(source, f"routines[{i}]", f"invalid routine: {_problem(exc)}") from None
            if verify_routine is not None:
                verify_routine(routine, f"routines[{i}]")
            parsed_routines.append(routine)
        stored = self.routines.routines()
        new_routines: list[StoredRoutine] = []
        for routine in parsed_routines:
            if not any(routine.same_day(r) for r in stored + new_routines):
                new_routines.append(routine)
        for goal in parsed_goals:
            self.goals.learn_goal(goal)
        for policy in parsed_policies:
            self.policies.save_policy(policy)
        if new_routines:
            self.routines.add_routines(new_routines)
        return ImportCounts(len(parsed_goals), len(parsed_policies), len(new_routines),
                            sum(1 for p in parsed_policies if not p.reviewed))


EXPORT_KEYS = ("schema_version", "goals", "policies", "questions", "productions", "family_end_conditions",
               "world_statements", "routines")
IMPORTED_KEYS = ("goals", "policies", "routines", "productions")  # what an import takes


def check_export_keys(data: Any, source: str) -> None:
    """ConfigError unless `data` is a mapping whose keys are an export's (EXPORT_KEYS) and that
    holds at least one key an import takes: a file of unknown keys (another program's YAML, a
    typo'd `goal:`) is not an export of nothing, and "imported 0 goals" with exit 0 hid that."""
    import difflib

    from task_learning.errors import ConfigError

    if not isinstance(data, dict):
        raise ConfigError(source, None, "not a knowledge base export: expected a mapping with "
                          f"{', '.join(IMPORTED_KEYS)} (as `task-learning kb export` writes)")
    for key in data:
        if key not in EXPORT_KEYS:
            hint = difflib.get_close_matches(str(key), EXPORT_KEYS, n=1)
            raise ConfigError(source, str(key), "unknown key" + (f" (did you mean '{hint[0]}'?)" if hint
                                                                 else f" (an export has: {', '.join(EXPORT_KEYS)})"))
    if not any(key in data for key in IMPORTED_KEYS):
        raise ConfigError(source, None, f"nothing to import: none of {', '.join(IMPORTED_KEYS)} (not an export of "
                          "`task-learning kb export`?)")


def imported_free_text(data: Any) -> dict[str, int]:
    """What `kb import` leaves out of an export, by kind: world statements and family end
    conditions (import_productions says why)."""
    if not isinstance(data, dict):
        return {}
    counts = {}
    for key in ("world_statements", "family_end_conditions"):
        value = data.get(key)
        counts[key] = len(value) if isinstance(value, (dict, list)) else 0
    return counts


def _problem(exc: Exception) -> str:
    return f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
