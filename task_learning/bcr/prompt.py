"""The BCR selection prompt (the BCR paper §IV-B), in this project's own words.

Eight parts, in the paper's order: role; take your time and reason step by step; previous actions
(last 5); completed sub-goals; candidate actions; remaining goal literals; errors and blocking
conditions met so far (with "your last choice was not in the list" when that happened); the
reminder to choose only from the list, answering `$$ <action> $$`.

With LLM-State on as well (the LLM-State paper; `state_notes` non-empty), one more part comes before the
candidates: the open state's object entries and its summary, which tells the model what the robot
learned about things it cannot see now and why earlier actions failed. Without notes the prompt
and the request's context are exactly the BCR paper's ones.
"""
from __future__ import annotations

import re
from typing import Any

from task_learning.bcr.literals import literal_text
from task_learning.llm.answer_bounds import bound_for
from task_learning.llm.base import LLMRequest
from task_learning.llm.constraints import Constraint
from task_learning.types import GoalLiteral

ANSWER = re.compile(r"\$\$\s*(.+?)\s*\$\$", re.S)
MAX_ERRORS_SHOWN = 6

ROLE = ("You help a household robot decide which single action it should try next. The robot "
        "works towards a goal one action at a time and tells you what blocked it so far.")
REASON = "Take your time: think it through step by step before you answer."
STATE_NOTES = ("What the robot keeps about the world so far (its open state: key objects with their "
               "attributes, and a summary of what happened and why actions failed):")
MAX_STATE_NOTES_CHARS = 4000  # a runaway state must not crowd out the candidates
REMINDER = ("Choose exactly one action from the candidate list above, copied as written. "
            "Give your selected action in the format $$ <selected action> $$.")


def _bullets(items: list[str], empty: str) -> str:
    return "\n".join(f"- {item}" for item in items) if items else f"- {empty}"


def shown_notes(state_notes: str) -> str:
    """The state notes as the prompt shows them: stripped, cut to MAX_STATE_NOTES_CHARS."""
    text = state_notes.strip()
    return text if len(text) <= MAX_STATE_NOTES_CHARS else text[:MAX_STATE_NOTES_CHARS] + " ..."


def build_prompt(goals: list[GoalLiteral], completed: list[GoalLiteral], candidates: list[str],
                 history: list[str], errors: list[str], state_notes: str = "") -> str:
    shown_errors = errors[-MAX_ERRORS_SHOWN:]
    parts = [
        ROLE,
        REASON,
        "Previous actions (oldest first):\n" + _bullets(history, "none yet"),
        "Sub-goals already achieved:\n" + _bullets([literal_text(g) for g in completed], "none yet"),
    ]
    notes = shown_notes(state_notes)
    if notes:
        parts.append(STATE_NOTES + "\n" + notes)
    parts += [
        "Candidate actions:\n" + _bullets(candidates, "none"),
        "Goal literals still to achieve:\n" + _bullets([literal_text(g) for g in goals], "none"),
        "Errors and blocking conditions met so far (latest last):\n"
        + _bullets(shown_errors, "none"),
        REMINDER,
    ]
    return "\n\n".join(parts)


def build_request(goals: list[GoalLiteral], completed: list[GoalLiteral], candidates: list[str],
                  history: list[str], errors: list[str], scope: str = "",
                  mode: str = "guarded", state_notes: str = "", answers: str = "paper",
                  grounded: bool = False, allowed: list[str] | None = None) -> LLMRequest:
    """A fresh one-message conversation per decision, with the structured context the offline
    model reads (keys agreed in COMMON: goal, candidates, history, errors; plus completed, and
    the agent's mode: the offline chooser adds its repeat penalty in `guarded` mode only; and
    `llm_state`, the notes shown, only when there are any). `grounded` (--decoding grounded): the
    answer can only be one of the candidates, in the answer form the prompt asks for; with
    `allowed`, one of those (the engine's: the candidates a retry of which can change something),
    the prompt still listing every candidate."""
    choices = [c for c in candidates if allowed is None or c in allowed] if grounded else []
    prompt = build_prompt(goals, completed, candidates, history, errors, state_notes)
    context: dict[str, Any] = {
        "goal": [literal_text(g) for g in goals],
        "completed": [literal_text(g) for g in completed],
        "candidates": list(candidates),
        "history": list(history),
        "errors": list(errors[-MAX_ERRORS_SHOWN:]),
    }
    if mode != "guarded":  # guarded requests keep the keys (and cache keys) they always had
        context["mode"] = mode
    notes = shown_notes(state_notes)
    if notes:  # requests without notes keep their keys (and cache keys)
        context["llm_state"] = notes
    bound = bound_for("bcr_selection", answers)
    if bound is not None:  # the same context: the offline stand-in answers the same
        constraint = Constraint(tuple(f" {c}" for c in choices)) if choices else None
        return LLMRequest(prompt_type="bcr_selection", prompt=bound.prompt(prompt), max_tokens=bound.max_tokens,
                          stop=bound.stop, temperature=0.0, context=context, scope=scope, constraint=constraint)
    return LLMRequest(
        prompt_type="bcr_selection",
        messages=(("user", prompt),),
        max_tokens=300,
        temperature=0.0,
        context=context,
        scope=scope,
        constraint=Constraint(tuple(f" $$ {c} $$" for c in choices)) if choices else None,
    )


def parse_answer(text: str, answers: str = "paper") -> str | None:
    """The action between the last pair of $$ markers, or None. Bounded answers: without $$
    markers, the answer's line after the cue's "-" ("- PutObject(Mug|1, Sink|1)")."""
    found: list[str] = ANSWER.findall(text or "")
    if found:
        return found[-1].strip()
    if answers == "bounded":
        line = bounded_line(text)
        return line or None
    return None


def bounded_line(text: str) -> str:
    """A bounded answer's first line without the list's "-"."""
    first = (text or "").strip().split("\n", 1)[0].strip()
    return first[1:].strip() if first.startswith("-") else first


def match_candidate(answer: str | None, candidates: list[str]) -> str | None:
    """The candidate the answer names, ignoring case and spacing; None if it names none."""
    if not answer:
        return None
    squash = re.sub(r"\s+", "", answer).lower().strip("`'\". ")
    for cand in candidates:
        if re.sub(r"\s+", "", cand).lower() == squash:
            return cand
    return None
