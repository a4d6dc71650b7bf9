"""The one check every number from outside goes through: finite, of the right kind, in its range.

A command-line option (task_learning.apps.cli.options), a configuration value (schema.bounded)
and a node parameter (task_learning_nodes.plumbing.params) all ask `number_problem`, so NaN, infinities,
booleans posing as numbers and out-of-range values are refused alike everywhere, with the same
words. NaN needs refusing explicitly: every comparison with it is false, so a range test written
as `if value < low or value > high` lets it through.
"""
from __future__ import annotations

import math
from typing import Any


def _fmt(value: float) -> str:
    return f"{value:g}"


def range_text(low: float | None, high: float | None, *, low_open: bool = False, integer: bool = False) -> str:
    """'between 1 and 64' (integers), 'a finite number in [0, 2]' or '... in (0, 600]', '>= 1',
    '> 0', or '' with no bound."""
    if low is not None and high is not None:
        if integer and not low_open:
            return f"between {_fmt(low)} and {_fmt(high)}"
        return f"a finite number in {'(' if low_open else '['}{_fmt(low)}, {_fmt(high)}]"
    if low is not None:
        return f"{'>' if low_open else '>='} {_fmt(low)}"
    if high is not None:
        return f"<= {_fmt(high)}"
    return ""


def number_problem(value: Any, *, low: float | None = None, high: float | None = None,
                   low_open: bool = False, integer: bool = False) -> str:
    """Why `value` is not an acceptable number: '' when it is one (an int where `integer`, else an
    int or float; never a bool), finite, and within [low, high] (or (low, high] with low_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if integer else "a number"
        return f"expected {kind}, got {type(value).__name__} {value!r}"
    if integer and not isinstance(value, int):
        return f"expected an integer, got {value!r}"
    if not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and value > high
    if too_low or too_high:
        return f"must be {range_text(low, high, low_open=low_open, integer=integer)}, got {_fmt(value)}"
    return ""


def non_finite_path(data: Any, *, max_depth: int | None = None) -> tuple[str, str] | None:
    """The first place in a parsed document (mappings, lists, scalars) that holds NaN or an
    infinity, or that nests deeper than `max_depth`: (key path, problem); None when there is
    none. Walked without recursion, so any depth is safe to inspect."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where or "(top level)", f"must be a finite number, got {value!r}"
        if isinstance(value, dict):
            items = [(f"{where}.{k}" if where else str(k), v) for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        else:
            continue
        if max_depth is not None and depth >= max_depth and items:
            return where or "(top level)", f"nested more than {max_depth} levels deep"
        stack.extend((v, k, depth + 1) for k, v in reversed(items))
    return None
