"""The one way tests start a ROS 2 graph (not a test module itself).

A test asks for the `ros_graph` fixture (or a module's shared `ros_module_graph`, see
test/conftest.py) and gets a `RosGraph`: a domain id of its own, its own ROS_HOME, ROS_LOG_DIR and
TMPDIR, and helpers that start node processes (`start`, `start_node`), run short commands (`run`)
and open clients in this process (`client`). Every child's stdout and stderr is drained by a
reader thread per pipe (a child never blocks on a full pipe), kept for assertions, and attached to
the report when the test fails; whatever still runs at teardown is stopped (SIGINT, then SIGKILL
of its process group).

Waits are on conditions with deadlines (`wait_until`, `NodeProcess.wait_for_line`,
`Collector.wait_for`, `wait_future`), never fixed sleeps.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

from task_learning.apps.dds_profile import PROFILE_FILE
from task_learning.inputs.config import config_path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
CLI = str(VENV_BIN / "task-learning")
FASTDDS_PROFILE = config_path(PROFILE_FILE)  # the one the product's nodes run with

# Domain ids the test graphs use (0 is left to a developer's own graph). Valid ROS 2 ids on Linux
# are 0-101 and 215-232; each test takes the next id of its slice (see `domain_ids`). Suites of
# several checkouts run at once on one host each name a range of their own, so their graphs never
# meet: TASK_LEARNING_TEST_DOMAINS=FIRST-LAST (within 1-101).


def domain_range(text: str | None) -> tuple[int, int]:
    """The (first, last) domain ids of TASK_LEARNING_TEST_DOMAINS ("FIRST-LAST"), 1-101 unset."""
    if not text:
        return 1, 101
    first, sep, last = text.partition("-")
    if not (sep and first.strip().isdigit() and last.strip().isdigit()) or not (
        1 <= int(first) <= int(last) <= 101
    ):
        raise ValueError(f"TASK_LEARNING_TEST_DOMAINS: expected FIRST-LAST within 1-101, got {text!r}")
    return int(first), int(last)


DOMAIN_FIRST, DOMAIN_LAST = domain_range(os.environ.get("TASK_LEARNING_TEST_DOMAINS"))
STOP_GRACE_S = 5.0  # how long a node gets to end after SIGINT at teardown before it is killed
REPORT_LINES = 200  # lines of each process's output attached to a failure report
# Services whose requests change nothing: RosClient.call may send one again when its answer is lost.
READ_ONLY_SERVICES = frozenset({"QueryWorld", "GetCompletion", "ListPendingConfirmations"})

T = TypeVar("T")


def domain_ids(worker: str | None = None, seed: int | None = None) -> Iterator[int]:
    """Endless ids for one pytest process: pytest-xdist worker `gwN` of `PYTEST_XDIST_WORKER_COUNT`
    gets its own slice of the range, so workers never share an id; within the slice ids are handed
    out in turn (starting at an offset from `seed`, so two runs on one host rarely start on the
    same id). Every test gets the next one; a test's processes are gone before its id comes round."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker and worker.startswith("gw") and worker[2:].isdigit() else 0
    span = (DOMAIN_LAST - DOMAIN_FIRST + 1) // max(1, count)
    if span < 1:
        raise ValueError(f"TASK_LEARNING_TEST_DOMAINS={DOMAIN_FIRST}-{DOMAIN_LAST} holds fewer ids than the "
                         f"{count} pytest-xdist workers; give at least one id per worker")
    first = DOMAIN_FIRST + (index % max(1, count)) * span
    offset = (seed if seed is not None else os.getpid()) % span
    while True:
        for step in range(span):
            yield first + (offset + step) % span


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll `predicate` until it returns something truthy (returned), or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(interval)


def is_ordered_subsequence(got: Sequence[Any], sent: Sequence[Any]) -> bool:
    """True when `got` is `sent` with some items missing and none added or reordered: what a
    subscriber may see of feedback (late matching, the result overtaking the last messages)."""
    remaining = iter(sent)
    return all(any(item == candidate for candidate in remaining) for item in got)


def wait_future(future: Any, timeout: float, what: str) -> Any:
    """The result of an rclpy future an executor spins in another thread (the nodes' own
    wait_for_future does the waiting)."""
    from task_learning_nodes.plumbing.node_base import wait_for_future

    if wait_for_future(future, timeout) != "done":
        future.cancel()
        raise AssertionError(f"{what}: no answer within {timeout} s")
    return future.result()


