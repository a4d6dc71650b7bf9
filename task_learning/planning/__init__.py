"""Reaching learned goals, reusing learned policies, and the task-learning loop of seed 000 B.1."""
