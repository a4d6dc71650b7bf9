"""What a task run came to, in words: done, or partial and why.

One reading for every place a result is shown (PerformTask's result, `task-learning run`, the
demo): the task succeeded only when every task object reached a goal (confirmed, where oversight
asks for it); otherwise the result is partial and says why, grouped by reason: questions nobody
answered in time, proposals the operator refused, goals that could not be reached, objects gone.
The completion measure (the scene's assertions) is reported beside it; it can fall short of 100 %
even when every object reached its goal, when a confirmed goal is not the scene's preferred place,
and the message says so rather than hiding it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

OUTCOME_WORDS = {
    "no_goal": "without a goal",
    "unreachable": "not reached",
    "missing": "no longer in the world",
}


class Report(Protocol):
    """What the summary reads of an ObjectReport (planning.loop)."""

    object_id: str
    outcome: str
    message: str


@dataclass
class TaskSummary:
    success: bool
    message: str
    reasons: list[str] = field(default_factory=list)  # why it is partial, one line per reason


def summarize(reports: Sequence[Report], satisfied: int, total: int) -> TaskSummary:
    """The verdict on a run from its object reports and its completion measure."""
    completion = f"completion {100.0 * satisfied / total if total else 0.0:.1f}% ({satisfied}/{total})"
    groups: dict[tuple[str, str], list[str]] = {}
    for report in reports:
        if report.outcome != "done":
            groups.setdefault((report.outcome, report.message or "no reason given"), []).append(report.object_id)
    reasons = [f"{len(ids)} object(s) {OUTCOME_WORDS.get(outcome, outcome)}: {why} ({_ids(ids)})"
               for (outcome, why), ids in groups.items()]
    if not reports and satisfied < total:
        reasons.append("no task object was found at the task's places")
    if reasons:
        return TaskSummary(False, f"partial, {completion}: " + "; ".join(reasons), reasons)
    if not reports:
        return TaskSummary(True, f"nothing to do, {completion}: no task object is at a place the task "
                                 f"clears (the world already looks done; the goals learned before stay "
                                 f"in the knowledge base)")
    note = ""
    if satisfied < total:
        note = (f"; {total - satisfied} of the scene's assertions do not hold (a confirmed goal is "
                f"not the scene's preferred one)")
    return TaskSummary(True, f"task completed, {completion}: every task object reached its goal "
                             f"({len(reports)} object(s)){note}")


def _ids(ids: list[str], shown: int = 5) -> str:
    more = f", +{len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more
