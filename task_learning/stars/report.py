"""What one object's elicitation came to, as a client of it reads it: the STARS paper's per-object
counts and a one-line verdict (the goal elicitation node's LearnGoal result carries both)."""
from __future__ import annotations

from task_learning.stars.elicit import ElicitationResult
from task_learning.stars.selection import SelectionOutcome


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


def selection_line(selection: SelectionOutcome) -> str:
    """How the goal was chosen, naming the candidate by the number the user sees (#id), not by the
    option number the model answered (the model is shown the viable goals only, lowest score first)."""
    chosen = f"#{selection.chosen.candidate_id}" if selection.chosen is not None else "nothing"
    shown = len(selection.options)
    if selection.method in ("llm", "llm_retry"):
        again = " when asked a second time" if selection.method == "llm_retry" else ""
        return (f"selection: the model chose {chosen}{again} (its answer: option {selection.index} of the {shown} "
                f"viable goals it was shown, lowest score first)")
    if selection.method == "fallback_highest_score":
        why = "; ".join(selection.problems[-2:]) or "no usable answer"
        return f"selection: {chosen}, the highest score of {shown} (the model's answers were unusable: {why})"
    if selection.method == "single_option":
        return f"selection: {chosen}, the only viable goal"
    return "selection: no viable goal to choose from"
