"""Reaching learned goals, reusing learned policies, and the task-learning loop of the STARS paper B.1."""
from task_learning import lazy_exports

_EXPORTS = {
    "GoalConfirmer": "task_learning.planning.confirmation",
    "confirmation_mismatch": "task_learning.planning.confirmation",
    "goal_covered": "task_learning.planning.confirmation",
    "literals_confirmed": "task_learning.planning.confirmation",
    "requires_confirmation": "task_learning.planning.confirmation",
    "GoalExecutor": "task_learning.planning.executor",
    "type_index": "task_learning.planning.executor",
    "ObjectReport": "task_learning.planning.loop",
    "TaskLearner": "task_learning.planning.loop",
    "PolicyReviewer": "task_learning.planning.policy_review",
    "policy_problem": "task_learning.planning.policy_review",
    "LEARNING": "task_learning.planning.progress",
    "ObjectState": "task_learning.planning.progress",
    "ObjectStates": "task_learning.planning.progress",
    "learned": "task_learning.planning.replay",
    "replay_episode": "task_learning.planning.replay",
    "ObjectTracker": "task_learning.planning.service",
    "TaskOutcome": "task_learning.planning.service",
    "TaskPorts": "task_learning.planning.service",
    "keep_subtasks": "task_learning.planning.service",
    "run_task": "task_learning.planning.service",
    "task_learner": "task_learning.planning.service",
    "CONDITIONS": "task_learning.planning.session",
    "ELICITATION_MODES": "task_learning.planning.session",
    "OPERATORS": "task_learning.planning.session",
    "RunSpec": "task_learning.planning.session",
    "check_run_config": "task_learning.planning.session",
    "check_task": "task_learning.planning.session",
    "run_in_process": "task_learning.planning.session",
    "task_order": "task_learning.planning.session",
    "summarize": "task_learning.planning.summary",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
