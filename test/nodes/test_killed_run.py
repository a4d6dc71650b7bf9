"""A test run that is killed stops every graph it started (test/reaper.py, started by conftest).

Each case runs a small pytest of its own (with this suite's conftest as a plugin) whose one test
starts a real node in a ros_graph and then waits; this test kills that pytest with SIGTERM (what a
CI timeout or `kill` sends: Python dies at once, no fixture teardown) or SIGINT (Ctrl-C), and the
node must be gone soon after. Before the reaper, a SIGTERM left it running (the issue saw a
bringup and four nodes alive for over an hour), on a domain id a later run could take.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test.reaper import MARK, marked
from test.ros_testing import ROOT, wait_until

PROBE = textwrap.dedent('''
    import os
    import time
    from pathlib import Path


    def test_start_a_node_and_wait(ros_graph):
        node = ros_graph.start_node("grounding", "-p", "scene:=tidy_kitchen", params_file="grounding.yaml")
        node.wait_for_line("serving ", timeout=120)
        Path(os.environ["PROBE_PIDS"]).write_text(f"{node.pid} {os.environ['ROS_DOMAIN_ID']}")
        while True:  # killed from outside
            time.sleep(0.2)
''')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has no environ left to match; count it as gone
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_killed_test_run_leaves_no_node_running(tmp_path, sig):
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    pids_file = tmp_path / "pids"
    env = dict(os.environ, PROBE_PIDS=str(pids_file), PYTHONPATH=str(ROOT))
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "test.conftest", "-p", "no:cacheprovider",
                            "--rootdir", str(tmp_path), "-o", "timeout=0", str(probe)],
                           cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    node_pid = 0
    try:
        wait_until(lambda: pids_file.exists() and pids_file.read_text().strip() or run.poll() is not None,
                   180, "the probe's node started")
        assert run.poll() is None, run.communicate()[0][-3000:]
        node_pid = int(pids_file.read_text().split()[0])
        assert _alive(node_pid)
        run.send_signal(sig)
        out = run.communicate(timeout=120)[0]
        wait_until(lambda: not _alive(node_pid), 60,
                   f"the node (pid {node_pid}) gone after the test run got {sig.name}\n{out[-3000:]}")
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        if node_pid and _alive(node_pid):
            os.kill(node_pid, signal.SIGKILL)  # never leave it behind, even when this test fails


def test_the_reaper_finds_exactly_the_marked_processes(tmp_path):
    token = f"probe-{os.getpid()}"
    env = dict(os.environ, **{MARK: token})
    marked_child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env=dict(os.environ, **{MARK: token + "-other"}))
    try:
        found = wait_until(lambda: marked(token), 10, "the marked child")
        assert found == [marked_child.pid]
    finally:
        for proc in (marked_child, other):
            proc.kill()
            proc.wait()
