"""A PerformTask client as its own process, for tests whose client must run somewhere the test
process cannot (another network namespace: test/nodes/test_deployment_three_hosts.py).

    python test/perform_task_helper.py SCENE TASK CONDITION TIMEOUT_S [cancel]

Prints one JSON line: {"result": {...}} (nodes/clients/demo.py's perform_task: completion, counts) or
{"error": "<why the goal failed, as the planner said>"}; exit 0 either way, 2 on bad arguments.
`cancel`: a goal still running after TIMEOUT_S is cancelled and its result comes back `stopped`.
"""
from __future__ import annotations

import json
import sys

from task_learning.errors import TaskLearningError
from task_learning_nodes.clients.demo import perform_task


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5) or argv[4:] not in ([], ["cancel"]):
        print(__doc__, file=sys.stderr)
        return 2
    scene, task, condition, timeout_s = argv[:4]
    try:
        result = perform_task(scene, task, condition, float(timeout_s), cancel_at_timeout=argv[4:] == ["cancel"])
        print(json.dumps({"result": result}), flush=True)
    except TaskLearningError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
