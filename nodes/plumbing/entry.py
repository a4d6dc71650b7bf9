"""The node executables' entry point: SIGINT and SIGTERM are caught before the node is imported.

Importing a node (rclpy, the messages, the stack) takes a second or two, and until `run_node`
installs its handlers Python's default SIGINT handler raises KeyboardInterrupt wherever the
import is: a Ctrl-C to `ros2 launch` or `task-learning bringup` in that window printed a
traceback instead of stopping the node. Here the handlers of `run_node` are installed first,
from a module that imports nothing heavy; a stop that arrives during the import ends the process
quietly with exit code 0 before any node exists, and one that arrives later is handed to
`run_node` with the handlers, so it is never lost between the two.

    perception_node = task_learning_nodes.plumbing.entry:perception_node     (setup.py, console scripts
                                                        generated from plumbing/registry.py)
    python -m task_learning_nodes.plumbing.entry task_learning_nodes.nodes.perception --ros-args ...   (bringup)
"""
from __future__ import annotations

# Only what installing the handlers needs is imported here (no dataclasses: its import compiles
# regular expressions, long enough on a loaded machine for a Ctrl-C to land in it).
import importlib
import sys
from typing import TYPE_CHECKING, Sequence

from task_learning.lifecycle.signals import StopSignals
from task_learning_nodes.plumbing.registry import EXECUTABLES

if TYPE_CHECKING:
    from typing import Protocol

    class NodeMain(Protocol):
        def __call__(self, args: list[str] | None = None, signals: StopSignals | None = None) -> int: ...

USAGE = "usage: python -m task_learning_nodes.plumbing.entry <node module> [--ros-args ...]"


def run(module: str, argv: Sequence[str]) -> int:
    """Install the stop handlers, import `module`, run its `main(argv, signals=...)`."""
    signals = StopSignals()
    signals.install()
    node_main: NodeMain = importlib.import_module(module).main
    if signals.received:
        signals.restore()
        return 0  # stopped before the node existed: nothing to clean up
    return node_main(list(argv), signals=signals)


class NodeEntry:
    """A console script's target: `sys.exit(perception_node())` runs that node."""

    __slots__ = ("module",)

    def __init__(self, module: str) -> None:
        self.module = module

    def __call__(self) -> int:
        return run(self.module, sys.argv)


def __getattr__(name: str) -> NodeEntry:
    """The console scripts' targets (`perception_node`, ...), one per node of the registry."""
    module = EXECUTABLES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return NodeEntry(module)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run(sys.argv[1], [sys.argv[0], *sys.argv[2:]]))
