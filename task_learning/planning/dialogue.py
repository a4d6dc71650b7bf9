"""The instructor's side of teaching a task (seed 000 appendix B.1), and how it is counted.

The paper's text of the dialogue is cut short, but its counts are given: every condition starts
from a floor of 14 instructions / 76 words (tidy kitchen) and 6 / 28 (store groceries, organize
office). One regular dialogue reproduces all three floors: the task name; per subtask "Repeat the
following tasks while an object is <rel> the <place>.", "<Verb> an object that is <rel> the
<place>.", "You are done." (ends the body) and "Done." (ends the loop); then "You are done."
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class SubtaskSpec:
    verb: str  # "clear", "store", "unload"
    relation: str  # "on" | "in"
    place: str  # spoken place: "table", "dish rack", "bag"
    article: str = "the"


def teaching_dialogue(task: str, subtasks: Sequence[SubtaskSpec]) -> list[str]:
    lines = [f"{task[:1].upper()}{task[1:]}."]
    for sub in subtasks:
        where = f"{sub.relation} {sub.article} {sub.place}"
        lines += [
            f"Repeat the following tasks while an object is {where}.",
            f"{sub.verb[:1].upper()}{sub.verb[1:]} an object that is {where}.",
            "You are done.",
            "Done.",
        ]
    lines.append("You are done.")
    return lines


def count_words(text: str) -> int:
    """Words as the paper counts them: whitespace-separated tokens ("yes" is one word)."""
    return len(text.split())
