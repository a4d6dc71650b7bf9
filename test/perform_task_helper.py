"""A PerformTask client as its own process, for tests whose client must run somewhere the test
process cannot (another network namespace: test/nodes/test_deployment_three_hosts.py).

    python test/perform_task_helper.py SCENE TASK CONDITION TIMEOUT_S

Prints one JSON line: {"result": {...}} (nodes/clients/demo.py's perform_task: completion, counts) or
{"error": "<why the goal failed, as the planner said>"}; exit 0 either way, 2 on bad arguments.
"""
from __future__ import annotations

import json
import sys

from task_learning.errors import TaskLearningError
from task_learning_nodes.clients.demo import perform_task


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    scene, task, condition, timeout_s = argv
    try:
        print(json.dumps({"result": perform_task(scene, task, condition, float(timeout_s))}), flush=True)
    except TaskLearningError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
