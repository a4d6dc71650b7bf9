"""Issue 33 (hostile inputs that still got through) and issue 31 point 3 (read-only commands).

- Writes are checked: every file the project writes either appears complete or not at all, and a
  write that fails ends with one line naming the file (a full disk is simulated with
  RLIMIT_FSIZE, which makes the kernel refuse a write past the limit with EFBIG).
- Numbers: one shared check (task_learning.inputs.numbers) behind options, configuration values and node
  parameters; NaN and infinities refused everywhere; no option takes a bare int or float.
- Inputs must be regular files: a FIFO, a device or a directory is refused by name, at once.
- Nesting is bounded (no RecursionError), a bring-up entry names only the project's nodes, a
  knowledge base with another program's tables is refused unless empty, a locked one is named.
- Read-only commands create and change nothing; a missing knowledge base is named.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from task_learning.errors import ConfigError
from task_learning.inputs.config import MAX_NESTING, load_yaml
from task_learning.inputs.files import OutputError, write_text_atomic
from task_learning.inputs.numbers import number_problem
from task_learning.kb import KnowledgeBase, LearnedGoal
from task_learning.kb.store import Confirmation, KnowledgeBaseError
from task_learning.perception.bag import BagWriter, _typestore
from test.apps.test_cli_safety import cli, config_copy, one_line_error

ROOT = Path(__file__).resolve().parents[2]


def _limited(limit_bytes: int):
    """preexec_fn: a process that may write at most `limit_bytes` per file (a full disk for it)."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return apply


