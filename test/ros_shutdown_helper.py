"""A node for test/nodes/test_node_base.py, run as `python test/ros_shutdown_helper.py MODE` through
task_learning_nodes.plumbing.node_base.run_node:

- `busy`: a 50 Hz timer publishing to a topic it subscribes to itself, so a signal lands while
  the executor works;
- `stuck`: like busy, and its `stop_work()` never returns (a long callback that ignores the stop),
  which run_node must bound: every thread's stack on stderr, exit code 1.
"""
from __future__ import annotations

import sys
import threading

from rclpy.node import Node

from task_learning_interfaces.msg import KeyValue
from task_learning_nodes.plumbing.node_base import run_node


class ShutdownProbe(Node):
    def __init__(self, mode: str) -> None:
        super().__init__("shutdown_probe")
        self.mode = mode
        self.received = 0
        self.pub = self.create_publisher(KeyValue, "probe", 10)
        self.create_subscription(KeyValue, "probe", self._receive, 10)
        self.create_timer(0.02, lambda: self.pub.publish(KeyValue(key="tick", value="x" * 1000)))
        self.get_logger().info(f"probe ready ({mode})")

    def _receive(self, _msg: KeyValue) -> None:
        self.received += 1
        if self.received == 25:
            self.get_logger().info("probe busy")

    def stop_work(self) -> None:
        if self.mode == "stuck":
            threading.Event().wait()  # never set: the hang run_node must end


def main() -> int:
    mode = sys.argv[1]
    return run_node(lambda: ShutdownProbe(mode), sys.argv[2:], name="shutdown_probe")


if __name__ == "__main__":
    raise SystemExit(main())
