"""Fault injection for `task-learning faults`: every category of fault (docs/safety.md), each
provoked for real and judged by its outcome (see base.py for what "handled" means)."""
from __future__ import annotations

from task_learning.apps.faults.base import (
           CATEGORIES,
           Probe,
           ProbeContext,
           ProbeResult,
           format_details,
           format_table,
)
from task_learning.apps.faults.runner import all_probes, run_probes

__all__ = ["CATEGORIES", "Probe", "ProbeContext", "ProbeResult", "all_probes", "format_details", "format_table",
           "run_probes"]
