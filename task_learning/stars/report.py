"""What one object's elicitation came to, as a client of it reads it: the STARS paper's per-object
counts and a one-line verdict (the goal elicitation node's LearnGoal result carries both)."""
from __future__ import annotations

from task_learning.stars.elicit import ElicitationResult


def paper_counts(outcome: ElicitationResult) -> dict[str, int]:
    """Goals retrieved; with oversight, proposed/sourced and the user's effort (instructions,
    yes/no answers, words); without, sourced is 1 when a goal was chosen."""
    counts = {"retrieved": len(outcome.candidates)}
    if outcome.oversight is not None:
        counts.update(outcome.oversight.counts.to_dict())
    else:
        counts["sourced"] = 1 if outcome.chosen is not None else 0
    return counts


def verdict_line(outcome: ElicitationResult) -> str:
    """'<condition> <object>: <outcome>[: <goal>] (N candidates, N calls, N failures)[; errors]'."""
    detail = f"; {'; '.join(outcome.errors[:3])}" if outcome.errors else ""
    chosen = f": {outcome.chosen.text}" if outcome.chosen else ""
    return (f"{outcome.condition.value} {outcome.object_id}: {outcome.outcome}{chosen} "
            f"({len(outcome.candidates)} candidates, {outcome.usage.calls} calls, "
            f"{outcome.usage.failures} failures){detail}")


# The elicitation's stages as LearnGoal's feedback names them (msg: retrieve | recurse | analyze |
# repair | select | confirm | done).
FEEDBACK_STAGES = {
    "template_prompt": "retrieve", "search_tree": "recurse", "analysis": "analyze", "repair_1": "repair",
    "repair_2": "repair", "selection": "select", "highest_score": "select", "oversight": "confirm",
}
