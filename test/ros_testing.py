"""Helpers for tests that run a real ROS 2 graph across OS processes (not a test module itself).

Each test module passes its own ROS_DOMAIN_ID, so graphs of tests running at the same time on this
machine do not see each other; discovery stays on this host.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import rclpy
from rclpy.action import ActionClient
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def ros_env(domain_id: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               ROS_HOME=str(ROOT / ".ros"), ROS_LOG_DIR=str(ROOT / ".ros" / "log"),
               PYTHONUNBUFFERED="1")
    return env


@contextlib.contextmanager
def ros_environ(extra: dict[str, str]) -> Iterator[dict[str, str]]:
    """Set a ROS graph's variables (domain id, ROS_HOME, ...) in this process for the duration,
    and yield the environment for child processes (the source tree first on PYTHONPATH)."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def start_process(args: list[str], domain_id: int, **kwargs: Any) -> subprocess.Popen:
    """A child process in its own process group (so a test can signal it like a terminal would)."""
    return subprocess.Popen(args, env=ros_env(domain_id), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, **kwargs)


def stop_process(proc: subprocess.Popen, sig: int | None = signal.SIGINT,
                 timeout: float = 10.0) -> tuple[int, str]:
    """Signal the process (sig None: let it end by itself), wait for it; returns (exit code, its
    output). Kills it if it hangs."""
    if sig is not None and proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"process {proc.args} did not stop within {timeout} s:\n{out}")
    return proc.returncode, out or ""


class RosClient:
    """The test's own node in its own rclpy context, spun by a MultiThreadedExecutor thread."""

    def __init__(self, domain_id: int, name: str = "test_client") -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = Node(name, context=self.context)
        self.executor = MultiThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    @staticmethod
    def wait_future(future: Any, timeout: float, what: str) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            raise AssertionError(f"{what}: no answer within {timeout} s")
        return future.result()

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 10.0) -> Any:
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise AssertionError(f"service {name} not available within {timeout} s")
            return self.wait_future(client.call_async(request), timeout, f"service {name}")
        finally:
            self.node.destroy_client(client)

    def send_goal(self, action_type: Any, name: str, goal: Any, timeout: float = 10.0) -> tuple[Any, list]:
        """Send a goal; returns (result message, feedback messages received)."""
        feedback: list = []
        client = ActionClient(self.node, action_type, name)
        try:
            if not client.wait_for_server(timeout_sec=timeout):
                raise AssertionError(f"action server {name} not available within {timeout} s")
            handle = self.wait_future(client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(f.feedback)),
                                      timeout, f"goal to {name}")
            assert handle.accepted, f"goal to {name} rejected"
            wrapped = self.wait_future(handle.get_result_async(), timeout, f"result of {name}")
            return wrapped.result, feedback
        finally:
            client.destroy()

    def subscribe_collect(self, msg_type: Any, topic: str, qos: QoSProfile | int = 10) -> "Collector":
        collector = Collector()
        collector.subscription = self.node.create_subscription(msg_type, topic, collector.add, qos)
        return collector


class Collector:
    """Messages received on one topic, with a wait for the first one matching a condition."""

    def __init__(self) -> None:
        self.messages: list = []
        self._cond = threading.Condition()
        self.subscription: Any = None

    def add(self, msg: Any) -> None:
        with self._cond:
            self.messages.append(msg)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[Any], bool] = lambda _m: True, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.messages:
                    if predicate(msg):
                        return msg
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching message within {timeout} s ({len(self.messages)} received)")
                self._cond.wait(left)
