"""Issue 40, the data a user or an attacker hands the project: output cut short on a disk that
fills part-way, symbolic links and the umask of what is written, `--db` in a folder that does not
exist, YAML alias bombs, sweep grids of millions of trials, episode files whose chunks decompress
to a gigabyte and whose channels carry what their type does not hold. Each case runs a real
`task-learning` process where the user would meet it (a short write to stdout, memory) and
asserts one line, a non-zero exit, and nothing left behind.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from task_learning.apps.faults.data_probes import wait_measured
from task_learning.apps.faults.hostile_files import (
    MALFORMED_EPISODES,
    alias_bomb,
    bomb_episode,
    crowded_episode,
    huge_grid,
)
from task_learning.episode.file_names import topic_file_names
from task_learning.errors import ConfigError
from task_learning.inputs.config import MAX_ALIAS_EXPANSION, config_path, load_yaml, parse_yaml
from task_learning.kb import KnowledgeBase, LearnedGoal
from task_learning.kb.store import Confirmation
from test.apps.test_cli_safety import cli, one_line_error

MEMORY_LIMIT_KB = 300 * 1024


def _kb(path: Path, goals: int = 300) -> Path:
    with KnowledgeBase(path) as kb:
        for i in range(goals):
            kb.learn_goal(LearnedGoal(task="tidy kitchen", context=f"mug {i} in sink", object_type="Mug",
                                      text="the goal is that the mug is in the cabinet " * 3, literals=[],
                                      confirmation=Confirmation.OPERATOR_YES))
    return path


def _run_measured(args: list[str], *, cwd: Path | None = None, limit_bytes: int | None = None,
                  umask: int | None = None, stdout: object = subprocess.PIPE) -> tuple[int, str, int]:
    """`task-learning ARGS` as a child: (exit status, stderr, its own peak RSS in KB). With
    `limit_bytes` the child may write at most that much to any file (a disk that fills part-way)."""
    def prepare() -> None:
        if limit_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        if umask is not None:
            os.umask(umask)

    proc = subprocess.Popen([sys.executable, "-m", "task_learning.apps.cli", *args], stdout=stdout,
                            stderr=subprocess.PIPE, cwd=cwd, preexec_fn=prepare)  # noqa: PLW1509 - limits only
    code, _out, err, peak = wait_measured(proc, 300)
    assert code is not None, f"{args}: still running after 300 s"
    return code, err, int(peak)


def _one_line(code: int, err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and "Traceback" not in err and len(lines) == 1, (code, err)
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- 2. silent truncation --------------------------------------------------------------------


@pytest.mark.parametrize("args", [["kb", "export", "--db", "{db}"], ["scene", "--scene", "tidy_kitchen", "--json"]])
def test_standard_output_cut_short_by_a_full_disk_is_an_error(tmp_path, args):
    """CPython's text layer ignores a short write: 64 KiB of the export reached the file, exit 0."""
    db = _kb(tmp_path / "kb.sqlite")
    target = tmp_path / "out.txt"
    with open(target, "wb") as out:
        code, err, _peak = _run_measured([a.format(db=db) for a in args], limit_bytes=16 * 1024, stdout=out)
    _one_line(code, err, "standard output", "File too large")
    # The same command on a disk with room writes it all.
    with open(target, "wb") as out:
        code, err, _peak = _run_measured([a.format(db=db) for a in args], stdout=out)
    assert code == 0 and target.stat().st_size > 16 * 1024, err


def test_an_export_through_a_symbolic_link_writes_the_file_it_points_to(tmp_path):
    db = _kb(tmp_path / "kb.sqlite", goals=2)
    shared = tmp_path / "shared"
    shared.mkdir()
    real = shared / "kb.yaml"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "kb-link.yaml"
    link.symlink_to(real)
    assert cli("kb", "export", "--db", str(db), "--out", str(link)).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link stays a link
    assert "goals:" in real.read_text() and oct(real.stat().st_mode & 0o777) == oct(0o640)  # its mode kept
    assert sorted(p.name for p in shared.iterdir()) == ["kb.yaml"]  # no temporary file left


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_exports_and_episode_folders_follow_the_umask(tmp_path, umask, mode):
    db = _kb(tmp_path / "kb.sqlite", goals=2)
    code, err, _peak = _run_measured(["kb", "export", "--db", str(db), "--out", str(tmp_path / "kb.yaml")], umask=umask)
    assert code == 0, err
    assert (tmp_path / "kb.yaml").stat().st_mode & 0o777 == mode
    episode = MALFORMED_EPISODES["metadata seed: abc"][0](tmp_path / "e.mcap")
    code, err, _peak = _run_measured(["episode", "export", str(episode), "--out", str(tmp_path / "ep")], umask=umask)
    assert code == 0, err
    assert (tmp_path / "ep").stat().st_mode & 0o777 == mode | (0o111 & ~umask)  # a folder: x where r
    assert (tmp_path / "ep" / "metadata.json").stat().st_mode & 0o777 == mode