def _cli_limited(limit_bytes: int, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "task_learning.apps.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, preexec_fn=_limited(limit_bytes))


def _kb(path: Path, goals: int = 40) -> Path:
    with KnowledgeBase(path) as kb:
        for i in range(goals):
            kb.learn_goal(LearnedGoal(task="tidy kitchen", context=f"mug {i} in sink", object_type="Mug",
                                      text="the goal is that the mug is in the cabinet " * 3, literals=[],
                                      confirmation=Confirmation.OPERATOR_YES))
    return path


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- 1. writes ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_export_that_cannot_be_written_fails_naming_the_file_and_leaves_nothing(tmp_path):
    db = _kb(tmp_path / "kb.sqlite")
    out = tmp_path / "out" / "kb.yaml"
    out.parent.mkdir()
    # A full disk: the export does not fit.
    one_line_error(_cli_limited(4096, "kb", "export", "--db", str(db), "--out", str(out)), str(out), "too large")
    assert list(out.parent.iterdir()) == []  # no partial file, no temporary file
    # An earlier export stays as it was.
    out.write_text("an earlier export\n")
    one_line_error(_cli_limited(4096, "kb", "export", "--db", str(db), "--out", str(out)), str(out))
    assert out.read_text() == "an earlier export\n" and [p.name for p in out.parent.iterdir()] == ["kb.yaml"]
    # /dev/full and a named pipe are not files to export into (and are left as they are).
    one_line_error(cli("kb", "export", "--db", str(db), "--out", "/dev/full"), "/dev/full", "character device")
    assert Path("/dev/full").is_char_device()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line_error(cli("kb", "export", "--db", str(db), "--out", str(fifo), timeout=60), str(fifo), "named pipe")
    # Standard output on a full disk: an error, not exit 0.
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "task_learning.apps.cli", "kb", "export", "--db", str(db)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == "task-learning kb: error: standard output: No space left on device"


@pytest.mark.slow
def test_trees_pictures_and_plots_are_written_whole_or_not_at_all(tmp_path):
    dot = tmp_path / "tree.dot"
    proc = _cli_limited(300, "bcr", "--task", "make_coffee", "--dot", str(dot))
    one_line_error(proc, str(dot), "too large")
    image = tmp_path / "frame.png"
    proc = _cli_limited(2000, "perceive", "--scene", "tidy_kitchen", "--synthetic", "--image", str(image))
    one_line_error(proc, str(image), "too large")
    plot = tmp_path / "plot.png"
    code = textwrap.dedent(f"""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from task_learning.inputs.files import OutputError, save_figure
        fig, ax = plt.subplots()
        ax.plot(range(100))
        try:
            save_figure(fig, {str(plot)!r})
        except OutputError as exc:
            print(exc)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         preexec_fn=_limited(1000))
    assert out.stdout.strip() == f"cannot write {plot}: File too large", out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing half-written, no temporary file
    save = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert save.stdout == "" and plot.read_bytes().startswith(b"\x89PNG")


def test_a_cassette_never_ends_in_half_an_entry_and_refuses_a_device(tmp_path):
    cassette = tmp_path / "calls.jsonl"
    code = textwrap.dedent(f"""
        from task_learning.inputs.files import LineAppender, OutputError
        out = LineAppender({str(cassette)!r})
        for i in range(1000):
            try:
                out.append('{{"entry": ' + str(i) + ', "text": "' + 'x' * 50 + '"}}')
            except OutputError as exc:
                print(exc)
                break
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         preexec_fn=_limited(1000))
    assert out.stdout.strip() == f"cannot write {cassette}: File too large", out.stderr
    text = cassette.read_text()
    assert text.endswith("\n") and all(json.loads(line)["entry"] >= 0 for line in text.splitlines())
    from task_learning.llm.replay import CassetteRecorder

    with pytest.raises(OutputError, match="/dev/full: a character device"):
        CassetteRecorder("/dev/full")


def test_atomic_writes_leave_the_old_file_when_they_fail(tmp_path):
    target = tmp_path / "a.txt"
    write_text_atomic(target, "old")
    with pytest.raises(OutputError, match="a directory"):
        write_text_atomic(tmp_path, "x")
    with pytest.raises(OutputError, match="does not exist"):
        write_text_atomic(tmp_path / "missing" / "a.txt", "x")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


# -- 2. numbers ----------------------------------------------------------------------------------


def test_no_option_of_any_command_takes_a_bare_int_or_float():
    """Every numeric option has a range and refuses NaN: bounded_int / bounded_float (both ask
    number_problem). A new option with `type=float` fails here."""
    from task_learning.apps.cli import build_parser

    def walk(parser):
        for action in parser._actions:
            yield parser.prog, action
            for sub in (getattr(action, "choices", None) or {}).values() if isinstance(
                    getattr(action, "choices", None), dict) else ():
                yield from walk(sub)

    bare = [f"{prog} {'/'.join(a.option_strings)}" for prog, a in walk(build_parser()) if a.type in (int, float)]
    assert bare == []


@pytest.mark.parametrize("args, words", [
    (["bag", "play", "--bag", "x", "--rate", "nan"], "--rate: must be a finite number"),
    (["bag", "play", "--bag", "x", "--rate", "1e-9"], "--rate: must be a finite number in [0.01, 100]"),
    (["bag", "record", "--out", "x", "--duration", "inf"], "--duration: must be a finite number"),
    (["perceive", "--scene", "tidy_kitchen", "--synthetic", "--depth-noise", "nan"], "--depth-noise: must be a finite"),
    (["perceive", "--scene", "tidy_kitchen", "--synthetic", "--width", "100000"], "--width: must be between 64 and"),
])
def test_nan_and_absurd_numbers_on_the_command_line_are_refused(args, words, capsys):
    from task_learning.apps.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_nan_and_infinities_are_refused_in_every_yaml_file(tmp_path):
    for value in (".nan", ".NaN", ".inf", "-.inf", "1.0e+999"):
        path = tmp_path / "any.yaml"
        path.write_text(f"client:\n  timeout_s: {value}\n  other: [1, 2]\n")
        with pytest.raises(ConfigError, match=r"any\.yaml: client\.timeout_s: must be a finite number"):
            load_yaml(path)


@pytest.mark.slow
def test_a_nan_timeout_in_llm_yaml_stops_the_run(tmp_path):
    cfg = config_copy(tmp_path)
    llm = cfg / "llm.yaml"
    llm.write_text(llm.read_text().replace("timeout_s: 30.0", "timeout_s: .nan", 1))
    one_line_error(cli("run", "--scene", "tidy_kitchen", "--db", str(tmp_path / "kb.sqlite"),
                       env={"TASK_LEARNING_CONFIG": str(cfg)}), "llm.yaml", "client.timeout_s", "finite")


def test_the_one_number_check():
    assert number_problem(3, low=1, high=5, integer=True) == ""
    assert "finite" in number_problem(float("nan"), low=0, high=1)
    assert "finite" in number_problem(float("inf"))
    assert "expected a number" in number_problem(True)
    assert "expected an integer" in number_problem(2.5, integer=True)
    assert number_problem(0.0, low=0.0, high=1.0, low_open=True) == "must be a finite number in (0, 1], got 0"


def test_every_numeric_node_parameter_has_a_range_and_refuses_nan():
    pytest.importorskip("rclpy")
    from task_learning_nodes.plumbing.params import Param

    with pytest.raises(TypeError, match="needs a range"):
        Param("rate", 1.0, "no range")
    rate = Param("rate", 1.0, "a rate", min=0.0, max=10.0)
    assert "finite" in rate.problem(float("nan")) and rate.problem(5.0) == ""
    pose = Param("pose", (0.0, 1.0), "a pose", min=-10.0, max=10.0)
    assert "finite" in pose.problem([0.0, float("inf")])
    backend = Param("backend", "symbolic", "backend", choices=("symbolic", "ai2thor", "fetch"))
    assert "'unity' is not one of" in backend.problem("unity")
    from task_learning_nodes.nodes import perception

    declared = {p.name: p for p in perception.Parameters.rows()}
    assert declared["backend"].choices == ("symbolic", "ai2thor", "fetch", "robot_stand_in")
    assert "finite" in declared["ai2thor.server_timeout_s"].problem(float("nan"))


# -- 3. files that are not files, nesting, bring-up entries ---------------------------------------


@pytest.mark.slow
def test_special_files_are_refused_by_name_at_once(tmp_path):
    fifo = tmp_path / "scene.yaml"
    os.mkfifo(fifo)
    one_line_error(cli("scene", "--scene", str(fifo), timeout=60), str(fifo), "named pipe (FIFO)")
    one_line_error(cli("scene", "--scene", str(tmp_path), timeout=60), str(tmp_path), "a directory")
    one_line_error(cli("kb", "import", "--db", str(tmp_path / "kb.sqlite"), "/dev/zero", timeout=60),
                   "/dev/zero", "character device")
    recording = tmp_path / "rooms.json"
    os.mkfifo(recording)
    one_line_error(cli("scene", "--scene", f"{recording}#7", timeout=60), str(recording), "named pipe")
    one_line_error(cli("elicit", "--scene", "tidy_kitchen", "--object", "mug in dish rack", "--llm",
                       f"replay:{fifo}", timeout=60), str(fifo), "named pipe")
    one_line_error(cli("kb", "show", "--db", str(fifo), timeout=60), str(fifo), "named pipe")


def test_deep_nesting_is_a_config_error_not_a_recursion_error(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("objects: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match=f"nested more than {MAX_NESTING} levels deep"):
        load_yaml(deep)
    mapping = tmp_path / "deep_map.yaml"
    mapping.write_text("".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "k: 1\n")
    with pytest.raises(ConfigError, match="nested more than"):
        load_yaml(mapping)
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100000 + "]" * 100000)
    from task_learning.world.scene import load_scene

    with pytest.raises(ConfigError, match="deep"):
        load_scene(str(deep_json))


def test_a_scene_contained_too_deep_is_refused(tmp_path):
    boxes = "\n".join(f"  - {{type: Box, id: 'Box|{i}'" + (f", at: 'Box|{i - 1}'" if i else "") + "}"
                      for i in range(40))
    scene = tmp_path / "nested.yaml"
    scene.write_text(f"task: t\nlocation: kitchen\ntypes:\n  Box: {{receptacle: true, pickupable: true}}\n"
                     f"objects:\n{boxes}\n")
    from task_learning.world.scene import load_scene

    with pytest.raises(ConfigError, match="levels deep"):
        load_scene(str(scene))


def test_a_bringup_entry_names_only_the_projects_nodes(tmp_path):
    from task_learning.apps import bringup

    for module in ("http.server", "task_learning_nodes.plumbing.params", "os"):
        path = tmp_path / "bringup.yaml"
        path.write_text(f"nodes:\n  web: {{module: {module}}}\n")
        with pytest.raises(ConfigError, match=r"nodes\.web\.module: .* is not a node of this project"):
            bringup.load_bringup_config(path)
    assert {n.module for n in bringup.load_bringup_config().nodes} <= set(bringup.NODE_MODULES)


def test_bringup_refuses_an_unknown_backend_before_starting_anything(capsys):
    from task_learning.apps.cli import main

    assert main(["bringup", "--backend", "unity"]) == 2
    assert "--backend: invalid choice: 'unity'" in capsys.readouterr().err


# -- 4. knowledge bases: another program's tables, locks, read-only commands -------------------------


def test_a_database_with_another_programs_tables_is_refused_unless_empty(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
    before = other.read_bytes()
    with pytest.raises(KnowledgeBaseError, match="table 'invoices' that task_learning did not create"):
        KnowledgeBase(other)
    assert other.read_bytes() == before
    trigger = _kb(tmp_path / "trigger.sqlite", goals=1)
    with sqlite3.connect(trigger) as conn:
        conn.execute("CREATE TRIGGER spy AFTER INSERT ON goals BEGIN DELETE FROM goals; END")
    with pytest.raises(KnowledgeBaseError, match="trigger 'spy'"):
        KnowledgeBase(trigger)
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with KnowledgeBase(empty) as kb:  # an empty file becomes a knowledge base
        assert kb.goals() == []


def test_an_export_while_another_process_writes_names_the_lock(tmp_path):
    """Another process holds a write transaction open (what a hostile run did with `BEGIN
    EXCLUSIVE`): the reader waits for it as a writer would, then names the lock."""
    db = _kb(tmp_path / "kb.sqlite", goals=2)
    code = ("import sqlite3, sys\n"
            f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); c.execute('DELETE FROM goals')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.readline(); c.execute('ROLLBACK')\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(KnowledgeBaseError, match="locked by another process"):
            KnowledgeBase(db, read_only=True, busy_timeout_s=0.3)
        release = threading.Timer(0.3, lambda: (holder.stdin.write("\n"), holder.stdin.flush()))
        release.start()  # a write that ends within the wait: the reader waits for it
        with KnowledgeBase(db, read_only=True, busy_timeout_s=30.0) as kb:
            assert len(kb.goals()) == 2
        release.join()
    finally:
        holder.kill()
        holder.wait()


def test_a_missing_knowledge_base_is_named_and_not_created(tmp_path, capsys):
    from task_learning.apps.cli import main

    for command in (["kb", "show"], ["kb", "export"]):
        assert main([*command, "--db", str(tmp_path / "typo.sqlite")]) == 2
        err = capsys.readouterr().err
        assert f"no knowledge base at {tmp_path / 'typo.sqlite'}" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_read_only_commands_create_and_change_no_file(tmp_path):
    db = _kb(tmp_path / "kb.sqlite", goals=3)
    ts = _typestore()
    Pose = ts.types["geometry_msgs/msg/PoseWithCovarianceStamped"]
    message = Pose(header=ts.types["std_msgs/msg/Header"](stamp=ts.types["builtin_interfaces/msg/Time"](sec=1, nanosec=0),
                                                       frame_id="map"),
                   pose=ts.types["geometry_msgs/msg/PoseWithCovariance"](
                       pose=ts.types["geometry_msgs/msg/Pose"](
                           position=ts.types["geometry_msgs/msg/Point"](x=0.0, y=0.0, z=0.0),
                           orientation=ts.types["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)),
                       covariance=__import__("numpy").zeros(36)))
    for storage in ("mcap", "sqlite3"):
        writer = BagWriter(tmp_path / f"bag_{storage}", storage)
        writer.write("/amcl_pose", "geometry_msgs/msg/PoseWithCovarianceStamped", 1_000_000_000,
                     ts.serialize_cdr(message, "geometry_msgs/msg/PoseWithCovarianceStamped"))
        writer.close()
    scene = tmp_path / "scene.yaml"
    scene.write_text((ROOT / "config" / "scenes" / "tidy_kitchen.yaml").read_text())
    before = _tree(tmp_path)
    commands = [
        ["kb", "show", "--db", str(db)],
        ["kb", "export", "--db", str(db)],
        ["scene", "--scene", str(scene), "--json"],
        ["scene", "--scene", "tidy_kitchen"],
        ["bag", "info", "--bag", str(tmp_path / "bag_mcap")],
        ["bag", "info", "--bag", str(tmp_path / "bag_sqlite3")],
        ["analyze", "--scene", str(scene), "--object", "mug in dish rack", "the goal is that the mug is in the cabinet"],
    ]
    for command in commands:
        proc = cli(*command, cwd=tmp_path)
        assert proc.returncode == 0, (command, proc.stderr)
        assert _tree(tmp_path) == before, command
