"""`task-learning faults` probes LearnGoals from another client (issue 40): its rule probe (no graph)
reports the attack handled, both probes are registered, and loading them imports no rclpy (the graph
probe runs in a process of its own)."""
from __future__ import annotations

import subprocess
import sys

from task_learning.apps.faults import ProbeContext, batch_probes
from task_learning.apps.faults.runner import all_probes


def test_the_rule_probe_reports_the_other_clients_batch_refused(tmp_path):
    result = batch_probes._rule(ProbeContext(workdir=tmp_path))
    assert result.handled, result.detail
    assert result.detail.startswith("refused: batch ") and "objects taken from the open batch" in result.detail


def test_both_probes_are_registered_and_the_graph_one_is_not_in_the_fast_subset():
    mine = {p.name: p for p in all_probes() if p.name in (batch_probes.RULE_NAME, batch_probes.GRAPH_NAME)}
    assert set(mine) == {batch_probes.RULE_NAME, batch_probes.GRAPH_NAME}
    assert mine[batch_probes.RULE_NAME].fast and not mine[batch_probes.GRAPH_NAME].fast
    code = "import sys, task_learning.apps.faults.batch_probes; print('rclpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
