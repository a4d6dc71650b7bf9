"""The validator: keep an anticipated task only when experience supports it here.

The seed removes tasks the human "rarely" did in such a routine ("Clean kitchen") and ones that
depend on position ("usually did not require snacks after lunch"); its rule and threshold are not
stated. Ours (threshold in config `validator.threshold`):

* the routines compared are the past days of the same context (day and facts); a context never
  seen falls back to the same day type, then to all days (counted as `unseen_context`);
* a task that follows another (the last task done, or the last one kept) is kept when, among those
  routines that contain that task, it came after it in at least `threshold` of them;
* the first task of a day (or one after a task no routine contains) is kept when it occurs in at
  least `threshold` of the routines.

Every decision carries its counts, and every drop is logged with its reason."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from task_learning.anticipation.config import AnticipationConfig
from task_learning.anticipation.context import DayContext
from task_learning.anticipation.experience import Experience

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decision:
    task: str
    kept: bool
    followed: int  # routines where the task came after `after` (or contained it, when no `after`)
    out_of: int  # routines compared
    after: str = ""  # the task it was checked to follow ("" at the start of the day)
    reason: str = ""

    @property
    def support(self) -> float:
        return self.followed / self.out_of if self.out_of else 0.0


@dataclass
class Validation:
    kept: list[str] = field(default_factory=list)
    dropped: list[Decision] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    fallback: str = ""  # "" | "same day" | "all days": the context was never seen

    def dropped_dicts(self) -> list[dict[str, str]]:
        return [{"task": d.task, "reason": d.reason} for d in self.dropped]


def validate(tasks: Sequence[str], ctx: DayContext, experience: Experience, cfg: AnticipationConfig,
             done: Sequence[str] = ()) -> Validation:
    found = experience.in_context(ctx, cfg)
    routines = [list(r.tasks) for r in found.routines]
    result = Validation(fallback=found.fallback)
    after = done[-1] if done else ""
    for task in tasks:
        decision = _decide(task, after, routines, found.described, cfg.threshold)
        result.decisions.append(decision)
        if decision.kept:
            result.kept.append(task)
            after = task
        else:
            result.dropped.append(decision)
            log.info("anticipation: dropped %r: %s", task, decision.reason)
    return result


def _decide(task: str, after: str, routines: list[list[str]], described: str, threshold: float) -> Decision:
    where = f"past routines ({described})"
    with_after = [r for r in routines if after and after in r]
    if with_after:
        followed = sum(1 for r in with_after if task in r[r.index(after) + 1:])
        n = len(with_after)
        what = f"{task} followed {after} in {followed} of {n} {where}"
    else:
        followed = sum(1 for r in routines if task in r)
        n = len(routines)
        what = f"{task} occurred in {followed} of {n} {where}"
    if n == 0:
        return Decision(task, False, 0, 0, after, "no experience to support it (no past routine at all)")
    share = followed / n
    if share >= threshold:
        return Decision(task, True, followed, n, after if with_after else "", what)
    kind = "rarely done in such a routine" if followed else "never done in such a routine"
    if with_after and followed == 0:
        kind = f"never done after {after} in such a routine"
    reason = f"{kind}: {what} ({share:.2f} < threshold {threshold:g})"
    return Decision(task, False, followed, n, after if with_after else "", reason)


def merge(assigned: Sequence[str], kept: Sequence[str], done: Sequence[str] = ()) -> list[str]:
    """The tasks to plan for: the assigned ones first (the seed does not state the order; the
    operator's requests come first), then the anticipated ones not already assigned or done."""
    out: list[str] = []
    for task in list(assigned) + list(kept):
        if task not in out and task not in done:
            out.append(task)
    return out
