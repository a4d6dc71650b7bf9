"""Persistent knowledge: learned goals, policies, questions and answers (SQLite)."""
from task_learning.kb.store import (  # noqa: F401
    DEFAULT_DB,
    OBJECT_VAR,
    Confirmation,
    KnowledgeBase,
    KnowledgeBaseError,
    LearnedGoal,
    Policy,
    goal_key,
    ground_lifted,
    lift_literals,
    default_db_path,
    parse_confirmation,
    remove_knowledge_base,
    resolve_db_path,
)
