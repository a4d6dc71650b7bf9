"""Persistent knowledge: learned goals, policies, questions and answers (SQLite)."""
from task_learning.kb.store import (  # noqa: F401
    OBJECT_VAR,
    Confirmation,
    KnowledgeBase,
    KnowledgeBaseError,
    LearnedGoal,
    Policy,
    goal_key,
    ground_lifted,
    lift_literals,
    parse_confirmation,
)
