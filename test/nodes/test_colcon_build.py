"""`colcon build` of both packages into a temporary workspace, as docs/ros.md's "On a full ROS 2
install" section does it (with the flags a wheel-based ROS needs), then a node started from that
install with its parameter file from the install's share (config found there through the ament
index, not in the source tree).

Slow (about two minutes on 2 cores): colcon-common-extensions comes from PyPI on first use
(scripts/colcon_tools.sh, stamped), and both packages are built from scratch.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..ros_testing import ROOT

VENV = Path(sys.executable).parent.parent
ROS2 = VENV / "bin" / "ros2"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not ROS2.exists(), reason="the ROS 2 tools are not installed")]


def copy_sources(dest: Path) -> None:
    """The repository's files as a clone has them (tracked and new, nothing ignored)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    colcon = subprocess.run(["bash", str(ROOT / "scripts" / "colcon_tools.sh")], capture_output=True,
                            text=True, timeout=900, env=dict(os.environ, VENV=str(VENV)))
    assert colcon.returncode == 0, colcon.stderr[-3000:]
    ws = tmp_path_factory.mktemp("colcon_ws")
    src = ws / "src" / "task_learning"
    copy_sources(src)
    env = dict(os.environ, AMENT_PREFIX_PATH=str(VENV), CMAKE_PREFIX_PATH=str(VENV),
               PATH=f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTHONPATH", None)
    # docs/ros.md's command for this venv, word for word apart from the paths.
    command = shlex.split(colcon.stdout.strip().splitlines()[-1]) + [
        "build", "--paths", "src/task_learning", "src/task_learning/interfaces",
        "--cmake-args", f"-DCMAKE_PROJECT_INCLUDE={src / 'interfaces' / 'cmake' / 'wheel_include_fix.cmake'}",
        f"-DPython3_EXECUTABLE={VENV / 'bin' / 'python'}", "-DBUILD_TESTING=OFF"]
    start = time.monotonic()
    build = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=1800)
    print(f"colcon build of both packages: {time.monotonic() - start:.0f} s")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    assert "2 packages finished" in build.stdout, build.stdout[-2000:]
    return ws


def install_env(ws: Path) -> dict[str, str]:
    """What `source install/setup.bash` changes, read from a shell that sourced it."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(["bash", "-c", f"source {ws / 'install' / 'setup.bash'} && env -0"], cwd=ws,
                         capture_output=True, text=True, check=True, env=base).stdout
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    changed = {k: v for k, v in env.items() if base.get(k) != v and not k.startswith("_")}
    changed.setdefault("PYTHONPATH", "")
    return changed


@pytest.mark.timeout(2400)  # the first test builds the workspace
def test_install_holds_both_packages_and_the_config(workspace, tmp_path):
    env = dict(os.environ, **install_env(workspace))
    install = workspace / "install"
    prefixes = env["AMENT_PREFIX_PATH"].split(os.pathsep)
    assert {str(install / "task_learning"), str(install / "task_learning_interfaces")} <= set(prefixes)
    share = install / "task_learning" / "share" / "task_learning"
    assert (share / "config" / "bringup.yaml").is_file() and (share / "launch" / "task_learning.launch.py").is_file()
    probe = subprocess.run([str(VENV / "bin" / "python"), "-c",
                            "import task_learning, task_learning_nodes; from task_learning.inputs.config import config_dir; "
                            "print(task_learning.__file__); print(task_learning_nodes.__file__); print(config_dir())"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    core, nodes, config = probe.stdout.split()
    assert core.startswith(str(install)) and nodes.startswith(str(install)), probe.stdout
    assert Path(config) == share / "config", probe.stdout  # found through the ament index


@pytest.mark.timeout(2400)
def test_a_node_starts_from_the_install_with_its_parameters(workspace, ros_graph):
    env = install_env(workspace)
    share = workspace / "install" / "task_learning" / "share" / "task_learning"
    node = ros_graph.start([str(ROS2), "run", "task_learning", "perception_node", "--ros-args",
                            "--params-file", str(share / "config" / "nodes" / "perception.yaml"),
                            "-p", "scene:=store_groceries"], name="ros2 run (install)", **env)
    node.wait_for_line("scene store_groceries", timeout=90)
    result = ros_graph.start([str(ROS2), "service", "call", "/query_world", "task_learning_interfaces/srv/QueryWorld",
                              "{query: 'fridge'}"], name="ros2 service call", **env)
    assert result.wait(90) == 0 and "success=True" in result.stdout, result.output
    got = ros_graph.start([str(ROS2), "param", "get", "/perception", "publish_rate_hz", "--no-daemon",
                           "--timeout", "20"], name="ros2 param get", **env)
    assert got.wait(90) == 0 and "10.0" in got.stdout, got.output  # from the install's parameter file
    os.killpg(node.pid, signal.SIGINT)
    assert node.wait(30) == 0 and "Traceback" not in node.output, node.output[-3000:]
