"""`task-learning bringup`: nodes start as their own OS processes with their parameter files, stop
cleanly on Ctrl-C / SIGTERM, and a node that dies is reported with its exit code."""
from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from task_learning.apps import bringup
from task_learning.errors import ConfigError, TaskLearningError
from task_learning_interfaces.msg import WorldState
from task_learning_nodes.plumbing import entry
from test.nodes.test_ros_perception import LATCHED

from ..ros_testing import CLI, ROOT, NodeProcess, RosGraph, wait_until


def write(tmp_path: Path, text: str, name: str = "bringup.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- configuration and planning (no processes) -------------------------------------------------

def test_shipped_config_lists_every_node_executable_of_setup_py():
    config = bringup.load_bringup_config()
    for spec in config.nodes:
        assert getattr(entry, spec.executable).module == spec.module, spec.name
        # the shipped file, read directly or through the installed share/task_learning/config link
        assert spec.params_file is not None and spec.params_file.resolve().parent == (ROOT / "config" / "nodes").resolve()
    assert [n.name for n in config.nodes][0] == "perception"


def test_misspelled_key_names_file_and_key(tmp_path):
    path = write(tmp_path, "nodes:\n  perception:\n    modul: task_learning_nodes.nodes.perception\n")
    with pytest.raises(ConfigError) as err:
        bringup.load_bringup_config(path)
    assert str(path) in str(err.value) and "nodes.perception.modul" in str(err.value)
    assert "did you mean 'module'" in str(err.value)
    path = write(tmp_path, "on_node_exit: sometimes\nnodes: {}\n")
    with pytest.raises(ConfigError, match="on_node_exit"):
        bringup.load_bringup_config(path)


def test_plan_skips_missing_modules_and_routes_overrides(tmp_path, caplog, monkeypatch):
    params = write(tmp_path, "perception:\n  ros__parameters:\n    scene: tidy_kitchen\n    backend: symbolic\n",
                   "p.yaml")
    other = write(tmp_path, "other:\n  ros__parameters:\n    rate: 1\n", "o.yaml")
    path = write(tmp_path, f"""
nodes:
  perception: {{module: task_learning_nodes.nodes.perception, params: {params}}}
  other: {{module: task_learning_nodes.nodes.grounding, params: {other}}}
  future: {{module: task_learning_nodes.nodes.synthetic_robot, params: {other}}}
""")
    config = bringup.load_bringup_config(path)
    exists = bringup.module_exists
    monkeypatch.setattr(bringup, "module_exists", lambda m: m != "task_learning_nodes.nodes.synthetic_robot" and exists(m))
    with caplog.at_level(logging.WARNING, logger="task_learning.apps.bringup"):
        launches = bringup.plan(config, None, {"scene": "organize_office", "backend": None})
    assert [launch.spec.name for launch in launches] == ["perception", "other"]
    assert "skipping node future" in caplog.text
    assert launches[0].command[1:] == ["-m", "task_learning_nodes.plumbing.entry", "task_learning_nodes.nodes.perception",
                                       "--ros-args", "--params-file",
                                       str(params), "-p", "scene:=organize_office"]
    assert "-p" not in launches[1].command
    with pytest.raises(TaskLearningError, match=r"unknown node.*percepton"):
        bringup.plan(config, ["percepton"])


def test_a_node_with_default_false_starts_only_when_named(tmp_path):
    path = write(tmp_path, """
nodes:
  perception: {module: task_learning_nodes.nodes.perception}
  anticipation: {module: task_learning_nodes.nodes.anticipation, default: false}
""")
    config = bringup.load_bringup_config(path)
    assert [launch.spec.name for launch in bringup.plan(config)] == ["perception"]
    assert [launch.spec.name for launch in bringup.plan(config, ["anticipation"])] == ["anticipation"]
    shipped = {spec.name: spec.default for spec in bringup.load_bringup_config().nodes}
    assert shipped.pop("anticipation") is False and shipped.pop("live_view") is False
    assert shipped.pop("web_operator") is False and shipped.pop("llm_server") is False
    assert all(shipped.values())  # nothing else changes
    with pytest.raises(ConfigError, match=r"nodes\.a\.default"):
        bringup.load_bringup_config(write(tmp_path, "nodes:\n  a: {module: m, default: maybe}\n"))


def test_core_bringup_does_not_import_rclpy():
    code = "import sys, task_learning.apps.bringup, task_learning.apps.cli.bringup_cmd; print('rclpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- real processes -------------------------------------------------------------------------------

def start_bringup(graph: RosGraph, args: list[str]) -> NodeProcess:
    return graph.start_cli("bringup", *args)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_bringup_starts_nodes_with_their_parameters_and_stops_cleanly(ros_graph, sig):
    proc = start_bringup(ros_graph, ["--nodes", "perception", "--scene", "organize_office"])
    client = ros_graph.client("bringup_test")
    try:
        pid = int(proc.wait_for_line(r"started perception \(pid (\d+)\)").group(1))
        states = client.subscribe_collect(WorldState, "world_state", LATCHED)
        state = states.wait_for(lambda s: s.scene == "organize_office", timeout=30.0)
        assert any(o.object_type == "Desk" for o in state.objects)
    finally:
        client.close()
    code, text = proc.stop(sig, timeout=30)
    assert code == 0, text
    assert "node perception stopped cleanly" in text and "Traceback" not in text
    assert not alive(pid)


def test_bringup_reports_a_killed_node_and_stops_the_others(ros_graph, tmp_path):
    params = ROOT / "config" / "nodes" / "perception.yaml"
    path = write(tmp_path, f"""
shutdown_timeout_s: 10
nodes:
  perception: {{module: task_learning_nodes.nodes.perception, params: {params}}}
  perception_twin: {{module: task_learning_nodes.nodes.perception, params: {params}}}
""")
    proc = start_bringup(ros_graph, ["--config", str(path)])
    victim = int(proc.wait_for_line(r"started perception \(pid (\d+)\)").group(1))
    twin = int(proc.wait_for_line(r"started perception_twin \(pid (\d+)\)").group(1))
    # Both nodes log as [perception]: wait for both to serve, so the twin is stopped by bringup,
    # not interrupted in its imports (a loaded machine started one several seconds after the other)
    wait_until(lambda: proc.output.count("[perception]: backend symbolic") >= 2, 60,
               "both perception nodes serving")
    os.kill(victim, signal.SIGKILL)
    code, text = proc.stop(sig=None, timeout=30)
    assert code == 1, text
    assert f"node perception (pid {victim}) died: killed by SIGKILL" in text
    assert "node perception_twin stopped cleanly" in text
    assert not alive(twin)


def test_bringup_with_unknown_node_is_a_clear_error(ros_graph):
    result = ros_graph.run([CLI, "bringup", "--nodes", "perceptoin"], timeout=60)
    assert result.returncode == 2, result.output
    assert "unknown node(s) perceptoin" in result.stderr and "Traceback" not in result.stderr


def test_bringup_uses_the_graphs_one_default_knowledge_base(ros_graph, tmp_path):
    """Issue 32: `bringup` (and `ros2 run`) wrote artifacts/task_learning.sqlite under the folder
    they ran in, `ros2 launch` $ROS_HOME/task_learning/task_learning.sqlite. Now all three use the
    latter (test_ros_launch.py checks launch and ros2 run), whatever the working folder."""
    elsewhere = tmp_path / "some_folder"
    elsewhere.mkdir()
    proc = ros_graph.start([CLI, "bringup", "--nodes", "planner", "oversight"], name="bringup", cwd=elsewhere)
    kb = ros_graph.home / "task_learning" / "task_learning.sqlite"
    proc.wait_for_line(rf"planner ready \(db {re.escape(str(kb))},", timeout=120)
    # The oversight node's line: the same knowledge base, where its operators are paired.
    proc.wait_for_line(rf"oversight ready: .* db {re.escape(str(kb))}, \d+ paired operator", timeout=120)
    code, text = proc.stop(signal.SIGINT, timeout=60)
    assert code == 0, text[-3000:]
    assert not (elsewhere / "artifacts").exists()
    assert "deprecated" not in text  # Fast DDS 3 warned per node when given its old profile variable


def test_a_stop_reaches_a_node_still_in_pythons_start_up_without_a_traceback(tmp_path, caplog):
    """Issue 40: a Ctrl-C of bringup while a node was still in Python's own start-up (before the
    entry installs its handlers) printed "Fatal Python error: init_import_site" and tracebacks.
    Here a node that has not installed handlers yet, and one that has."""
    starting_err = tmp_path / "starting.err"
    ready = tmp_path / "ready"
    script = ("import signal, sys, time, pathlib\n"
              "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
              "signal.signal(signal.SIGINT, lambda *a: sys.exit(0))\n"
              f"pathlib.Path({str(ready)!r}).write_text('up')\n"
              "time.sleep(60)\n")
    launches = [
        bringup.NodeLaunch(bringup.NodeSpec("starting", "m", "m", None),
                           ["sh", "-c", f'exec {sys.executable} -c "import time; time.sleep(60)" 2>{starting_err}']),
        bringup.NodeLaunch(bringup.NodeSpec("ready", "m", "m", None), [sys.executable, "-c", script]),
    ]
    runner = bringup.Bringup(launches, shutdown_timeout_s=20.0)
    caplog.set_level(logging.INFO, logger="task_learning.apps.bringup")
    runner.start()
    try:
        wait_until(ready.exists, 30, "the ready node installed its handlers")
    finally:
        runner.stop_all()
    assert "Traceback" not in starting_err.read_text() and "KeyboardInterrupt" not in starting_err.read_text()
    lines = [r.getMessage() for r in caplog.records]
    assert "node ready stopped cleanly" in lines
    assert "node starting stopped while it was starting (before its stop handlers)" in lines
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], lines
