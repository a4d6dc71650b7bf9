"""Reaching learned goals, reusing learned policies, and the task-learning loop of the STARS paper B.1."""
