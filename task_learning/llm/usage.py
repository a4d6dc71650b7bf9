"""Copies and differences of `LLMUsage`, so a caller can attribute the traffic of one object
(snapshot before, diff after) while the client keeps the run's running total."""
from __future__ import annotations

from dataclasses import fields

from task_learning.types import LLMUsage, PromptTypeUsage


def copy_usage(usage: LLMUsage) -> LLMUsage:
    out = LLMUsage()
    out.merge(usage)
    return out


def usage_diff(after: LLMUsage, before: LLMUsage) -> LLMUsage:
    """What happened between two snapshots (prompt types with no traffic are left out)."""
    out = LLMUsage()
    for kind, now in after.by_type.items():
        then = before.by_type.get(kind, PromptTypeUsage())
        delta = PromptTypeUsage(**{f.name: getattr(now, f.name) - getattr(then, f.name) for f in fields(now)})
        if any(getattr(delta, f.name) for f in fields(delta)):
            out.by_type[kind] = delta
    return out


def record(usage: LLMUsage, prompt_type: str, **counts: int) -> None:
    """Add counts (calls, prompt_tokens, completion_tokens, cache_hits, failures) to one type."""
    entry = usage.by_type.setdefault(prompt_type, PromptTypeUsage())
    for name, amount in counts.items():
        setattr(entry, name, getattr(entry, name) + amount)
