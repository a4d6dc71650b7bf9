"""`task-learning run` says what was learned (issue 32): per object the goal in words, its literals,
who confirmed it and whether it was reached, and a summary that is "task completed" only when
every object reached its goal, else partial with the reason (here: questions nobody answered)."""
from __future__ import annotations

import io
import sys

import pytest

from task_learning.apps.cli import main

pytestmark = pytest.mark.slow  # whole tasks in-process


def test_run_prints_what_was_learned_per_object(tmp_path, capsys):
    assert main(["run", "--scene", "store_groceries", "--condition", "STARS+O", "--operator", "simulated",
                 "--db", str(tmp_path / "kb.sqlite")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("store_groceries STARS+O: task completed, completion")
    assert out.count("; elicited; confirmed by simulated; reached") == 15, out
    assert "  cheese in bag: the goal is that the cheese is in the fridge and the fridge is closed\n" \
           "      inside(Cheese|1, Fridge|1) & false:open(Fridge|1); elicited; confirmed by simulated; reached" in out

    # Trial #2 on the same knowledge base: the same goals, from it, confirmed earlier by the same user.
    assert main(["run", "--scene", "store_groceries", "--condition", "STARS+O", "--operator", "simulated",
                 "--db", str(tmp_path / "kb.sqlite")]) == 0
    again = capsys.readouterr().out
    assert again.count("; from the knowledge base; confirmed by simulated; reached") == 15, again


def test_closed_input_is_said_once_no_one_is_asked_again_and_the_run_exits_non_zero(tmp_path, capsys, monkeypatch):
    """Issue 40: end of input was "the operator did not answer in time" for every question, exit 0."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # the terminal's input is closed
    assert main(["run", "--scene", "store_groceries", "--condition", "STARS+O", "--operator", "terminal",
                 "--db", str(tmp_path / "kb.sqlite")]) == 1
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    summary = next(line for line in out.splitlines() if line.startswith("store_groceries STARS+O: "))
    assert summary.startswith("store_groceries STARS+O: partial, completion"), summary
    assert ("15 object(s) without a goal: not_confirmed: the operator's input closed (nobody is left to "
            "answer)") in summary
    assert out.count("Please ") == 1, out[-3000:]  # the first question only; no one is asked again
    assert out.count("; confirmed by nobody; NOT reached: no_goal, not_confirmed: the operator's input "
                     "closed") == 15, out[-3000:]
    assert err.count("the terminal's input closed (end of input)") == 1, err
    assert "task-learning run: the operator went away (the terminal's input closed): partial result, 15 " \
           "object(s)" in err
    assert "did not answer in time" not in out + err
