"""The instructor's side of teaching a task (the STARS paper appendix B.1), and how it is counted.

The paper's text of the dialogue is cut short, but its counts are given: every condition starts
from a floor of 14 instructions / 76 words (tidy kitchen) and 6 / 28 (store groceries, organize
office). One regular dialogue reproduces all three floors: the task name; per subtask "Repeat the
following tasks while an object is <rel> the <place>.", the subtask's own instruction ("Clear an
object that is on the table."), "You are done." (ends its body) and "Done." (ends the loop); then
"You are done." for the task.
"""
from __future__ import annotations

from typing import Sequence

from task_learning.errors import TaskLearningError


def teaching_dialogue(task: str, instructions: Sequence[str]) -> list[str]:
    lines = [f"{task[:1].upper()}{task[1:]}."]
    for instruction in instructions:
        head, sep, where = instruction.rstrip(".").partition(" that is ")
        if not sep:
            raise TaskLearningError(
                f"subtask instruction {instruction!r} must read '<Verb> an object that is <rel> <place>.'")
        lines += [
            f"Repeat the following tasks while an object is {where}.",
            f"{head} that is {where}.",
            "You are done.",
            "Done.",
        ]
    lines.append("You are done.")
    return lines


def count_words(text: str) -> int:
    """Words as the paper counts them: whitespace-separated tokens ("yes" is one word)."""
    return len(text.split())
