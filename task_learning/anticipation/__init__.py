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
