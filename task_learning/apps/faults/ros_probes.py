"""ROS graph faults: run in `task_learning_nodes.probes.fault_probes` (the core never imports rclpy),
which starts the graph, probes it and prints one JSON result per line."""
from __future__ import annotations

import json
import subprocess

from task_learning.apps.faults.base import Probe, ProbeContext, ProbeResult

CATEGORY = "ros"
DEADLINE_S = 1200.0


def _graph(ctx: ProbeContext) -> list[ProbeResult]:
    command = [ctx.python, "-m", "task_learning_nodes.probes.fault_probes", "--workdir", str(ctx.path("ros"))]
    if ctx.fast:
        command.append("--fast")
    try:
        proc = subprocess.run(command, capture_output=True, text=True, check=False, env=dict(ctx.env), timeout=DEADLINE_S,
                              cwd=ctx.workdir, errors="replace")
    except subprocess.TimeoutExpired:
        return [ProbeResult(CATEGORY, "ROS graph probes", False, f"still running after {DEADLINE_S:g} s (hang)")]
    if "No module named 'rclpy'" in proc.stderr or "No module named 'task_learning_interfaces'" in proc.stderr:
        return [ProbeResult(CATEGORY, "ROS graph probes", False, "rclpy or the interfaces are not installed",
                            skipped=True)]
    results = []
    for line in proc.stdout.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("category") == CATEGORY:
            results.append(ProbeResult(**data))
    if not results:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return [ProbeResult(CATEGORY, "ROS graph probes", False, f"the probe process failed: {tail[0]}")]
    return results


def probes() -> list[Probe]:
    return [Probe(CATEGORY, "ROS graph probes", _graph)]
