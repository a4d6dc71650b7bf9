"""Waiting on an rclpy future from a thread that does not spin it (a node's worker thread, a
blocking callback of a MultiThreadedExecutor, a test): the one implementation the nodes and the
tests share."""
from __future__ import annotations

import threading
from typing import Any

from task_learning.errors import TaskLearningError


class RosCallError(TaskLearningError):
    """A service or action of another node did not answer in time."""


def future_done(future: Any, timeout_s: float) -> bool:
    """Block until the future completes (an executor spins it elsewhere); False after
    `timeout_s` seconds."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return done.wait(timeout_s)


def wait_future(future: Any, timeout_s: float, what: str) -> Any:
    """The future's result; RosCallError (the future cancelled) when it does not complete in time."""
    if not future_done(future, timeout_s):
        future.cancel()
        raise RosCallError(f"{what} did not answer within {timeout_s:g} s")
    return future.result()
