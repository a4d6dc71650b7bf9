"""Persistent knowledge: learned goals, policies, questions and answers (SQLite)."""
from task_learning.kb.store import (
    DEFAULT_DB,
    OBJECT_VAR,
    Confirmation,
    KnowledgeBase,
    KnowledgeBaseError,
    LearnedGoal,
    Policy,
    default_db_path,
    goal_key,
    ground_lifted,
    lift_literals,
    parse_confirmation,
    remove_knowledge_base,
    resolve_db_path,
)

__all__ = [
    "Confirmation",
    "DEFAULT_DB",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "LearnedGoal",
    "OBJECT_VAR",
    "Policy",
    "default_db_path",
    "goal_key",
    "ground_lifted",
    "lift_literals",
    "parse_confirmation",
    "remove_knowledge_base",
    "resolve_db_path",
]
