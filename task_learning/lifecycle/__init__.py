"""The process lifecycle: stopping a run between actions (cancellation), SIGINT/SIGTERM as a
stop request (signals), a bound on how long stopping may take (stop_deadline), and the child
processes the stack starts and owns (child_process)."""
from task_learning import lazy_exports

_EXPORTS = {
    "DependencyFailed": "task_learning.lifecycle.cancellation",
    "RunStopped": "task_learning.lifecycle.cancellation",
    "StopToken": "task_learning.lifecycle.cancellation",
    "StoppableWorld": "task_learning.lifecycle.cancellation",
    "describe_exit": "task_learning.lifecycle.child_process",
    "die_with_parent": "task_learning.lifecycle.child_process",
    "StopSignals": "task_learning.lifecycle.signals",
    "StopDeadline": "task_learning.lifecycle.stop_deadline",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
