"""`task-learning faults --fast`: the fault-injection command runs its quick subset and every
fault in it ends in a clear outcome, with no unconfirmed goal executed and no confirmed goal lost.
(The full run, with the ROS graph, is `task-learning faults`; its table is in docs/safety.md.)"""
from __future__ import annotations

import pytest

from task_learning.apps.cli import main
from task_learning.apps.faults import ProbeContext, format_table, run_probes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # real CLI processes, a fake endpoint


def test_fast_subset_every_fault_handled(tmp_path):
    ctx = ProbeContext(workdir=tmp_path, seed=0, fast=True)
    results = run_probes(ctx, ("llm", "cli", "config", "persistence"))
    names = {r.name for r in results}
    assert {"drip (1 byte per 0.5 s)", "huge body (150 MB)", "logprob +5", "401 unauthorized",
            "dead endpoint (client)", "wrong object in the answer", "run --workers 0", "broken lexicon",
            "locked database", "foreign goals table",
            # issues 31 and 33
            "bag play --rate nan", "anticipate --graph without --robot", "scene from a named pipe",
            "timeout_s: .nan in llm.yaml", "kb export --out /dev/full", "read-only commands change nothing"} <= names
    failed = [f"{r.name}: {r.detail}" for r in results if not r.handled]
    assert not failed, failed
    assert sum(r.unconfirmed_executed for r in results) == 0
    assert sum(r.confirmed_lost for r in results) == 0
    table = format_table(results)
    assert "| LLM endpoint faults |" in table and "| **total** |" in table


def test_faults_command_prints_the_table_and_fails_on_a_finding(tmp_path, capsys):
    code = main(["faults", "--fast", "--category", "cli", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "| bad CLI input | 5 | 5 | 0 | 0 | 0 |" in out
    assert code == 0


def test_the_faults_core_never_imports_rclpy():
    # The ROS probes run in task_learning_nodes.probes.fault_probes, a process of their own.
    import subprocess
    import sys

    code = ("import sys, task_learning.apps.faults, task_learning.apps.cli.faults_cmd, task_learning.apps.faults.ros_probes; "
            "print('rclpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"
