"""What the launch files in launch/ share: the exit policy of a node and the default database.

Imported by `ros2 launch` (the launch files), never by a node; it needs the `launch` package.
"""
from __future__ import annotations

from typing import Any, Callable

from launch.actions import LogInfo, Shutdown

from task_learning.lifecycle.child_process import describe_exit

PACKAGE = "task_learning"


class NodeDied(RuntimeError):
    """A node exited on its own: `ros2 launch` prints this error and exits with code 1."""


def default_db() -> str:
    """The graph's default knowledge base (task_learning.kb.default_db_path: the same for
    `ros2 launch`, `ros2 run` and `task-learning bringup`)."""
    from task_learning.kb import default_db_path

    return str(default_db_path())


def on_node_exit(name: str, policy: str) -> Callable[[Any, Any], Any]:
    """The `on_exit` of node `name`: nothing during a shutdown (launch itself reports "finished
    cleanly" or "died"); otherwise, under policy "shutdown" (config/bringup.yaml), a death ends
    the launch with an error line and exit code 1 (launch stops the other nodes), and a clean
    exit stops the others; under "continue" a death is logged and the others keep running."""

    def handler(event: Any, context: Any) -> Any:
        if context.is_shutdown:
            return None
        code = event.returncode
        if code != 0:
            if policy == "shutdown":
                raise NodeDied(f"node {name} died ({describe_exit(code)}; its error is above): "
                               f"stopping the other nodes (on_node_exit: shutdown)")
            return [LogInfo(msg=f"error: node {name} died ({describe_exit(code)}); the others keep "
                                f"running (on_node_exit: continue)")]
        if policy == "shutdown":
            return [Shutdown(reason=f"node {name} exited")]
        return None

    return handler