def test_episode_export_gives_every_topic_a_file_of_its_own(tmp_path):
    names = topic_file_names(["/a/b", "/a_b", "/kb/changes", "/llm_cassette", "/a\x00b", "/x/" + "y" * 400])
    assert len(set(names.values())) == len(names)
    assert names["/kb/changes"] == "kb_changes.jsonl"  # readable where it is unambiguous
    assert names["/llm_cassette"] != "llm_cassette.jsonl"  # the export's own cassette
    assert all(len(n) <= 210 and "/" not in n and "\x00" not in n for n in names.values())
    from task_learning.episode.recorder import McapSink

    sink = McapSink(tmp_path / "two.mcap", {"scene": "tidy_kitchen"}, topics=None)
    for topic, text in (("/a/b", "first"), ("/a_b", "second")):
        sink.write_raw(topic, "std_msgs/msg/String", _raw_string(text), 1000)
    sink.close()
    out = tmp_path / "out"
    assert cli("episode", "export", str(tmp_path / "two.mcap"), "--out", str(out)).returncode == 0
    texts = sorted(p.read_text() for p in out.glob("*.jsonl") if p.name != "llm_cassette.jsonl")
    assert len(texts) == 2 and "first" in texts[0] + texts[1] and "second" in texts[0] + texts[1]
    assert all(("first" in t) != ("second" in t) for t in texts)  # one topic a file, none lost


def _raw_string(text: str) -> bytes:
    from task_learning.episode.recorder import _encoder
    from task_learning.episode.schema import msgdef

    return _encoder("std_msgs/msg/String", msgdef("std_msgs/msg/String"))({"data": text})


@pytest.mark.parametrize("record", ["{tmp}/no_such_folder/rec.jsonl", "/dev/full", "{tmp}"])
def test_an_unwritable_llm_record_stops_run_and_elicit_before_the_first_call(tmp_path, record):
    """`run --llm-record` to a path it could not write logged 15 errors, completed 16.7 % and
    exited 0; `elicit` exited 1 with "client raised OutputError"."""
    target = record.format(tmp=tmp_path)
    db = tmp_path / "kb.sqlite"
    for args in (["run", "--scene", "tidy_kitchen", "--db", str(db)],
                 ["elicit", "--scene", "tidy_kitchen", "--object", "mug in dish rack"]):
        err = one_line_error(cli(*args, "--llm-record", target), f"task-learning {args[0]}: error: cannot write",
                             target)
        assert "client raised" not in err
    assert not db.exists() and not (tmp_path / "no_such_folder").exists()


# -- 3. --db creates nothing it was not asked to ----------------------------------------------


def test_a_db_in_a_missing_folder_is_refused_naming_the_folder(tmp_path):
    db = tmp_path / "typo" / "dir" / "kb.sqlite"
    one_line_error(cli("run", "--scene", "tidy_kitchen", "--db", str(db)), f"the folder {db.parent} does not exist")
    assert not (tmp_path / "typo").exists()


def test_kb_import_of_a_missing_or_foreign_file_leaves_no_database(tmp_path):
    db = tmp_path / "kb.sqlite"
    one_line_error(cli("kb", "import", "--db", str(db), str(tmp_path / "missing.yaml")), "missing.yaml")
    assert not db.exists()
    foreign = tmp_path / "foreign.yaml"
    foreign.write_text("foo: 1\nbar: [2]\n")
    one_line_error(cli("kb", "import", "--db", str(db), str(foreign)), "foo: unknown key")
    typo = tmp_path / "typo.yaml"
    typo.write_text("goal: []\n")
    one_line_error(cli("kb", "import", "--db", str(db), str(typo)), "did you mean 'goals'")
    nothing = tmp_path / "nothing.yaml"
    nothing.write_text("schema_version: 1\n")
    one_line_error(cli("kb", "import", "--db", str(db), str(nothing)), "nothing to import")
    assert not db.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["foreign.yaml", "nothing.yaml",
                                                                              "typo.yaml"]


# -- 7. YAML --------------------------------------------------------------------------------


