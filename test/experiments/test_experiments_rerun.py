"""Every experiment starts from clean state: run twice with the same --workdir, it prints the same
thing (issue 32: the demo's baselines, and `experiment --paper bootstrapping --workdir`, reused the
first run's knowledge base, so the second run was a Trial #2 of the first)."""
from __future__ import annotations

import json

import pytest

from task_learning.apps.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # whole experiments in-process


# What a run measures of the machine, not of the experiment: differs from run to run by nature.
_MACHINE = {"wall_s", "machine"}


def _without_machine(data):
    if isinstance(data, dict):
        return {k: _without_machine(v) for k, v in data.items() if k not in _MACHINE}
    if isinstance(data, list):
        return [_without_machine(v) for v in data]
    return data


def _twice(capsys, argv: list[str]) -> tuple[dict, dict]:
    runs = []
    for _ in range(2):
        assert main(argv) == 0
        runs.append(_without_machine(json.loads(capsys.readouterr().out)))
    return runs[0], runs[1]


def test_bootstrapping_twice_in_one_workdir_prints_the_same_table(tmp_path, capsys):
    first, second = _twice(capsys, ["experiment", "--paper", "bootstrapping", "--workdir", str(tmp_path),
                                    "--families", "find", "--test-scenes", "FloorPlan6", "--json"])
    assert first["bootstrap"] and first == second  # the second run bootstrapped again, from nothing


def test_stars_conditions_twice_in_one_workdir_print_the_same_table(tmp_path, capsys):
    first, second = _twice(capsys, ["experiment", "--scene", "store_groceries", "--conditions", "TBP,TBP+O",
                                    "--workdir", str(tmp_path), "--json"])
    assert [r["condition"] for r in first["rows"]] == ["TBP", "TBP+O", "Trial #2"]
    assert first == second
