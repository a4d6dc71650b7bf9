"""What every test gets: no leaked environment or sys.path, and for ROS tests a graph of their own.

- `ros_graph` (per test) and `ros_module_graph` (one per module, for nodes that several tests of a
  module share on purpose) are `test.ros_testing.RosGraph`s: the next free ROS_DOMAIN_ID (never one
  a test used before it in this run, unless the range came round; pytest-xdist workers get
  disjoint slices), a ROS_HOME, ROS_LOG_DIR and TMPDIR of their own under pytest's tmp folder. The
  graph's variables are set in this process for the test (or module) and restored afterwards.
  Processes the graph started are stopped at teardown; when a test fails, their output is attached
  to its report.
- A test using either fixture is marked `ros` (so `pytest -m "not ros and not slow"` runs the core
  tests alone).
- After every test (and every module) os.environ and sys.path are put back as they were; a test that
  changed ROS variables or sys.path itself fails, so no test can leak them into later ones.
- A killed run stops what it started: every process a test starts carries TASK_LEARNING_TEST_RUN
  (a token of this pytest process) in its environment, and test/reaper.py, started here in a
  session of its own, stops every process with that token once this pytest ends, however it ends
  (SIGTERM and SIGKILL skip the fixtures' teardown; the graphs' processes run in sessions of their
  own, so nothing else would reach them).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from test.ros_testing import RosGraph, domain_ids

# MuJoCo picks its GL backend when it is first imported, by whichever test module imports it first
# in a worker: offscreen (Mesa's EGL) for all of them, as sim/ sets it for its own processes
# (a module importing mujoco before sim/ did got GLFW, and a later renderer 'gladLoadGL error').
os.environ.setdefault("MUJOCO_GL", "egl")

# Variables that decide which ROS graph, interpreter path or temp folder a process uses: a test
# must not change them for the tests after it.
GUARDED_PREFIXES = ("ROS_", "RMW_", "FASTDDS_", "FASTRTPS_", "AMENT_")
GUARDED_KEYS = ("PYTHONPATH", "TMPDIR", "LD_LIBRARY_PATH")
ROS_FIXTURES = {"ros_graph", "ros_module_graph"}


def pytest_configure(config: pytest.Config) -> None:
    # Qt widgets in tests draw offscreen (no display needed), for the whole session.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    _hear_sigint()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    config.stash[_DOMAINS] = domain_ids(worker)
    config.stash[_REAPER] = _start_reaper()


def _hear_sigint() -> None:
    """A suite started in the background (`nohup make test &`, a non-interactive shell's `&`)
    inherits SIGINT ignored, and so would every node the tests start: the tests that stop a node
    or `ros2 launch` with SIGINT, as Ctrl-C does, would fail for how the suite was started. A
    handler, unlike an ignored signal, is reset to the default in every child it starts."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _start_reaper() -> subprocess.Popen:
    """Mark this run's children and start the reaper that stops them when this process ends."""
    from test.reaper import MARK

    token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    os.environ[MARK] = token  # every child inherits it (a worker's children get the worker's)
    env = {k: v for k, v in os.environ.items() if k != MARK}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent.parent)]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    # stdin is the pipe: its write end stays in this process (close_fds keeps it out of every
    # child), so it closes exactly when this process ends.
    return subprocess.Popen([sys.executable, "-m", "test.reaper", token], stdin=subprocess.PIPE,
                            env=env, start_new_session=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    reaper = config.stash.get(_REAPER, None)
    if reaper is not None and reaper.stdin is not None:
        reaper.stdin.close()  # a normal end: the reaper checks, finds nothing left, exits
        try:
            reaper.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


_DOMAINS = pytest.StashKey[Iterator[int]]()
_REAPER = pytest.StashKey[subprocess.Popen]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if ROS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.ros)


def _next_domain(config: pytest.Config) -> int:
    return next(config.stash[_DOMAINS])


def _apply(mp: pytest.MonkeyPatch, graph: RosGraph) -> None:
    for key, value in graph.env.items():
        mp.setenv(key, value)
    mp.setattr(tempfile, "tempdir", str(graph.tmp))


@pytest.fixture
def ros_graph(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RosGraph]:
    """A ROS graph of this test alone."""
    graph = RosGraph(_next_domain(request.config), tmp_path / "ros", name="ros_graph")
    with pytest.MonkeyPatch.context() as mp:
        _apply(mp, graph)
        try:
            yield graph
        finally:
            graph.close()


@pytest.fixture(scope="module")
def ros_module_graph(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[RosGraph]:
    """One graph shared by the tests of a module that use it (a node started once for them)."""
    graph = RosGraph(_next_domain(request.config), tmp_path_factory.mktemp("ros_module"),
                     name="ros_module_graph")
    with pytest.MonkeyPatch.context() as mp:
        _apply(mp, graph)
        try:
            yield graph
        finally:
            graph.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    funcargs = getattr(item, "funcargs", {}) or {}
    for name in ("ros_graph", "ros_module_graph"):
        graph = funcargs.get(name)
        if isinstance(graph, RosGraph):
            for title, text in graph.reports():
                report.sections.append((title, text))


def _snapshot() -> tuple[dict[str, str], list[str]]:
    return dict(os.environ), list(sys.path)


def _restore_and_check(before: tuple[dict[str, str], list[str]], where: str) -> None:
    env, path = before
    changed = sorted(k for k in set(env) | set(os.environ)
                     if env.get(k) != os.environ.get(k)
                     and (k.startswith(GUARDED_PREFIXES) or k in GUARDED_KEYS))
    path_changed = sys.path != path
    os.environ.clear()
    os.environ.update(env)
    sys.path[:] = path
    problems = ([f"environment variables {', '.join(changed)}"] if changed else []) + \
        (["sys.path"] if path_changed else [])
    if problems:
        pytest.fail(f"{where} left {' and '.join(problems)} changed (restored now); use the "
                    f"ros_graph fixture or monkeypatch", pytrace=False)


@pytest.fixture(autouse=True)
def _no_leaks_from_a_test() -> Iterator[None]:
    before = _snapshot()
    yield
    _restore_and_check(before, "the test")


@pytest.fixture(autouse=True, scope="module")
def _no_leaks_from_a_module() -> Iterator[None]:
    before = _snapshot()
    yield
    _restore_and_check(before, "the module's fixtures")
