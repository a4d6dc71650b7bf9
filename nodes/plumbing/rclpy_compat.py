"""The one place the ROS layer touches rclpy's private names, guarded by the rclpy it was written for.

Two rclpy behaviours needed working around (the classes' docstrings say which and why): races in
`rclpy.action.ActionClient` that lose a goal's answer under load, and `MultiThreadedExecutor`'s
shutdown order. Both fixes reach into rclpy's internals (`_client_handle`,
`_pending_goal_requests`, `_goal_sequence_number_to_goal_id`, `_feedback_callbacks`, the
executor's `_executor` thread pool, the `rclpy_implementation` singleton). Internals change without
notice between releases, and a change here would fail silently (a goal whose answer never comes), so
importing this module on an rclpy other than the tested series fails at once with one line naming
both versions; `check_rclpy` also verifies that the private names still exist. To port to another
rclpy: read its ActionClient and MultiThreadedExecutor, adapt the two classes, add the series to
`TESTED_RCLPY`.
"""
from __future__ import annotations

import ast
import importlib.metadata
import inspect
import textwrap
import threading
from typing import Any, Callable

import rclpy.action
from rclpy.executors import MultiThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.task import Future

# rclpy release series (major.minor) whose internals the classes below were written against:
# 9.1 is ROS 2 Kilted's (PyPI's ros-kilted-rclpy).
TESTED_RCLPY = ("9.1",)
# The private attributes the workarounds use, per class: checked so a patch release that renames
# one fails loudly too.
PRIVATE_NAMES = {
    rclpy.action.ActionClient: ("_client_handle", "_pending_goal_requests",
                                "_goal_sequence_number_to_goal_id", "_feedback_callbacks",
                                "_generate_random_uuid", "_remove_pending_goal_request"),
}

RCLError = _rclpy.RCLError


class UnsupportedRclpy(RuntimeError):
    """The installed rclpy is not one the stack's rclpy workarounds were written for."""


def installed_rclpy_version() -> str:
    try:
        return importlib.metadata.version("rclpy")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def check_rclpy(version: str | None = None) -> None:
    """Raise UnsupportedRclpy unless `version` (default: the installed one) is of a tested series
    and the private names the workarounds use exist."""
    version = installed_rclpy_version() if version is None else version
    series = ".".join(version.split(".")[:2])
    if series not in TESTED_RCLPY:
        raise UnsupportedRclpy(
            f"rclpy {version} is installed, but task_learning_nodes.plumbing.rclpy_compat was written for "
            f"rclpy {', '.join(s + '.x' for s in TESTED_RCLPY)}: its workarounds use rclpy internals; "
            "review them for this rclpy and add its series to TESTED_RCLPY")
    for cls, names in PRIVATE_NAMES.items():
        missing = [n for n in names if not hasattr(cls, n) and n not in _instance_attributes(cls)]
        if missing:
            raise UnsupportedRclpy(f"rclpy {version}: {cls.__qualname__} lacks {', '.join(missing)}, "
                                   "which task_learning_nodes.plumbing.rclpy_compat uses")


def _instance_attributes(cls: type) -> set[str]:
    """Names `cls.__init__` assigns on self (instance attributes are not on the class)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(vars(cls)["__init__"])))
    except (KeyError, OSError, TypeError, SyntaxError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names.update(t.attr for t in targets
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self")
    return names


check_rclpy()


class ActionClient(rclpy.action.ActionClient):
    """rclpy's ActionClient, safe to use while an executor spins its node in another thread.

    Two races in rclpy 9.1 (kilted), both seen under load as a goal whose answer never came:
    - rclpy adds the client to the node's waitables before it creates the lock its
      get_num_entities takes, so an executor thread building its wait set in between dies with
      AttributeError '_lock' and the node hears nothing more. Here the lock exists first.
    - send_goal_async registers one future for the goal's sequence number under the lock, then,
      after the lock, a second one it returns. A goal response the executor takes in between
      (an action server answering at once on a loaded machine) completes the first future, and
      the returned one never completes: the caller waits out its timeout although the server
      accepted the goal and runs it. Here one future is registered, under the lock, and the
      feedback callback is in place before the goal is sent (rclpy adds it after, so the first
      feedback could be dropped)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def send_goal_async(self, goal: Any, feedback_callback: Callable[[Any], None] | None = None,
                        goal_uuid: Any = None) -> Future:
        if not isinstance(goal, self._action_type.Goal):
            raise TypeError(f"expected a {self._action_type.Goal.__name__} goal, got {type(goal).__name__}")
        request = self._action_type.Impl.SendGoalService.Request()
        request.goal_id = self._generate_random_uuid() if goal_uuid is None else goal_uuid
        request.goal = goal
        future: Future = Future()
        goal_key = bytes(request.goal_id.uuid)
        with self._lock:
            if feedback_callback is not None:
                self._feedback_callbacks[goal_key] = feedback_callback
            try:
                sequence_number = self._client_handle.send_goal_request(request)
                if sequence_number in self._pending_goal_requests:
                    raise RuntimeError(f"sequence {sequence_number} conflicts with a pending goal request")
            except BaseException:
                self._feedback_callbacks.pop(goal_key, None)  # no goal the caller can follow
                raise
            self._pending_goal_requests[sequence_number] = future
            self._goal_sequence_number_to_goal_id[sequence_number] = request.goal_id
            future.add_done_callback(self._remove_pending_goal_request)
            self.add_future(future)  # so the executor wakes for it
        return future



class DrainingExecutor(MultiThreadedExecutor):
    """A MultiThreadedExecutor whose shutdown lets the callbacks already handed to its threads
    finish before it destroys its guard condition.

    rclpy's (Kilted) shutdown destroys the guard first (its wait for outstanding work is skipped:
    `_is_shutdown` is set just before it is tested) and joins the threads after, so a callback
    still starting on a thread then triggers the destroyed guard, and the task's InvalidHandle
    is printed at exit as "The following exception was never retrieved: cannot use Destroyable
    because destruction was requested". The spin loop has ended when run_node calls this, so nothing new is handed out."""

    def shutdown(self, timeout_sec: float | None = None, *, wait_for_threads: bool = True) -> bool:
        pool = getattr(self, "_executor", None)  # rclpy's thread pool (a concurrent.futures one)
        if pool is not None and wait_for_threads:
            pool.shutdown(wait=True)
        return super().shutdown(timeout_sec, wait_for_threads=wait_for_threads)