def test_an_alias_bomb_is_refused_while_parsing(tmp_path):
    started = time.monotonic()
    with pytest.raises(ConfigError, match="aliases"):
        parse_and_load(tmp_path, alias_bomb(9))
    assert time.monotonic() - started < 5
    with pytest.raises(ConfigError, match="its own anchor"):
        parse_and_load(tmp_path, "a: &a [*a]\n")
    # Aliases that repeat a little, as the shipped scenes do, still load.
    assert parse_yaml("a: &x [1, 2]\nb: *x\nc: {<<: {k: 1}, d: 2}\n") == {"a": [1, 2], "b": [1, 2],
                                                                        "c": {"k": 1, "d": 2}}
    assert load_yaml(config_path("scenes", "tidy_floorplan1.yaml"))
    assert parse_yaml(alias_bomb(levels=2, width=10))  # 1,000 leaves: under MAX_ALIAS_EXPANSION
    assert MAX_ALIAS_EXPANSION < 9**9


def parse_and_load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    return load_yaml(path)


@pytest.mark.parametrize("command", [
    ["sweep", "{bomb}"], ["scene", "--scene", "{bomb}"], ["kb", "import", "--db", "{workdir}/kb.sqlite", "{bomb}"]])
def test_every_loader_refuses_an_alias_bomb_in_seconds_with_one_line(tmp_path, command):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(9))
    args = [a.format(bomb=bomb, workdir=tmp_path) for a in command]
    started = time.monotonic()
    code, err, peak = _run_measured(args, cwd=tmp_path)
    _one_line(code, err, "bomb.yaml", "aliases")
    assert time.monotonic() - started < 60 and peak < MEMORY_LIMIT_KB
    assert not (tmp_path / "kb.sqlite").exists()


