"""nodes/plumbing/entry.py: a node's stop handlers are in place before its module is imported.

A stand-in node module whose import lasts until the test says so plays the node; no ROS graph.
Without the entry (`python -m <module>`) a SIGINT during that import prints a KeyboardInterrupt
traceback; through it the process ends quietly with exit code 0."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from task_learning_nodes.plumbing import entry

from ..ros_testing import ROOT, NodeProcess

PROBE_MODULE = """
import os
import time

print("importing", flush=True)
_deadline = time.monotonic() + 60
while not os.path.exists(os.environ["PROBE_IMPORTED"]) and time.monotonic() < _deadline:
    time.sleep(0.01)  # a node's imports, as long as the test needs


def main(args=None, signals=None):
    print(f"main: args {args[1:]}", flush=True)
    deadline = time.monotonic() + 60
    while not signals.received and time.monotonic() < deadline:
        time.sleep(0.01)  # the node serving, until a stop
    print("stopped" if signals.received else "no stop within 60 s", flush=True)
    return 0
"""


@pytest.fixture
def probe(tmp_path: Path):
    """Yields (start, file that ends the probe's import): `start()` runs `python -m
    task_learning_nodes.plumbing.entry probe_node --ros-args ...`, `start(use_entry=False)` runs
    `python -m probe_node ...`; every process started is closed at teardown."""
    (tmp_path / "probe_node.py").write_text(PROBE_MODULE, encoding="utf-8")
    imported = tmp_path / "imported"
    env = dict(os.environ, PROBE_IMPORTED=str(imported),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    started: list[NodeProcess] = []

    def start(use_entry: bool = True) -> NodeProcess:
        head = ["-m", "task_learning_nodes.plumbing.entry", "probe_node"] if use_entry else ["-m", "probe_node"]
        process = NodeProcess([sys.executable, *head, "--ros-args", "-p", "x:=1"], env, name="probe node",
                              cwd=tmp_path)
        started.append(process)
        return process

    yield start, imported
    for process in started:
        process.close()


def test_a_sigint_during_the_import_ends_the_node_quietly(probe):
    start, imported = probe
    node = start()
    node.wait_for_line("importing", timeout=60)
    node.send_signal(signal.SIGINT)
    imported.touch()
    code = node.wait(60)
    assert code == 0, node.output
    assert "Traceback" not in node.output and "main:" not in node.output, node.output


def test_without_the_entry_the_same_sigint_is_a_traceback(probe):
    """What the entry prevents (and what makes the test above able to fail)."""
    start, imported = probe
    node = start(use_entry=False)
    node.wait_for_line("importing", timeout=60)
    node.send_signal(signal.SIGINT)
    imported.touch()
    code = node.wait(60)
    assert code != 0 and "KeyboardInterrupt" in node.output, node.output


def test_a_sigint_after_the_import_reaches_the_node_through_the_handed_over_handlers(probe):
    start, imported = probe
    imported.touch()
    node = start()
    node.wait_for_line(r"main: args \['--ros-args', '-p', 'x:=1'\]", timeout=60)
    node.send_signal(signal.SIGINT)
    code = node.wait(60)
    assert code == 0 and "stopped" in node.lines("stdout"), node.output


def test_entry_without_a_module_is_a_usage_line(probe):
    process = NodeProcess([sys.executable, "-m", "task_learning_nodes.plumbing.entry"], dict(os.environ), name="entry")
    try:
        assert process.wait(60) == 2
        assert process.lines("stderr") == [entry.USAGE]
    finally:
        process.close()
