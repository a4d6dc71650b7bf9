"""`task-learning bcr`: JSON trials, the DOT export, clear errors."""
from __future__ import annotations

import json

from task_learning.apps.cli import main


def test_bcr_json_trials(capsys):
    code = main(["bcr", "--scene", "bcr_kitchen", "--task", "make_coffee", "--engine", "llm",
                 "--llm", "offline", "--trials", "3", "--seed", "4", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)
    assert len(data["trials"]) == 3
    for trial in data["trials"]:
        assert {"success", "actions", "decisions", "candidates_per_decision",
                "runtime_s"} <= set(trial)
        assert trial["success"] is True and 0 < trial["actions"] <= 100
    assert [t["seed"] for t in data["trials"]] == [4, 5, 6]
    summary = data["summary"]
    assert summary["successes"] == 3 and summary["trials"] == 3
    assert summary["llm_usage"]["by_type"]["bcr_selection"]["calls"] >= 1


def test_bcr_dot_export(tmp_path, capsys):
    target = tmp_path / "tree.dot"
    code = main(["bcr", "--task", "apple_in_fridge", "--engine", "heuristic", "--trials", "1",
                 "--seed", "5", "--dot", str(target)])
    assert code == 0
    dot = target.read_text()
    assert dot.startswith("digraph") and "PickupObject(Apple|1)" in dot
    assert "OpenObject(Cupboard|2)" in dot  # the hidden apple's resolutions, as in Figure 2
    assert "ok   seed 5" in capsys.readouterr().out


def test_bcr_bad_input_is_one_clear_line(capsys):
    assert main(["bcr", "--task", "make_pizza", "--engine", "heuristic"]) == 2
    err = capsys.readouterr().err
    assert "unknown BCR task 'make_pizza'" in err and "Traceback" not in err
    assert main(["bcr", "--task", "make_toast", "--trials", "0"]) == 2
    assert "--trials: must be between 1 and" in capsys.readouterr().err
    assert main(["bcr", "--task", "make_toast", "--scene", "nowhere"]) == 2
    assert "nowhere" in capsys.readouterr().err