def test_no_module_parses_yaml_but_through_the_one_loader():
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("task_learning", "nodes", "scripts", "launch", "bench"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for call in ("yaml.safe_load(", "yaml.load(", "yaml.full_load(", "yaml.unsafe_load(",
                         "yaml.compose(", "yaml.load_all(", "yaml.safe_load_all("):
                if call in text and path != root / "task_learning" / "inputs" / "config.py":
                    offenders.append(f"{path.relative_to(root)}: {call}")
    assert offenders == []


# -- 8. sweeps ------------------------------------------------------------------------------


def test_a_grid_of_millions_is_counted_and_refused_before_a_trial_is_built(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(huge_grid(2000, 1000))
    code, err, peak = _run_measured(["sweep", str(path), "--out", str(tmp_path / "out")])
    _one_line(code, err, "6,000,000 trials", "100,000", "2000 llm x 1000 seeds")
    assert peak < MEMORY_LIMIT_KB and not (tmp_path / "out").exists()


# -- 6. episodes ----------------------------------------------------------------------------


@pytest.mark.parametrize("honest", [True, False])
def test_an_episode_that_decompresses_to_a_gigabyte_is_refused_in_little_memory(tmp_path, honest):
    path = bomb_episode(tmp_path / "bomb.mcap", honest=honest)
    assert path.stat().st_size < 600_000
    for args in (["replay", str(path)], ["episode", "info", str(path)],
                 ["episode", "export", str(path), "--out", str(tmp_path / "out")]):
        code, err, peak = _run_measured(args)
        _one_line(code, err, "bomb.mcap", "decompresses to")
        assert peak < MEMORY_LIMIT_KB, f"{args[0]}: {peak} KB"
    assert not (tmp_path / "out").exists()


def test_a_chunk_crowded_with_tiny_messages_is_read_in_bounded_memory(tmp_path):
    path = crowded_episode(tmp_path / "crowded.mcap")
    code, err, peak = _run_measured(["episode", "info", str(path)])
    _one_line(code, err, "/kb/changes message 1")
    assert peak < MEMORY_LIMIT_KB, f"{peak} KB"


@pytest.mark.parametrize("name", sorted(MALFORMED_EPISODES))
def test_a_malformed_episode_is_one_line_in_every_command(tmp_path, name):
    build, words = MALFORMED_EPISODES[name]
    path = build(tmp_path / "bad.mcap")
    results = []
    for args in (["replay", str(path)], ["episode", "info", str(path)],
                 ["episode", "export", str(path), "--out", str(tmp_path / "out")]):
        proc = cli(*args)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, (args, proc.stderr)
        results.append(proc)
    failed = [p for p in results if p.returncode != 0]
    assert failed, f"{name}: every command accepted it"
    assert any(words in p.stderr and len(p.stderr.strip().splitlines()) == 1 for p in failed), \
        [p.stderr[-300:] for p in failed]


# -- 4. stored secrets ----------------------------------------------------------------------


def test_a_sweeps_results_file_keeps_no_base_url_credentials(tmp_path):
    from task_learning.apps.sweeps.grid import expand
    from task_learning.apps.sweeps.results import ResultsStore
    from task_learning.apps.sweeps.spec import parse_sweep

    def trial_with(password: str):
        sweep = parse_sweep({"name": "x", "experiments": [{
            "kind": "stars", "scenes": ["tidy_kitchen"], "conditions": ["STARS"], "seeds": 1,
            "llm": [{"provider": "openai", "base_url": f"http://alice:{password}@gpu1:8000/v1"}]}]}, "f.yaml")
        return expand(sweep)[0]

    trial = trial_with("hunter2secret")
    assert "hunter2secret" in trial.params["llm"]["base_url"]  # the worker still gets what it calls
    path = tmp_path / "results.sqlite"
    with ResultsStore(path) as store:
        store.record(trial, "failed", error="cannot reach http://alice:hunter2secret@gpu1:8000/v1: refused")
        (stored,) = store.trials()
    assert stored.params["llm"]["base_url"] == "http://***@gpu1:8000/v1"
    for file in tmp_path.iterdir():
        assert b"hunter2secret" not in file.read_bytes() and b"alice" not in file.read_bytes(), file.name
    assert trial_with("rotated").key == trial.key  # a new password is not a new trial


def _fake_install(root: Path, model: bytes) -> tuple[Path, Path]:
    """A cache with a 'model' and a llama-server that leaves a mark when it is run."""
    from task_learning.llm.local_install import LocalModelPaths

    paths = LocalModelPaths(root)
    paths.model.parent.mkdir(parents=True)
    paths.model.write_bytes(model)
    paths.server.parent.mkdir(parents=True)
    mark = root / "server-ran"
    paths.server.write_text(f"#!/bin/sh\ntouch {mark}\nexit 0\n")
    paths.server.chmod(0o755)
    return paths.server, mark


def test_llm_status_and_serving_check_the_models_and_the_servers_sha256(tmp_path):
    from task_learning.llm.local_install import LocalModelPaths, build_server, server_problem

    server, mark = _fake_install(tmp_path, os.urandom(1024 * 1024))
    paths = LocalModelPaths(tmp_path)
    env = {"TASK_LEARNING_CACHE": str(tmp_path)}
    # A server whose hash was never recorded is not run; an install that finds it running records it.
    assert "no sha256 recorded" in (server_problem(paths) or "")
    assert "sha256 recorded now" in _built(build_server, paths)
    mark.unlink()
    assert server_problem(paths) is None
    # A random 1 MB file is not the installed model: status says so and exits 1, serving refuses it.
    status = cli("llm", "status", env=env)
    assert status.returncode == 1 and "model_verified    False" in status.stdout and "not the pinned model" in status.stdout
    one_line_error(cli("elicit", "--scene", "tidy_kitchen", "--object", "mug in dish rack", "--llm", "local", env=env),
                   "not the pinned model")
    assert not mark.exists()  # refused before the binary ran
    # A binary changed after its build is refused before it runs.
    server.write_text(f"#!/bin/sh\ntouch {mark}\necho owned\n")
    assert "changed since it was built" in (server_problem(paths) or "")
    assert "server_verified   False" in cli("llm", "status", env=env).stdout
    assert not mark.exists()


def _built(build_server, paths) -> str:
    steps: list[str] = []

    class Steps:
        def step(self, message: str) -> None:
            steps.append(message)

        def percent(self, what: str, value: int) -> None:
            pass

    build_server(paths, Steps(), which=lambda _name: None)
    return steps[-1]


# -- 16. what a newcomer hit -----------------------------------------------------------------


def test_experiment_with_an_unknown_condition_prints_the_prefix_and_the_valid_names():
    err = one_line_error(cli("experiment", "--conditions", "STARS,FOO"), "task-learning experiment: error:", "FOO")
    assert "STARS+O" in err and "TBP" in err


def test_an_interrupted_demo_leaves_no_plot_of_an_earlier_run(tmp_path, monkeypatch, capsys):
    from task_learning_nodes.clients import demo

    plot = tmp_path / "table2_tidy_kitchen.png"
    plot.write_bytes(b"an earlier run's plot")

    def interrupted(*_args, **_kwargs):
        (tmp_path / "knowledge.sqlite").write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "trial_through_ros", interrupted)
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    with pytest.raises(KeyboardInterrupt):
        demo.run_demo("tidy_kitchen", workdir=tmp_path)
    assert not plot.exists()
    assert "interrupted" in capsys.readouterr().out
