"""Issue 10: `kb import` took a goal whose text says "fridge" but whose literals say GarbageCan,
marked confirmed, and `run` then put the cheese in the garbage without asking. Now every goal's
text is grounded again against its scene and must mean its literals (the entry is named when it
does not), and confirmations are kept only with --trust-confirmations."""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from task_learning.kb import Confirmation, KnowledgeBase
from task_learning.planning.session import RunSpec, run_in_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # whole tasks in process, the CLI in subprocesses

CLI = [sys.executable, "-m", "task_learning.apps.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def test_import_regrounds_every_goal_and_keeps_confirmations_only_when_trusted(tmp_path):
    source = tmp_path / "source.sqlite"
    run_in_process(RunSpec(scene="store_groceries", condition="STARS+O", db=source))
    export = tmp_path / "export.yaml"
    assert _cli("kb", "export", "--db", str(source), "--out", str(export)).returncode == 0
    data = yaml.safe_load(export.read_text())
    index = next(i for i, g in enumerate(data["goals"]) if g["object_type"] == "Cheese")
    assert "fridge" in data["goals"][index]["text"] and data["goals"][index]["confirmed"]

    tampered = yaml.safe_load(export.read_text())
    tampered["goals"][index]["literals"] = [
        {"predicate": "inside", "args": ["?object", "GarbageCan"], "truth": "true"}]
    bad = tmp_path / "tampered.yaml"
    bad.write_text(yaml.safe_dump(tampered))
    target = tmp_path / "target.sqlite"
    done = _cli("kb", "import", "--db", str(target), "--trust-confirmations", str(bad))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert f"goals[{index}]" in line and "cheese in bag" in line and "GarbageCan" in line, line
    with KnowledgeBase(target) as kb:
        assert kb.goals() == [], "all or nothing: a refused file imports nothing"

    # A goal about another object than its context is refused too.
    wrong = yaml.safe_load(export.read_text())
    wrong["goals"][index]["text"] = "the goal is that the butter is in the fridge"
    bad.write_text(yaml.safe_dump(wrong))
    done = _cli("kb", "import", "--db", str(target), str(bad))
    assert done.returncode != 0 and "must be about the cheese" in done.stderr

    # The genuine file: imported unconfirmed, then trusted when asked to.
    done = _cli("kb", "import", "--db", str(target), str(export))
    assert done.returncode == 0, done.stderr
    with KnowledgeBase(target) as kb:
        assert len(kb.goals()) == 15 and all(g.confirmation is Confirmation.NONE for g in kb.goals())
    metrics, _ = run_in_process(RunSpec(scene="store_groceries", condition="STARS+O", db=target))
    assert metrics.yes_no >= 15, "untrusted imported goals are asked again"
    trusted = tmp_path / "trusted.sqlite"
    done = _cli("kb", "import", "--db", str(trusted), "--trust-confirmations", str(export))
    assert done.returncode == 0 and "imported_trusted" in done.stdout
    with KnowledgeBase(trusted) as kb:
        assert all(g.confirmation is Confirmation.IMPORTED_TRUSTED for g in kb.goals())
    metrics, _ = run_in_process(RunSpec(scene="store_groceries", condition="STARS+O", db=trusted))
    # Trusted goals are not asked again; the imported policies are, once each (issue 34: an
    # import is not a review), from their actions; the operator's yes is recorded as its own.
    assert metrics.yes_no == 15 and metrics.usage.calls == 0 and metrics.completion == 100.0
    with KnowledgeBase(trusted) as kb:
        assert {p.approval for p in kb.policies()} == {"operator:simulated"}
    metrics, _ = run_in_process(RunSpec(scene="store_groceries", condition="STARS+O", db=trusted))
    assert metrics.yes_no == 0 and metrics.usage.calls == 0 and metrics.completion == 100.0
    shown = _cli("kb", "show", "--db", str(trusted))
    assert "confirmation imported_trusted" in shown.stdout
