"""The real ROS 2 tools on this package: `ros2 launch`, `ros2 run`, `ros2 node|topic|service|
param|action|pkg`, exactly as docs/ros.md's "In this venv" commands use them.

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

from task_learning.apps.dds_profile import profile_env

from ..readme_commands import ACTIVATE, printed, readme_block, readme_ros2_commands, shell
from ..ros_testing import RosGraph, wait_until

VENV_BIN = Path(sys.executable).parent
ROS2 = VENV_BIN / "ros2"
CLI = VENV_BIN / "task-learning"
NODES = ("perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner")
EXECUTABLES = tuple(f"{n}_node" for n in NODES)

pytestmark = pytest.mark.skipif(not ROS2.exists(), reason="the ROS 2 tools are not installed (no "
                                "../shared/ros2-tools when `make setup` ran)")


def ros2(graph: RosGraph, *args: str, timeout: float = 60.0):
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
    assert sorted(p.name for p in (share / "launch").iterdir()) == ["perception.launch.py", "robot.launch.py",
                                                                     "sim.launch.py", "task_learning.launch.py"]
    executables = ros2(ros_graph, "pkg", "executables", "task_learning")
    assert set(EXECUTABLES) <= {line.split()[-1] for line in executables.stdout.splitlines()}


# -- the whole graph through ros2 launch: the README's commands, exactly as printed ----------------

VENV_BLOCK = readme_block(ACTIVATE, "ros2 launch ")


def run_printed(graph: RosGraph, command: str, timeout: float = 120.0):
    return graph.run(shell(command), timeout=timeout, name=command.split("  #")[0][:60])


# The README's other ros2 commands, and where each is run (or why it cannot be here).
ELSEWHERE = {
    "ros2 security ": "sros2 is not installed here (no wheel); docs/safety.md 'Locking the graph down' is for a full install",
    "ros2 run task_learning planner_node --ros-args --enclave": "needs the sros2 keystore above",
    "ros2 topic echo --qos-durability transient_local --qos-reliability reliable /llm_state":
        "run as printed by test_llm_state_ros.py",
    "ros2 launch task_learning task_learning.launch.py ": "this module: every launch argument and the default db",
    "ros2 launch task_learning perception.launch.py ": "test_perception_launch_file_starts_and_stops_one_node",
    "ros2 launch task_learning robot.launch.py ": "test_robot_launch_ros.py (the fake standard servers, robot:=fetch)",
    "ros2 launch task_learning sim.launch.py ": "test/sim/test_sim_launch.py",
    "ros2 run task_learning perception_node --ros-args --params-file install/": "test_colcon_build.py (a colcon install)",
}
# ros2cli verbs that refuse --no-daemon (issue 32: the README put it on every example).
NO_DAEMON_REFUSED = ("ros2 topic hz", "ros2 service call", "ros2 action ")


def test_every_ros2_command_of_the_readme_is_run_by_a_test():
    tested = set(VENV_BLOCK)
    for command in readme_ros2_commands():
        if command in tested or any(command.startswith(p) for p in ELSEWHERE):
            continue
        raise AssertionError(f"README command run by no test: {command}")
    for command in readme_ros2_commands():
        if command.startswith(NO_DAEMON_REFUSED):
            assert "--no-daemon" not in command, f"ros2cli refuses --no-daemon here: {command}"


@pytest.fixture(scope="module")
def stack(ros_module_graph):
    """The README's `ros2 launch ... scene:=store_groceries` and its simulated operator, as printed;
    the last test of the module stops the launch with SIGINT."""
    launch = ros_module_graph.start(shell(printed(VENV_BLOCK, "ros2 launch ")), name="ros2 launch")
    operator = ros_module_graph.start(shell(printed(VENV_BLOCK, "task-learning operator --simulated")),
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


# What each README command must show (beyond exit code 0), by how it starts.
EXPECTED = {
    "ros2 pkg executables task_learning": [r"task_learning planner_node"],
    "ros2 topic echo --once": [r"scene: store_groceries", r"object_id:"],
    "ros2 service call /query_world": [r"success=True", r"Fridge\|"],
    "ros2 param describe /oversight timeout_s": [r"Type: double", r"Seconds a question waits", r"Read only: true",
                                                 r"Min value: 0.1", r"Max value: 86400.0"],
    "ros2 param set /planner condition STARS+O": [r"Set parameter successful"],
    "ros2 param set /planner condition STARS ": [r"Set parameter successful"],
    "ros2 param get /planner condition": [r"String value is: STARS\b"],
    "ros2 action list": [r"/perform_task", r"/reach_goal", r"/learn_goal"],
    "ros2 action send_goal /perform_task": [r"Goal accepted", r"SUCCEEDED", r"success: true", r"completion: 1\.0\b",
                                            r"yes_no: [1-9]", r"confirmed_by: simulated"],
}
STARTED_BY_THE_FIXTURE = ("ros2 launch ", "task-learning operator --simulated")
# ros2param waits 1 s (its --timeout) for a node's parameter services: on a loaded machine that
# can pass before they answer; the same command, as printed, is then run again.
TRANSIENT = "Wait for service timed out"


@pytest.mark.timeout(1200)
def test_every_readme_command_runs_as_printed(stack):
    graph, _, operator = stack
    commands = [c for c in VENV_BLOCK[1:] if not c.startswith(STARTED_BY_THE_FIXTURE)]
    try:
        for command in commands:
            if command.startswith("ros2 node list"):
                # The daemon, started by the first call, needs a moment to see every node.
                listed = lambda line=command: (r := run_printed(graph, line)).returncode == 0 and set(NODES) <= {  # noqa: E731
                    n.strip().lstrip("/") for n in r.stdout.splitlines()}
                assert wait_until(listed, 120, f"{command!r}: the six nodes")
                continue
            if command.startswith("ros2 run "):  # a node: it comes up, then Ctrl-C stops it cleanly
                node = graph.start(shell(command), name="ros2 run")
                node.wait_for_line("scene organize_office", timeout=90)
                os.killpg(node.pid, signal.SIGINT)  # Ctrl-C in its terminal: `ros2 run` and the node
                code, out = node.stop(None, timeout=60)
                assert code == 0 and "Traceback" not in out, out[-3000:]
                continue
            start = time.monotonic()
            result = run_printed(graph, command, timeout=900)
            while command.startswith("ros2 param ") and TRANSIENT in result.output \
                    and time.monotonic() - start < 120:
                result = run_printed(graph, command)  # the node's parameter services, slow to answer under load
            print(f"{command[:70]}: {time.monotonic() - start:.1f} s")
            assert result.returncode == 0, f"{command}\n{result.output[-3000:]}"
            assert "unrecognized arguments" not in result.output, result.output
            for prefix, patterns in EXPECTED.items():
                if (command + " ").startswith(prefix):
                    for pattern in patterns:
                        assert re.search(pattern, result.stdout), f"{command}: no {pattern!r}\n{result.stdout[-3000:]}"
        assert operator.poll() is None, operator.output[-2000:]
        covered = [p for p in EXPECTED if any((c + " ").startswith(p) for c in commands)]
        assert covered == list(EXPECTED), "a command the expectations name is no longer in the README block"
    finally:
        graph.run([str(ROS2), "daemon", "stop"], timeout=60)  # started by `ros2 node list`


def test_a_writable_parameter_takes_effect_and_a_read_only_one_says_so(stack):
    graph, _, _ = stack
    try:
        changed = ros2(graph, "param", "set", "/planner", "scene", "organize_office", "--no-daemon", "--timeout", "20")
        assert "Set parameter successful" in changed.stdout, changed.output
        # The next goal with no scene takes the new one: organize_office defines another task.
        goal = ros2(graph, "action", "send_goal", "/perform_task", "task_learning_interfaces/action/PerformTask",
                    "{task: 'store groceries'}", timeout=300)
        assert "ABORTED" in goal.stdout and "defines the task 'organize office'" in goal.stdout, goal.output[-3000:]
    finally:
        ros2(graph, "param", "set", "/planner", "scene", "store_groceries", "--no-daemon", "--timeout", "20")
    wrong = ros2(graph, "param", "set", "/planner", "condition", "STARZ", "--no-daemon", "--timeout", "20")
    assert "Setting parameter failed" in wrong.output and "'STARZ' is not one of" in wrong.output, wrong.output
    still = ros2(graph, "param", "get", "/planner", "condition", "--no-daemon", "--timeout", "20")
    assert "STARS+O" in still.stdout, still.output
    read_only = ros2(graph, "param", "set", "/oversight", "timeout_s", "5.0", "--no-daemon", "--timeout", "20")
    assert "read-only" in read_only.output.lower(), read_only.output


def test_ros2_run_uses_the_same_default_knowledge_base_as_the_launch(stack):
    graph, launch, _ = stack
    kb = graph.home / "task_learning" / "task_learning.sqlite"
    assert f"knowledge base: {kb}" in launch.output
    node = graph.start([str(ROS2), "run", "task_learning", "planner_node", "--ros-args", "-r", "__ns:=/kb_check"],
                       name="ros2 run planner")
    node.wait_for_line(rf"planner ready \(db {re.escape(str(kb))},", timeout=90)
    os.killpg(node.pid, signal.SIGINT)  # Ctrl-C in its terminal
    code, out = node.stop(None, timeout=60)
    assert code == 0, out[-3000:]


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


def test_web_true_starts_the_web_operator_panel_beside_the_nodes_named(ros_graph):
    db = ros_graph.tmp / "kb.sqlite"
    # web_port:=0, any free port: a fixed one is taken when another suite on the host (or a panel
    # left running by anything) has it
    launch = ros_graph.start(launch_args("nodes:=oversight", "web:=true", "web_port:=0", f"db:={db}"),
                             name="ros2 launch web")
    at = launch.wait_for_line(rf"web operator panel at http://127\.0\.0\.1:(\d+)/ \(db {re.escape(str(db))}\)",
                              timeout=90)
    assert int(at.group(1)) > 0
    code, text = launch.stop(signal.SIGINT, timeout=60)
    assert code == 0 and re.search(r"\[web_operator_node-\d+\]: process has finished cleanly", text), text[-3000:]
    assert not re.search(r"\[(perception|planner)_node", text)  # only the nodes named, and the panel


def test_a_web_port_that_is_not_one_is_refused(ros_graph):
    result = ros_graph.run(launch_args("nodes:=oversight", "web:=true", "web_port:=99999"), timeout=100)
    assert result.returncode == 1 and "web_port:=99999 is not a TCP port" in result.output, result.output
    assert "process started" not in result.output


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
    launch.wait_for_line(r"serving learn_goal and learn_goals: llm local", timeout=120)
    params = ros2(ros_graph, "param", "get", "/goal_elicitation", "llm_base_url", "--no-daemon", "--timeout", "20",
                  timeout=90)
    assert url in params.stdout, params.output
    os.killpg(launch.pid, signal.SIGINT)
    launch.wait(60)
    text = launch.output
    assert re.search(r"\[llm_server_node-\d+\]: process has finished cleanly", text), text[-4000:]
    assert not Path(f"/proc/{pid}").exists()  # llama-server went with its node
