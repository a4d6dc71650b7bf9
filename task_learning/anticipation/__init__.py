"""Task anticipation (the task-anticipation paper): the robot asks an LLM for the rest of the day's routine, keeps the
tasks its experience supports in this context and position, merges them with what it was asked to
do, and (on the robot) proposes each to the operator before doing it.

- config.py: config/anticipation/anticipation.yaml (task list, aliases, facts, validator, prompt,
  seeded experience), validated on load.
- context.py: "weekday, working from home and need a snack" -> DayContext(day, facts).
- experience.py: routines as experience in the knowledge base (kb/store.py's `routines` table).
- prompt.py: the anticipation prompt with the paper's parts. parser.py: the tolerant parser.
- validator.py: keeps what experience supports, logs every drop with its reason.
- anticipator.py: prompt -> LLM -> parse -> validate -> merge with assigned tasks.
- household.py, base8.py, planner.py, simulation.py: the traces' household, the Base8 baseline,
  the agents' planner and a simulated day (experiment).
Pure Python: no rclpy.
"""
from task_learning import lazy_exports

_EXPORTS = {
    "Anticipator": "task_learning.anticipation.anticipator",
    "AnticipationConfig": "task_learning.anticipation.config",
    "load_anticipation_config": "task_learning.anticipation.config",
    "DayContext": "task_learning.anticipation.context",
    "parse_context": "task_learning.anticipation.context",
    "Experience": "task_learning.anticipation.experience",
    "record_day": "task_learning.anticipation.experience",
    "seed_experience": "task_learning.anticipation.experience",
    "Container": "task_learning.anticipation.household",
    "Household": "task_learning.anticipation.household",
    "HouseholdSpec": "task_learning.anticipation.household",
    "Literal": "task_learning.anticipation.household",
    "load_household": "task_learning.anticipation.household",
    "parse_literal": "task_learning.anticipation.household",
    "next_action": "task_learning.anticipation.planner",
    "KB_TASK": "task_learning.anticipation.proposals",
    "RoutineOperator": "task_learning.anticipation.proposals",
    "run_robot_day": "task_learning.anticipation.robot_day",
    "run_day": "task_learning.anticipation.simulation",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
