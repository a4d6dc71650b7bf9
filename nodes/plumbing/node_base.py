"""What every node's main() shares: init, spin a MultiThreadedExecutor, stop cleanly.

    def main(args=None):
        return run_node(PerceptionNode, args)

- Parameters come from the command line as usual (`--ros-args --params-file x.yaml -p k:=v`);
  rclpy.init parses them, the node declares them.
- The executor spins in a worker thread while the main thread waits for SIGINT/SIGTERM (or for
  the node to call `request_shutdown()`), so a signal is seen within SIGNAL_POLL_S and not only
  when the executor wakes up. The signal handler only records the signal: one that set the
  Event the main thread waits on could deadlock inside Event.wait (task_learning.lifecycle.signals).
- Shutdown order matters: an executor thread still inside rcl_wait while the executor, the node
  or the interpreter is torn down can hang the process for good (docs/ros.md, "History"). So:
  long callbacks end first
  while the executor still spins (a node's `stop_work()`: the oversight node's waiting questions
  get the safe default, the planner's running goal sends its result); then the worker, which
  spins in short slices, leaves its loop by itself and is joined; then the executor is shut
  down, the node destroyed, and rclpy.shutdown(). A second Ctrl-C while stopping changes
  nothing (no traceback).
- Stopping is bounded: if it is not over within SHUTDOWN_LIMIT_S (less than the grace
  `ros2 launch` gives before SIGTERM), every thread's stack goes to stderr and the process exits
  with code 1, so a hang names itself instead of waiting for SIGKILL
  (task_learning.lifecycle.stop_deadline says why that is not faulthandler's watchdog alone).
- Diagnostics: a node with a `diagnostics()` method (returning task_learning_nodes.plumbing.diagnostics.Check
  rows: LLM endpoint, knowledge base, world, operator queue) gets its checks published every
  DIAGNOSTICS_PERIOD_S on `/diagnostics` (diagnostic_msgs/DiagnosticArray, one status per check
  named "<node>: <check>", what rqt_robot_monitor and Foxglove read), from a timer of its own so a
  slow check (an endpoint probe) never holds the node's callbacks.
- A node that cannot start because of bad parameters or configuration raises TaskLearningError
  or ValueError from its constructor (rclpy raises ParameterException for a value of the wrong
  type): one clear error line, exit code 2, no traceback.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.context import Context
from rclpy.exceptions import InvalidHandle, NameValidationException, ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from task_learning.errors import TaskLearningError
from task_learning.lifecycle.signals import StopSignals
from task_learning.lifecycle.stop_deadline import StopDeadline
from task_learning_nodes.plumbing.rclpy_compat import ActionClient as ActionClient  # the nodes' action client
from task_learning_nodes.plumbing.rclpy_compat import DrainingExecutor, RCLError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_CONFIG = 2

SIGNAL_POLL_S = 0.2  # how often the main thread looks for a stop signal
SPIN_SLICE_S = 0.1  # how long the worker's wait may last before it looks at the stop event
VANISHED_LIMIT = 50  # slices in a row that meet a destroyed entity before the executor counts as failed
DIAGNOSTICS_PERIOD_S = 1.0  # how often /diagnostics is published (a dead LLM endpoint shows within 2 s)
DIAGNOSTICS_TOPIC = "/diagnostics"
SHUTDOWN_LIMIT_S = 9.0  # above the planner's stop_work grace (4 + 4 s), below the 10 s after which
#                         launch sends SIGTERM (config/bringup.yaml)

_stop_event = threading.Event()


T = TypeVar("T")


def request_shutdown() -> None:
    """Ask run_node to stop the node (from a callback, e.g. after a fatal backend error)."""
    _stop_event.set()


def shutdown_requested() -> bool:
    """True once a signal or request_shutdown() asked this process's node to stop: long waits in
    callbacks give up then, so the executor can stop within its few seconds."""
    return _stop_event.is_set()


@contextmanager
def spinning_node(name: str, executor: Callable[..., Executor] = SingleThreadedExecutor) -> Iterator[Node]:
    """A node in an rclpy context of its own, spun by `executor` in a daemon thread while the block
    runs: what a client process (the demo, a bench, the fault probes) sends goals and calls from,
    its own thread free to wait for the answers. Leaving the block stops the executor, destroys
    the node and shuts the context down, so a second one can follow in the same process."""
    context = Context()
    rclpy.init(context=context)
    node = Node(name, context=context)
    spin = executor(context=context)
    spin.add_node(node)
    spinner = threading.Thread(target=spin.spin, daemon=True)
    spinner.start()
    try:
        yield node
    finally:
        spin.shutdown(timeout_sec=5.0)
        spinner.join(timeout=5.0)
        node.destroy_node()
        rclpy.shutdown(context=context)


def wait_for_future(future: Future, timeout_s: float, *, alive: Callable[[], bool] | None = None,
                    stop: Callable[[], bool] | None = None, poll_s: float = 0.25) -> str:
    """Block a worker thread until `future` completes while the executor spins elsewhere.

    Returns "done", or gives up early: "stopped" when `stop()` (or the process's shutdown) says
    so, "gone" when `alive()` turns false (the serving node left the graph), "timeout" after
    `timeout_s`. The caller turns these into its own error naming the node it waited for."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    deadline = time.monotonic() + max(0.0, timeout_s)
    while not done.wait(min(poll_s, max(0.0, deadline - time.monotonic()))):
        if _stop_event.is_set() or (stop is not None and stop()):
            return "stopped"
        if alive is not None and not alive():
            # One last look: the answer may have arrived as the server left.
            return "done" if done.is_set() else "gone"
        if time.monotonic() >= deadline:
            return "timeout"
    return "done"


def result_of(future: Future[T]) -> T:
    """A completed future's result. rclpy types it Optional (a cancelled future holds none); a
    done callback or a finished wait that finds none is a failed call, said as one."""
    value = future.result()
    if value is None:
        raise RuntimeError("the call completed without a result (its future was cancelled)")
    return value


def init_problem(exc: BaseException) -> str:
    """What went wrong when rcl would not initialise, in one line a user can act on."""
    if os.environ.get("ROS_SECURITY_ENABLE", "").lower() == "true":
        keystore = os.environ.get("ROS_SECURITY_KEYSTORE") or "(ROS_SECURITY_KEYSTORE not set)"
        enclave = os.environ.get("ROS_SECURITY_ENCLAVE_OVERRIDE") or "none given"
        return (f"ROS security is enabled (ROS_SECURITY_ENABLE=true) but could not be set up for this node "
                f"(keystore {keystore}, enclave {enclave}: start it with --ros-args --enclave "
                f"/task_learning/<node>; the PyPI Fast DDS has no security plugins). Unset ROS_SECURITY_ENABLE, "
                f"or see docs/safety.md, 'Locking the graph down' ({exc})")
    return f"rcl could not be initialised ({exc}); check the ROS_* environment variables and --ros-args"


def run_node(
    factory: Callable[[], Node],
    args: Sequence[str] | None = None,
    *,
    name: str = "",
    num_threads: int | None = None,
    signals: StopSignals | None = None,
) -> int:
    """Create the node with `factory` (`name` names it in a start-up error), spin it until a signal or request_shutdown(), clean up.

    `signals`: SIGINT/SIGTERM handlers already installed (task_learning_nodes.plumbing.entry installs them
    before the node's imports, so a signal that arrived since is not lost); else run_node
    installs its own. Either way they are restored at the end.

    Returns the process exit code: 0 after a signal, 1 if the executor failed or the node set
    `failed` (it gave up on its own, then called request_shutdown()), 2 if the node could not be
    created (bad parameters or configuration)."""
    _stop_event.clear()
    if signals is None:
        signals = StopSignals()
        signals.install()
    try:
        rclpy.init(args=list(args) if args is not None else sys.argv,
                   signal_handler_options=SignalHandlerOptions.NO)
    except RCLError as exc:  # e.g. ROS security on without a usable enclave: one line, no traceback
        signals.restore()
        print(f"[{name or 'node'}] cannot start: {init_problem(exc)}", file=sys.stderr, flush=True)
        return EXIT_BAD_CONFIG
    node: Node | None = None
    spinner: _Spinner | None = None
    deadline = StopDeadline(SHUTDOWN_LIMIT_S)
    try:
        node = _create_node(factory, name)
        if node is None:
            return EXIT_BAD_CONFIG
        diagnostics = DiagnosticsPublisher.attach(node)
        # A node that must serve more callbacks at once than the default says how many (the
        # diagnostics timer takes one more).
        threads = num_threads or getattr(node, "executor_threads", None)
        spinner = _Spinner(node, (threads + 1) if threads and diagnostics else threads)
        _wait_for_stop(signals)
        deadline.arm()
        return _finish_work(node, spinner.failure)
    finally:
        _stop_event.set()  # also when the main thread left on an exception
        if spinner is not None:
            spinner.stop()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        signals.restore()
        deadline.disarm()


def _create_node(factory: Callable[[], Node], name: str) -> Node | None:
    """The node, or None after one error line when its parameters or configuration are bad."""
    try:
        return factory()
    except (TaskLearningError, ValueError, ParameterException, NameValidationException) as exc:
        logger = rclpy.logging.get_logger(name or getattr(factory, "__name__", "node"))
        logger.error(f"cannot start: {exc}")
        return None


class _Spinner:
    """run_node's executor, spun by a worker thread in short slices until stop(): the main thread
    stays free to watch for signals. A worker that fails records why and asks the process to stop."""

    def __init__(self, node: Node, num_threads: int | None) -> None:
        self.executor = DrainingExecutor(num_threads=num_threads)
        self.executor.add_node(node)
        self.failure: list[BaseException] = []
        self._halt = threading.Event()  # the worker's own end: after stop_work, which needs it spinning
        self._worker = threading.Thread(target=self._spin, name="executor", daemon=True)
        self._worker.start()

    def _spin(self) -> None:
        vanished = 0  # slices in a row that met a destroyed entity
        try:
            while not self._halt.is_set() and rclpy.ok():
                try:
                    self.executor.spin_once(timeout_sec=SPIN_SLICE_S)
                    vanished = 0
                except InvalidHandle:
                    # an entity destroyed by another thread (a recorder's subscriptions at the end
                    # of a task) between the executor's snapshot and its use: rclpy skips such an
                    # entity in most places, not all (a PerformTask's planner died of it at load
                    # 30); the next slice no longer sees it. Only a run of them is a failure.
                    vanished += 1
                    if vanished >= VANISHED_LIMIT:
                        raise
        except ExternalShutdownException:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread, then we stop
            self.failure.append(exc)
        finally:
            _stop_event.set()

    def stop(self) -> None:
        self._halt.set()
        self._worker.join(timeout=SHUTDOWN_LIMIT_S)  # leaves its loop within a slice of the stop
        self.executor.shutdown(timeout_sec=5.0)  # waits for the callbacks still running


def _wait_for_stop(signals: StopSignals) -> None:
    """Until a signal, request_shutdown() or the worker's end."""
    while not _stop_event.wait(SIGNAL_POLL_S) and not signals.received:
        pass
    _stop_event.set()  # here, not in the signal handler (see task_learning.lifecycle.signals)


def _finish_work(node: Node, failure: list[BaseException]) -> int:
    """End the node's long-running callbacks (a PerformTask, a question waiting for the operator)
    at their next check, so they do not hold the executor's shutdown; the exit code."""
    stop_work = getattr(node, "stop_work", None)
    if callable(stop_work):
        stop_work()
    if failure:
        node.get_logger().error(f"executor failed: {failure[0]!r}")
        return EXIT_FAILED
    if getattr(node, "failed", False):  # it gave up on its own (said why) and asked to stop
        return EXIT_FAILED
    return EXIT_OK


class DiagnosticsPublisher:
    """Publishes a node's `diagnostics()` checks on /diagnostics, from a timer in a callback group
    of its own. A check that raises is reported as an ERROR status naming the exception."""

    def __init__(self, node: Node, checks: Callable[[], Sequence[Any]], period_s: float = DIAGNOSTICS_PERIOD_S) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

        self._node = node
        self._checks = checks
        self._array = DiagnosticArray
        self.publisher = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self.timer = node.create_timer(period_s, self.publish, callback_group=MutuallyExclusiveCallbackGroup())

    @classmethod
    def attach(cls, node: Node) -> "DiagnosticsPublisher | None":
        checks = getattr(node, "diagnostics", None)
        return cls(node, checks) if callable(checks) else None

    def publish(self) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

        from task_learning_nodes.plumbing.diagnostics import Check, Level

        name = self._node.get_name()
        try:
            checks = list(self._checks())
        except Exception as exc:  # noqa: BLE001 - a broken check is itself a diagnosis
            checks = [Check("diagnostics", Level.ERROR, f"checks failed: {type(exc).__name__}: {exc}")]
        array = self._array()
        array.header.stamp = self._node.get_clock().now().to_msg()
        array.status = [DiagnosticStatus(level=bytes([int(c.level)]), name=f"{name}: {c.name}",
                                         message=str(c.message)[:500], hardware_id=name,
                                         values=[KeyValue(key=str(k), value=str(v)) for k, v in c.values.items()])
                        for c in checks]
        self.publisher.publish(array)


class LatestWorldState(Generic[T]):
    """The most recent world state from perception's `world_state` topic, converted once on
    arrival (to whatever form the node works with), or an initial value (a scene's start) until
    the first message. A malformed message is logged and ignored: the node keeps its last state.
    """

    def __init__(self, node: Node, topic: str, convert: Callable[[Any], T], *,
                 transient_local: bool = False, initial: T | None = None, initial_source: str = "none",
                 callback_group: CallbackGroup | None = None) -> None:
        from task_learning_interfaces.msg import WorldState as WorldStateMsg
        from task_learning_nodes.plumbing.qos import world_state_subscription

        self._node = node
        self._convert = convert
        self._lock = threading.Lock()
        self._value: T | None = initial
        self.source = initial_source
        self.received_at: float | None = None  # time.monotonic() of the last message (diagnostics)
        node.create_subscription(WorldStateMsg, topic, self._on_message,
                                 world_state_subscription(transient_local),
                                 callback_group=callback_group)

    def _on_message(self, msg: Any) -> None:
        try:
            value = self._convert(msg)
        except (ValueError, KeyError, TypeError) as exc:
            self._node.get_logger().warning(f"ignoring a malformed world_state message: {exc}")
            return
        with self._lock:
            self._value = value
            self.source = "world_state topic"
            self.received_at = time.monotonic()

    def get(self) -> T | None:
        with self._lock:
            return self._value


def stop_process_groups(procs: Sequence[subprocess.Popen], timeout_s: float = 30.0) -> None:
    """Stop processes started with start_new_session=True (a bringup, an operator client): SIGINT
    to those still running, so each stops its graph in order; a process that has not exited
    within `timeout_s` gets SIGKILL for its whole group, so no node it started is left behind."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
