"""Answering questions at a text prompt: the in-process TerminalOperator and the shared prompt used
by `task-learning operator` for the ROS node's questions.

A reply is read as `answers.interpret_reply` reads it for every front end: yes or no, a listed
candidate's number, or the goal in plain words. Anything else ("maybe", an empty line, a yes to a
question that asks for words) is asked again with a hint of what is expected, and is never sent;
end of input is an absent operator, never consent: the TerminalOperator then says once that its
input closed and raises OperatorGone for that question and every later one without printing it
(the run reports them as such and exits non-zero). Each question says how long it has.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from task_learning.oversight.answers import expected, interpret_reply, remaining_text
from task_learning.oversight.operator import OperatorGone
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest


def format_request(request: ConfirmationRequest, now: float | None = None) -> str:
    """The question with its object, the candidates behind it and the time it has left."""
    lines = [f"[{request.request_id}] {request.question}"]
    if request.object_description or request.object_id:
        lines.append(f"  object: {request.object_description} ({request.object_id})")
    for cand in request.candidates:
        asked = request.candidate is not None and cand.text == request.candidate.text
        lines.append(f"  {'>' if asked else ' '} #{cand.candidate_id} {cand.score:.3f} "
                     f"[{cand.source.value}] {cand.text}")
    left = remaining_text(request, now)
    if left:
        lines.append(f"  time: {left}")
    lines.append(f"  Please {expected(request)}:")
    return "\n".join(lines)


def prompt_answer(request: ConfirmationRequest, stdin: TextIO, stdout: TextIO) -> tuple[AnswerKind, str] | None:
    """Read one valid answer for `request`; None at end of input."""
    stdout.write(format_request(request) + "\n")
    while True:
        stdout.write("> ")
        stdout.flush()
        line = stdin.readline()
        if not line:  # end of input: no answer (never consent); end the prompt's line
            stdout.write("\n")
            return None
        reply = interpret_reply(request, line)
        if reply.answer is None:
            left = remaining_text(request)
            stdout.write(f"  {reply.hint}" + (f" ({left})" if left else "") + "\n")
            continue
        return reply.answer, reply.description


class TerminalOperator:
    """A person at this process's terminal answers the flow's questions directly (no ROS)."""

    name = "terminal"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None,
                 stderr: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.gone = False  # the input closed: nobody is asked again

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        if self.gone:
            raise OperatorGone("the terminal's input is closed")
        got = prompt_answer(request, self.stdin, self.stdout)
        if got is None:
            self.gone = True
            self.stderr.write("task-learning: the terminal's input closed (end of input): no further question "
                              "is asked; each gets no goal, never a yes\n")
            self.stderr.flush()
            raise OperatorGone("the terminal's input closed")
        kind, text = got
        return ConfirmationAnswer(request.request_id, kind, text, self.name, time.time())
