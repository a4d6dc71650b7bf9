"""What the robot says and how the user's words are counted (the STARS paper appendix C).

Kept apart from the flow so the node, the panel and the terminal all phrase questions alike and
every front end counts words the same way.
"""
from __future__ import annotations

import re

GOAL_PREFIX = "the goal is that "
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_SPACES = re.compile(r"\s+")


def clean_goal_text(text: str) -> str:
    """Collapse whitespace and drop trailing sentence punctuation, keeping the words as said."""
    return _SPACES.sub(" ", text).strip().rstrip(".!?").strip()


def goal_clause(candidate_text: str) -> str:
    """'the goal is that the mug is in the cupboard' -> 'the mug is in the cupboard'."""
    text = clean_goal_text(candidate_text)
    if text.lower().startswith(GOAL_PREFIX):
        return text[len(GOAL_PREFIX):].strip()
    return text


def goal_sentence(text: str) -> str:
    """Canonical goal sentence, as STARS' candidates are written: 'the goal is that <clause>'.

    A user may say "the mug is in the cupboard" or "The goal is that the mug is in the cupboard.";
    both are analysed as the same sentence."""
    clause = goal_clause(text)
    if not clause:
        return ""
    return GOAL_PREFIX + clause[0].lower() + clause[1:]


def proposal_question(object_description: str, candidate_text: str) -> str:
    """The paper's yes/no question, e.g. "For a mug in the dish rack is the goal that the mug is in
    the cupboard and the cupboard is closed?"."""
    return f"For a {object_description} is the goal that {goal_clause(candidate_text)}?"


def description_question(object_description: str, feedback: str = "") -> str:
    """Asking for a goal description; after an unusable one, say why first (the mismatch feedback)."""
    ask = (f"For a {object_description}, what is the goal? Please describe it, e.g. "
           f"\"the goal is that the {object_description.split(' in ')[0].split(' on ')[0]} is in the ...\".")
    if feedback:
        return f"I cannot use that goal: {feedback} {ask}"
    return ask


def count_words(text: str) -> int:
    """Words as appendix C counts them: "the goal is that the steak knife is in the dishwasher" is
    11 words, "No." is one. Punctuation is not a word."""
    return len(_WORD.findall(text))