class NodeProcess:
    """A child process in its own process group (so a test can signal it like a terminal would,
    and teardown can kill everything it started), its output drained by one thread per pipe."""

    def __init__(self, args: Sequence[str], env: dict[str, str], name: str | None = None,
                 cwd: Path = ROOT, stdin: str | None = None) -> None:
        self.args = [str(a) for a in args]
        self.name = name or _short_name(self.args)
        self.proc = subprocess.Popen(
            self.args, env=env, cwd=cwd, text=True, start_new_session=True, bufsize=1,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._lines: list[tuple[str, str]] = []  # (stream, line) in the order they were read
        self._cond = threading.Condition()
        self._readers = [threading.Thread(target=self._drain, args=(pipe, stream), daemon=True,
                                          name=f"drain-{self.name}-{stream}")
                         for pipe, stream in ((self.proc.stdout, "stdout"), (self.proc.stderr, "stderr"))]
        for reader in self._readers:
            reader.start()
        if stdin is not None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(stdin)
                self.proc.stdin.close()
            except BrokenPipeError:  # it ended before reading its input: its output says why
                pass

    def _drain(self, pipe: Any, stream: str) -> None:
        for line in pipe:
            with self._cond:
                self._lines.append((stream, line.rstrip("\n")))
                self._cond.notify_all()
        pipe.close()

    # -- Popen's face ---------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        return self.proc.poll()

    def send_signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    # -- output ---------------------------------------------------------------------------------

    def lines(self, stream: str | None = None) -> list[str]:
        with self._cond:
            return [line for s, line in self._lines if stream is None or s == stream]

    @property
    def output(self) -> str:
        """stdout and stderr interleaved as they were read."""
        return "\n".join(self.lines())

    @property
    def stdout(self) -> str:
        return "\n".join(self.lines("stdout"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines("stderr"))

    def wait_for_line(self, pattern: str, timeout: float = 30.0) -> re.Match:
        """The first output line matching `pattern`; fails when the process ends without one or the
        deadline passes."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for _stream, line in self._lines[seen:]:
                    match = regex.search(line)
                    if match:
                        return match
                seen = len(self._lines)
                finished = self.proc.poll() is not None and not any(r.is_alive() for r in self._readers)
                left = deadline - time.monotonic()
                if finished or left <= 0:
                    why = f"exited with {self.proc.returncode}" if finished else f"not within {timeout} s"
                    raise AssertionError(f"{self.name}: no line matching {pattern!r} ({why}):\n"
                                         + self._tail())
                self._cond.wait(min(left, 0.2))

    def _tail(self, lines: int = REPORT_LINES) -> str:
        return "\n".join(line for _s, line in self._lines[-lines:])

    # -- ending ---------------------------------------------------------------------------------

    def wait(self, timeout: float) -> int:
        """Wait for the process to end by itself and for its pipes to be drained; fails (and kills
        it) after `timeout` s."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not end within {timeout} s:\n{self.output}") from None
        for reader in self._readers:
            reader.join(timeout=5.0)
        return code

    def stop(self, sig: int | None = signal.SIGINT, timeout: float = 15.0) -> tuple[int, str]:
        """Signal the process (None: let it end by itself) and wait; returns (exit code, output)."""
        if sig is not None:
            self.send_signal(sig)
        code = self.wait(timeout)
        return code, self.output

    def kill(self) -> None:
        """SIGKILL the whole process group (the node and anything it started)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for reader in self._readers:
            reader.join(timeout=5.0)

    def close(self) -> None:
        """Teardown: SIGINT, a short grace, then SIGKILL of the group (also when the leader is
        gone but something it started is not)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def report(self) -> str:
        code = self.proc.poll()
        state = "running" if code is None else f"exit code {code}"
        return f"$ {' '.join(self.args)}\n({state})\n{self._tail()}"


def _short_name(args: Sequence[str]) -> str:
    if "-m" in args and args.index("-m") + 1 < len(args):
        return args[args.index("-m") + 1].rsplit(".", 1)[-1]
    if len(args) > 1 and args[1] in ("bringup", "operator", "run", "demo"):
        return f"{Path(args[0]).name} {args[1]}"
    return Path(args[0]).name if args else "?"


class RosGraph:
    """A ROS 2 graph of one test (or of one module's tests): its domain id, its ROS_HOME, log and
    temporary folders, the processes started in it and the clients opened in this process."""

    def __init__(self, domain_id: int, root: Path, name: str = "graph") -> None:
        self.domain_id = domain_id
        self.name = name
        self.root = root
        self.home = root / "ros_home"
        self.log_dir = self.home / "log"
        self.tmp = root / "tmp"
        for folder in (self.log_dir, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)
        self.processes: list[NodeProcess] = []
        self.clients: list[RosClient] = []

    @property
    def env(self) -> dict[str, str]:
        """The variables that make a process part of this graph (set in this process too by the
        fixtures, for the duration of the test)."""
        return {
            "ROS_DOMAIN_ID": str(self.domain_id),
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
            # UDP only: Fast DDS shared memory lives in /dev/shm, which a network namespace does
            # not separate, so it could join graphs that loopback-only discovery keeps apart.
            "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4",
            # The product's profile (see the file): set here for processes that are not started
            # through bringup or a launch file, and for this test process's own clients.
            "FASTDDS_DEFAULT_PROFILES_FILE": str(FASTDDS_PROFILE),
            "ROS_HOME": str(self.home),
            "ROS_LOG_DIR": str(self.log_dir),
            "TMPDIR": str(self.tmp),
            "PYTHONUNBUFFERED": "1",
            "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
        }

    def child_env(self, **extra: str) -> dict[str, str]:
        """The environment of a child: this one, the graph's variables, the source tree first on
        PYTHONPATH."""
        env = dict(os.environ, **self.env)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.update(extra)
        return env

    def start(self, args: Sequence[str], name: str | None = None, stdin: str | None = None,
              cwd: Path = ROOT, **env: str) -> NodeProcess:
        proc = NodeProcess(args, self.child_env(**env), name=name, cwd=cwd, stdin=stdin)
        self.processes.append(proc)
        return proc

    def start_node(self, module: str, *ros_args: str, params_file: str | None = None,
                   name: str | None = None) -> NodeProcess:
        """`python -m task_learning_nodes.nodes.<module> --ros-args [--params-file config/nodes/<f>] ...`;
        `ros_args` are the rest after --ros-args (e.g. "-p", "scene:=tidy_kitchen")."""
        args = [sys.executable, "-m", f"task_learning_nodes.nodes.{module}", "--ros-args"]
        if params_file:
            args += ["--params-file", str(ROOT / "config" / "nodes" / params_file)]
        return self.start(args + list(ros_args), name=name or module)

    def start_cli(self, *args: str, name: str | None = None, stdin: str | None = None) -> NodeProcess:
        """`task-learning <args>` as a process of this graph."""
        return self.start([CLI, *args], name=name or f"task-learning {args[0] if args else ''}",
                          stdin=stdin)

    def run(self, args: Sequence[str], timeout: float = 60.0, input: str | None = None,
            name: str | None = None) -> NodeProcess:
        """Run a short command to its end (its output drained like a node's); fails when it does
        not end within `timeout` s. The returned process has `.returncode`, `.stdout`, `.stderr`."""
        proc = self.start(args, name=name, stdin=input if input is not None else None)
        proc.wait(timeout)
        return proc

    def client(self, name: str = "test_client") -> "RosClient":
        client = RosClient(self.domain_id, name)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in reversed(self.clients):
            client.close()
        self.clients.clear()
        for proc in reversed(self.processes):
            proc.close()

    def reports(self) -> list[tuple[str, str]]:
        """(title, text) of every process's output, for a failure report."""
        return [(f"{self.name} (ROS_DOMAIN_ID={self.domain_id}) process {p.name} pid {p.pid}", p.report())
                for p in self.processes]


class RosClient:
    """The test's own node in its own rclpy context, spun by a MultiThreadedExecutor thread."""

    def __init__(self, domain_id: int, name: str = "test_client") -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.node import Node

        self._rclpy = rclpy
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = Node(name, context=self.context)
        self.executor = MultiThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True, name=f"spin-{name}")
        self.thread.start()
        self._closed = False
        self._clients: dict[tuple[Any, str], Any] = {}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # the node is destroyed only once the spin thread has ended: destroyed under a spinning
        # executor, the thread died with "cannot use Destroyable" (seen at load: 5 s was too short)
        self.executor.shutdown(timeout_sec=30.0)
        self.thread.join(timeout=30.0)
        self.node.destroy_node()
        self._rclpy.shutdown(context=self.context)

    wait_future = staticmethod(wait_future)

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 30.0) -> Any:
        """One service call; the client is made once per (type, name) and kept, so the server
        discovers it once. A server that has not yet matched a new client's response reader
        drops the response (Fast DDS: "failed to send response (timeout)"), seen under load: a
        read-only request (READ_ONLY_SERVICES) is therefore sent again, every third of the
        timeout, until the deadline; any other is sent once."""
        from task_learning_nodes.plumbing.node_base import wait_for_future

        key = (srv_type, name)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self.node.create_client(srv_type, name)
        deadline = time.monotonic() + timeout
        if not client.wait_for_service(timeout_sec=timeout):
            raise AssertionError(f"service {name} not available within {timeout} s")
        read_only = srv_type.__name__ in READ_ONLY_SERVICES
        while True:
            left = deadline - time.monotonic()
            attempt = min(left, timeout / 3) if read_only else left
            future = client.call_async(request)
            if wait_for_future(future, max(0.0, attempt)) == "done":
                return future.result()
            client.remove_pending_request(future)  # a late answer to it is dropped
            if not read_only or time.monotonic() >= deadline:
                raise AssertionError(f"service {name}: no answer within {timeout} s")

    def send_goal(self, action_type: Any, name: str, goal: Any, timeout: float = 30.0) -> tuple[Any, list]:
        """Send a goal; returns (result message, feedback messages received so far). ROS 2 does not
        order feedback against the result: the last feedback messages may arrive after the result,
        so assert on feedback only what holds for any prefix of it."""
        from task_learning_nodes.plumbing.node_base import ActionClient
        from task_learning_nodes.plumbing.qos import action_client_qos

        feedback: list = []
        # One client per action, kept for the test: destroying one while the executor adds it to
        # a wait set killed the executor thread ("action client pointer is invalid").
        key = (action_type, name)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = ActionClient(self.node, action_type, name, **action_client_qos())
        if not client.wait_for_server(timeout_sec=timeout):
            raise AssertionError(f"action server {name} not available within {timeout} s")
        handle = wait_future(client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(f.feedback)),
                             timeout, f"goal to {name}")
        assert handle.accepted, f"goal to {name} rejected"
        wrapped = wait_future(handle.get_result_async(), timeout, f"result of {name}")
        return wrapped.result, feedback

    def subscribe_collect(self, msg_type: Any, topic: str, qos: Any = 10) -> "Collector":
        collector = Collector()
        collector.subscription = self.node.create_subscription(msg_type, topic, collector.add, qos)
        return collector

    def publisher_matched(self, msg_type: Any, topic: str, qos: Any = 10, timeout: float = 30.0,
                          subscribers: int = 1) -> Any:
        """A publisher on `topic`, returned once `subscribers` subscriptions have matched it."""
        publisher = self.node.create_publisher(msg_type, topic, qos)
        wait_until(lambda: publisher.get_subscription_count() >= subscribers, timeout,
                   f"a subscriber to {topic}")
        return publisher


def _summary(msg: Any) -> str:
    """A failure message's view of a message: its status and how many objects, not a 1 MB repr."""
    parts = [type(msg).__name__]
    for field in ("status", "message"):
        if isinstance(getattr(msg, field, None), str):
            parts.append(f"{field}={getattr(msg, field)[:300]!r}")
    objects = getattr(msg, "objects", None)
    if objects is not None:
        parts.append(f"{len(objects)} objects")
    stamp = getattr(getattr(msg, "header", None), "stamp", None)
    if stamp is not None:
        parts.append(f"stamp {stamp.sec}.{stamp.nanosec:09d}")
    return " ".join(parts)


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

    def wait_for(self, predicate: Callable[[Any], bool] = lambda _m: True, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.messages:
                    if predicate(msg):
                        return msg
                left = deadline - time.monotonic()
                if left <= 0:
                    last = f"; the last: {_summary(self.messages[-1])}" if self.messages else ""
                    raise AssertionError(f"no matching message within {timeout} s ({len(self.messages)} received){last}")
                self._cond.wait(left)
