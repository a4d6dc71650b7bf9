"""Answering questions at a text prompt: the in-process TerminalOperator and the shared prompt used
by `task-learning operator` for the ROS node's questions.

"y"/"yes" and "n"/"no" are yes/no answers; any other line is a goal description; an empty line
asks again; end of input is an absent operator (timeout), never consent.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from task_learning.oversight.operator import timeout_answer
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest

_YES = {"y", "yes"}
_NO = {"n", "no"}


def format_request(request: ConfirmationRequest) -> str:
    """The question with its object and the candidates behind it, for a terminal."""
    lines = [f"[{request.request_id}] {request.question}"]
    if request.object_description or request.object_id:
        lines.append(f"  object: {request.object_description} ({request.object_id})")
    for cand in request.candidates:
        asked = request.candidate is not None and cand.text == request.candidate.text
        lines.append(f"  {'>' if asked else ' '} #{cand.candidate_id} {cand.score:.3f} "
                     f"[{cand.source.value}] {cand.text}")
    if request.wants_description:
        lines.append("  Describe the goal in words (or 'no' to skip):")
    else:
        lines.append("  Answer yes / no, or describe the goal in words:")
    return "\n".join(lines)


def prompt_answer(request: ConfirmationRequest, stdin: TextIO, stdout: TextIO) -> tuple[AnswerKind, str] | None:
    """Read one valid answer for `request`; None at end of input."""
    stdout.write(format_request(request) + "\n")
    while True:
        stdout.write("> ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            return None
        text = line.strip()
        word = text.lower().rstrip(".!")
        if not text:
            continue
        if word in _YES:
            if request.wants_description:
                stdout.write("  This question asks for the goal in words (or 'no').\n")
                continue
            return AnswerKind.YES, ""
        if word in _NO:
            return AnswerKind.NO, ""
        return AnswerKind.DESCRIPTION, text


class TerminalOperator:
    """A person at this process's terminal answers the flow's questions directly (no ROS)."""

    name = "terminal"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        got = prompt_answer(request, self.stdin, self.stdout)
        if got is None:
            return timeout_answer(request)
        kind, text = got
        return ConfirmationAnswer(request.request_id, kind, text, self.name, time.time())
