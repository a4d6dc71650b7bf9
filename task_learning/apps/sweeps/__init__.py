"""Experiment sweeps: a YAML grid of trials run as Ray tasks (docs/sweeps.md)."""
