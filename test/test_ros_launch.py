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
import sys
import time
from pathlib import Path

import pytest

from task_learning.dds_profile import profile_env

from .ros_testing import RosGraph, wait_until

VENV_BIN = Path(sys.executable).parent
ROS2 = VENV_BIN / "ros2"
CLI = VENV_BIN / "task-learning"
NODES = ("perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner")
EXECUTABLES = tuple(f"{n}_node" for n in NODES)

pytestmark = pytest.mark.skipif(not ROS2.exists(), reason="the ROS 2 tools are not installed (no "
                                "../shared/ros2-tools when `make setup` ran)")


def ros2(graph: RosGraph, *args: str, timeout: float = 60.0):  # noqa: ANN201 (a NodeProcess)
    """`ros2 <args>` in the graph, to its end."""
    return graph.run([str(ROS2), *args], timeout=timeout, name=f"ros2 {args[0]}")


def launch_args(*arguments: str) -> list[str]:
    return [str(ROS2), "launch", "task_learning", "task_learning.launch.py", *arguments]


def node_names(graph: RosGraph) -> set[str]:
    result = ros2(graph, "node", "list", "--no-daemon", "--spin-time", "3", timeout=60)
    return {line.strip().lstrip("/") for line in result.stdout.splitlines() if line.strip()}


# -- the package as the ROS 2 tools see it (no graph) ------------------------------------------

def test_ros2_pkg_finds_the_package_and_its_executables(ros_graph):
    prefix = ros2(ros_graph, "pkg", "prefix", "task_learning")
    assert prefix.returncode == 0, prefix.stderr
    share = Path(prefix.stdout.strip()) / "share" / "task_learning"
    assert (share / "package.xml").is_file() and (share / "config" / "bringup.yaml").is_file()
    assert sorted(p.name for p in (share / "launch").iterdir()) == ["perception.launch.py",
                                                                     "task_learning.launch.py"]
    executables = ros2(ros_graph, "pkg", "executables", "task_learning")
    assert set(EXECUTABLES) <= {line.split()[-1] for line in executables.stdout.splitlines()}


# -- the whole graph through ros2 launch ---------------------------------------------------------

@pytest.fixture(scope="module")
def stack(ros_module_graph):
    """`ros2 launch task_learning task_learning.launch.py scene:=store_groceries` and a simulated
    operator process; the last test of the module stops the launch with SIGINT."""
    launch = ros_module_graph.start(launch_args("scene:=store_groceries"), name="ros2 launch")
    operator = ros_module_graph.start([str(CLI), "operator", "--simulated", "store_groceries", "--wait", "60"],
                                      name="simulated operator")
    return ros_module_graph, launch, operator


def test_launch_starts_the_six_nodes(stack):
    graph, launch, _ = stack
    for executable in EXECUTABLES:
        launch.wait_for_line(rf"\[{executable}-\d+\]: process started", timeout=60)
    names = wait_until(lambda: (n := node_names(graph)) >= set(NODES) and n, 100,
                       "the six nodes in `ros2 node list`")
    assert set(NODES) <= names
    assert "process has died" not in launch.output
    kb = graph.home / "task_learning" / "task_learning.sqlite"
    assert f"knowledge base: {kb}" in launch.output  # not relative to the folder ros2 launch runs in


def test_topic_echo_gets_the_world_state(stack):
    graph, _, _ = stack
    result = ros2(graph, "topic", "echo", "--once", "--no-daemon", "--qos-durability", "transient_local",
                  "/world_state", "task_learning_interfaces/msg/WorldState", timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "scene: store_groceries" in result.stdout and "object_id:" in result.stdout


def test_service_call_query_world_answers(stack):
    graph, _, _ = stack
    result = ros2(graph, "service", "call", "/query_world", "task_learning_interfaces/srv/QueryWorld",
                  "{query: 'fridge'}", timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "success=True" in result.stdout and "Fridge|" in result.stdout


def test_param_describe_documents_a_parameter(stack):
    graph, _, _ = stack
    result = ros2(graph, "param", "describe", "/oversight", "timeout_s", "--no-daemon", "--timeout", "20",
                  timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "Type: double" in out and "Seconds a question waits" in out and "Read only: true" in out
    assert "Min value: 0.1" in out and "Max value: 86400.0" in out


@pytest.mark.timeout(900)
def test_send_goal_perform_task_with_stars_o_and_a_simulated_operator(stack):
    graph, _, operator = stack
    start = time.monotonic()
    result = ros2(graph, "action", "send_goal", "/perform_task", "task_learning_interfaces/action/PerformTask",
                  "{task: 'store groceries', scene: store_groceries, condition: 'STARS+O'}", timeout=800)
    print(f"send_goal perform_task store_groceries STARS+O: {time.monotonic() - start:.1f} s")
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "Goal accepted" in out and "SUCCEEDED" in out, out[-3000:]
    assert re.search(r"completion: 1\.0\b", out), out[-3000:]
    assert re.search(r"yes_no: [1-9]", out), "the operator was asked nothing"
    assert operator.poll() is None, operator.output[-2000:]


def test_sigint_stops_every_node_cleanly(stack):
    """Last test of the module: Ctrl-C to `ros2 launch` alone (the nodes get it from launch)."""
    _, launch, _ = stack
    start = time.monotonic()
    code, text = launch.stop(signal.SIGINT, timeout=90)
    print(f"ros2 launch stopped {time.monotonic() - start:.1f} s after SIGINT")
    assert code == 0, text[-4000:]
    assert "failed to terminate" not in text and "SIGTERM" not in text, text[-4000:]  # SIGINT was enough
    for executable in EXECUTABLES:
        assert re.search(rf"\[{executable}-\d+\]: process has finished cleanly", text), text[-4000:]
    assert "process has died" not in text and "Traceback" not in text


# -- errors end the launch with a reason ---------------------------------------------------------

def test_a_typo_in_nodes_starts_nothing_and_says_so(ros_graph):
    result = ros_graph.run(launch_args("nodes:=percepton,grounding"), timeout=100)
    assert result.returncode == 1, result.output
    assert "unknown node(s) percepton (did you mean perception?)" in result.output
    assert "process started" not in result.output


def test_a_backend_that_is_not_one_is_refused(ros_graph):
    result = ros_graph.run(launch_args("backend:=simbolic"), timeout=100)
    assert result.returncode == 1 and "simbolic" in result.output and "'symbolic'" in result.output, result.output
    assert "process started" not in result.output


def test_a_node_that_dies_ends_the_launch_with_an_error(ros_graph):
    db = ros_graph.tmp / "kb.sqlite"
    result = ros_graph.run(launch_args("nodes:=perception,oversight", "scene:=no_such_scene", f"db:={db}"),
                           timeout=110)
    text = result.output
    assert result.returncode == 1, text[-4000:]
    assert f"knowledge base: {db}" in text
    assert "cannot start" in text and "no_such_scene" in text
    assert re.search(r"node perception died \(exit code 2", text), text[-4000:]
    assert re.search(r"\[oversight_node-\d+\]: process has finished cleanly", text), text[-4000:]


def test_perception_launch_file_starts_and_stops_one_node(ros_graph):
    # No Fast DDS profile chosen (empty counts as unset): the launch file gives the node the stack's.
    launch = ros_graph.start([str(ROS2), "launch", "task_learning", "perception.launch.py", "backend:=symbolic",
                              "scene:=store_groceries"], name="ros2 launch perception",
                             FASTDDS_DEFAULT_PROFILES_FILE="")
    started = launch.wait_for_line(r"\[perception_node-\d+\]: process started with pid \[(\d+)\]", timeout=60)
    launch.wait_for_line("scene store_groceries", timeout=60)
    pid = started.group(1)
    node_env = dict(entry.split("=", 1) for entry in
                    Path(f"/proc/{pid}/environ").read_text(encoding="utf-8").split("\0") if "=" in entry)
    assert node_env["FASTDDS_DEFAULT_PROFILES_FILE"] == profile_env({})["FASTDDS_DEFAULT_PROFILES_FILE"]
    code, text = launch.stop(signal.SIGINT, timeout=60)
    assert code == 0 and re.search(r"\[perception_node-\d+\]: process has finished cleanly", text), text[-3000:]


# -- one node with ros2 run ----------------------------------------------------------------------

def test_ros2_run_starts_a_node_with_its_parameter_file(ros_graph):
    share = Path(ros2(ros_graph, "pkg", "prefix", "task_learning").stdout.strip()) / "share" / "task_learning"
    node = ros_graph.start([str(ROS2), "run", "task_learning", "perception_node", "--ros-args",
                            "--params-file", str(share / "config" / "nodes" / "perception.yaml"),
                            "-p", "scene:=organize_office"], name="ros2 run")
    node.wait_for_line("scene organize_office", timeout=60)
    result = ros2(ros_graph, "param", "get", "/perception", "qos_durability", "--no-daemon", "--timeout", "20",
                  timeout=90)
    assert "transient_local" in result.stdout, result.output  # from the parameter file
    refused = ros2(ros_graph, "param", "set", "/perception", "scene", "tidy_kitchen", "--no-daemon",
                   "--timeout", "20", timeout=90)
    assert "read-only" in refused.output.lower(), refused.output
    os.killpg(node.pid, signal.SIGINT)  # Ctrl-C in the terminal that runs `ros2 run`
    code = node.wait(30)
    assert code == 0 and "Traceback" not in node.output, node.output[-3000:]


@pytest.mark.llm
@pytest.mark.timeout(300)
def test_llm_local_starts_the_llm_server_node_and_points_the_llm_nodes_at_it(ros_graph):
    """`llm:=local`: llama-server (the installed model) as the graph's llm_server node, on a port
    the launch chose, given to goal elicitation as llm_base_url; Ctrl-C stops it with the rest."""
    launch = ros_graph.start(launch_args("nodes:=goal_elicitation", "llm:=local", "scene:=tidy_kitchen"),
                             name="ros2 launch llm")
    serving = launch.wait_for_line(r"serving at (http://127\.0\.0\.1:\d+/v1) \(pid (\d+)", timeout=180)
    url, pid = serving.group(1), int(serving.group(2))
    launch.wait_for_line(r"serving learn_goal: llm local", timeout=120)
    params = ros2(ros_graph, "param", "get", "/goal_elicitation", "llm_base_url", "--no-daemon", timeout=60)
    assert url in params.stdout, params.output
    os.killpg(launch.pid, signal.SIGINT)
    launch.wait(60)
    text = launch.output
    assert re.search(r"\[llm_server_node-\d+\]: process has finished cleanly", text), text[-4000:]
    assert not Path(f"/proc/{pid}").exists()  # llama-server went with its node
