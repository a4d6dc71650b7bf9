"""Bad input to the command line, config files and the knowledge base (issue 10): each case is a
one-line error naming the problem, a non-zero exit, no traceback, and nothing lost.
Real `task-learning` processes where the exit code and the terminal output are the point."""
from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from task_learning.apps.cli import main
from task_learning.errors import ConfigError
from task_learning.inputs.config import config_dir, load_yaml
from task_learning.kb import KnowledgeBase, LearnedGoal
from task_learning.kb.store import Confirmation, KnowledgeBaseError
from task_learning.planning.session import RunSpec, run_in_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # most tests run the CLI in a subprocess

ESC = "\x1b"


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    """`task-learning ARGS` as a real process (deadline: a hang fails instead of blocking)."""
    return subprocess.run([sys.executable, "-m", "task_learning.apps.cli", *args], capture_output=True, check=False,
                          text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode != 0, proc.stdout
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    return err


def config_copy(tmp_path: Path) -> Path:
    target = tmp_path / "config"
    shutil.copytree(config_dir(), target)
    return target


# ------------------------------------------------------------------------------- CLI options
@pytest.mark.parametrize("args, needle", [
    (["run", "--scene", "tidy_kitchen", "--db", "x.sqlite", "--workers", "0"], "--workers: must be between 1 and 64"),
    (["run", "--scene", "tidy_kitchen", "--db", "x.sqlite", "--workers", "-3"], "--workers: must be between 1 and 64"),
    (["bcr", "--task", "make_coffee", "--trials", "1000000000"], "--trials: must be between 1 and 10000"),
    (["bcr", "--task", "make_coffee", "--max-actions", "0"], "--max-actions"),
    (["bcr", "--task", "make_coffee", "--seed", "-1"], "--seed"),
    (["elicit", "--scene", "tidy_kitchen", "--object", "mug", "--max-workers", "100000"], "--max-workers"),
    (["operator", "--list", "--wait", "nan"], "--wait: must be a finite number"),
    (["scene", "--scene", "tidy_kitchen", "--seed", "12abc"], "expected an integer"),
    (["run", "--scene", "tidy_kitchen", "--db", "x.sqlite", "--condition", "nope"], "--condition"),
])
def test_out_of_range_options_are_refused_in_one_line(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_ctrl_c_while_the_subcommands_load_is_exit_130_without_a_traceback(monkeypatch, capsys):
    """The subcommands' imports take a second or two before any command runs: a Ctrl-C there
    printed a KeyboardInterrupt traceback (seen stopping `task-learning bringup` at once)."""
    import task_learning.apps.cli as cli_package

    def interrupted(_name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_package.importlib, "import_module", interrupted)
    try:
        code = main(["bringup"])
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main (the user would see its traceback)")
    assert code == 130
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_escape_sequences_in_echoed_names_are_stripped():
    # Before: the object name came back raw, so a name could recolour or retitle the terminal.
    proc = cli("scene", "--scene", "tidy_kitchen", "--object", f"{ESC}[31mMug{ESC}]0;pwned\x07\x9b2J")
    err = one_line_error(proc, "Mug")
    assert ESC not in err and "\x07" not in err and "\x9b" not in err and "pwned" not in err


# ------------------------------------------------------------------------------ config files
def test_duplicate_keys_binary_and_non_utf8_yaml_are_clear_errors(tmp_path):
    cases = {
        "dup.yaml": (b"client:\n  timeout_s: 5\n  timeout_s: 500\n", "duplicate key 'timeout_s' (first on line 2)"),
        "binary.yaml": (bytes(range(256)), "binary file"),
        "latin1.yaml": ("default: caf\u00e9\n".encode("latin-1"), "not UTF-8"),
    }
    for name, (data, needle) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ConfigError) as err:
            load_yaml(path)
        assert needle in str(err.value) and name in str(err.value)


def test_a_binary_config_file_stops_a_command_in_one_line(tmp_path):
    cfg = config_copy(tmp_path)
    (cfg / "domains" / "bcr_tasks.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    proc = cli("bcr", "--task", "make_coffee", env={"TASK_LEARNING_CONFIG": str(cfg)})
    one_line_error(proc, "bcr_tasks.yaml", "binary file")


def test_a_broken_lexicon_stops_a_run_before_any_llm_call(tmp_path, monkeypatch):
    # Before: the lexicon was read per candidate; a run made 183 LLM calls, logged 290 errors
    # and exited 0 at 16.7 %.
    cfg = config_copy(tmp_path)
    lexicon = cfg / "grounding" / "lexicon.yaml"
    lexicon.write_text(lexicon.read_text().replace("\nnouns:", "\nnounz:"))
    monkeypatch.setenv("TASK_LEARNING_CONFIG", str(cfg))
    from task_learning.llm.client import make_client

    client = make_client("offline")
    with pytest.raises(ConfigError, match=r"lexicon.yaml: nounz: unknown key \(did you mean 'nouns'\?\)"):
        run_in_process(RunSpec(scene="tidy_kitchen", condition="STARS+O", db=tmp_path / "kb.sqlite"),
                       client=client)
    assert client.usage.calls == 0
    proc = cli("run", "--scene", "tidy_kitchen", "--db", str(tmp_path / "kb2.sqlite"),
               env={"TASK_LEARNING_CONFIG": str(cfg)})
    one_line_error(proc, "lexicon.yaml", "nounz")


@pytest.mark.parametrize("name, text, needle", [
    ("grammar.yaml", ("clauses:", "clauzes:"), "grammar.yaml: clauzes: unknown key"),
    ("affordances.yaml", ("groups:", "groupz:"), "affordances.yaml: groupz: unknown key"),
])
def test_broken_grammar_or_affordances_stop_a_run_at_start(tmp_path, monkeypatch, name, text, needle):
    cfg = config_copy(tmp_path)
    path = cfg / "grounding" / name
    path.write_text(path.read_text().replace(*text))
    monkeypatch.setenv("TASK_LEARNING_CONFIG", str(cfg))
    with pytest.raises(ConfigError, match=needle):
        run_in_process(RunSpec(scene="tidy_kitchen", condition="STARS", db=":memory:"))


@pytest.mark.parametrize("param, needle", [
    ("nosuch.x:=1", "unknown node 'nosuch'"),
    ("planner.nosuch:=1", "node 'planner' has no parameter 'nosuch'"),
    ("planner.condtion:=STARS", "did you mean planner.condition?"),
])
def test_bringup_refuses_unknown_nodes_and_parameters(param, needle, capsys):
    # Before: silently ignored, the node started with its defaults.
    assert main(["bringup", "--param", param]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


# -------------------------------------------------------------------------- knowledge base
def test_a_locked_database_waits_then_says_so(tmp_path):
    db = tmp_path / "kb.sqlite"
    KnowledgeBase(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process's write in progress
    try:
        kb = KnowledgeBase(db, busy_timeout_s=0.2)
        goal = LearnedGoal(task="t", context="mug in sink", object_type="Mug", text="x", literals=[])
        with pytest.raises(KnowledgeBaseError, match="locked by another process"):
            kb.learn_goal(goal)
        kb.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with KnowledgeBase(db) as kb:  # once released, the same write goes through
        kb.learn_goal(goal)
        assert kb.goal_for("t", "mug in sink") is not None


def test_a_foreign_goals_table_is_named_and_left_untouched(tmp_path):
    db = tmp_path / "other.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE goals (name TEXT, score REAL)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    proc = cli("kb", "show", "--db", str(db))
    one_line_error(proc, "other.sqlite", "schema mismatch", "goals")
    assert db.read_bytes() == before


def test_corrupt_database_and_bad_exports_imports_are_one_line_errors(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(os.urandom(4096))
    one_line_error(cli("kb", "show", "--db", str(corrupt)), "corrupt.sqlite", "not SQLite or is corrupt")

    db = tmp_path / "kb.sqlite"
    with KnowledgeBase(db) as kb:
        kb.learn_goal(LearnedGoal(task="t", context="mug in sink", object_type="Mug", text="x", literals=[],
                                  confirmation=Confirmation.OPERATOR_YES))
    one_line_error(cli("kb", "export", "--db", str(db), "--out", str(tmp_path)), "is a directory")
    one_line_error(cli("kb", "export", "--db", str(db), "--out", "/proc/kb.yaml"), "cannot write /proc/kb.yaml")
    binary = tmp_path / "dump.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    one_line_error(cli("kb", "import", "--db", str(db), str(binary)), "dump.bin", "binary file")
    malformed = tmp_path / "bad.yaml"
    malformed.write_text("goals: [{task: x\n")
    one_line_error(cli("kb", "import", "--db", str(db), str(malformed)), "bad.yaml", "malformed YAML")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("goals: 5\n")
    one_line_error(cli("kb", "import", "--db", str(db), str(wrong)), "wrong.yaml: goals: expected a list")
    with KnowledgeBase(db) as kb:  # nothing lost
        assert [g.context for g in kb.goals()] == ["mug in sink"] and kb.goals()[0].confirmed


# ----------------------------------------------------------------------------- LLM endpoint
def test_a_dead_endpoint_ends_a_run_quickly_with_a_clear_error_and_no_secret(tmp_path):
    # Before: 5 attempts x every object with no output for minutes, and it could still exit 0.
    cfg = config_copy(tmp_path)
    llm = cfg / "llm.yaml"
    llm.write_text(llm.read_text().replace("backoff_s: 1.0", "backoff_s: 0.01")
                   .replace("breaker_failures: 5", "breaker_failures: 3"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = cli("run", "--scene", "tidy_kitchen", "--condition", "STARS", "--llm", "openai",
               "--db", str(tmp_path / "kb.sqlite"),
               env={"TASK_LEARNING_CONFIG": str(cfg),
                    "OPENAI_BASE_URL": f"http://robot:hunter2-secret@127.0.0.1:{port}/v1"})
    err = one_line_error(proc, "LLM endpoint is unavailable, run stopped", "3 attempts in a row",
                         "http://***@127.0.0.1")
    assert proc.returncode == 2 and "hunter2-secret" not in err + proc.stdout


def _fast_failing_config(tmp_path: Path) -> Path:
    cfg = config_copy(tmp_path)
    llm = cfg / "llm.yaml"
    llm.write_text(llm.read_text().replace("max_retries: 4", "max_retries: 0").replace("backoff_s: 1.0", "backoff_s: 0.01"))
    return cfg


@pytest.mark.parametrize("reply, needles", [
    # Before: exit 0 at 16.7 % after every object failed.
    ({"status": 500, "body": {"error": {"message": "upstream died", "type": "server_error"}}},
     ("5 calls in a row failed", "HTTP 500", "upstream died")),
    ({"status": 200, "body": {"error": {"message": "model overloaded"}}}, ("5 calls in a row failed", "model overloaded")),
    ({"status": 404, "body": {"error": {"message": "The model `gpt-nope` does not exist"}}},
     ("HTTP 404", "configuration error", "does not exist")),
], ids=["5xx", "error-body", "wrong-model"])
def test_an_endpoint_that_fails_every_call_ends_the_run_with_exit_2_naming_it(tmp_path, reply, needles):
    from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply

    cfg = _fast_failing_config(tmp_path)
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(**reply))
        proc = cli("run", "--scene", "store_groceries", "--condition", "STARS", "--llm", "openai",
                   "--llm-model", "gpt-nope", "--base-url", server.base_url, "--db", str(tmp_path / "kb.sqlite"),
                   env={"TASK_LEARNING_CONFIG": str(cfg)})
        sent = server.requests_to(COMPLETIONS)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    *warnings, err = proc.stderr.strip().splitlines()  # the failed calls' warnings, then the reason
    assert all(w.startswith("WARNING") for w in warnings), proc.stderr
    for needle in ("task-learning run: error: the LLM endpoint is unavailable, run stopped", server.base_url,
                   *needles):
        assert needle in err, err
    assert sent and {r.body["model"] for r in sent} == {"gpt-nope"}  # --llm-model, no file edited
    assert len(sent) <= 10  # ended at once, not after every object


def test_models_come_from_the_environment_without_editing_a_file(tmp_path):
    from task_learning.llm.client import make_client

    client = make_client("openai", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                        "TASK_LEARNING_LLM_MODEL": "my-completions",
                                        "TASK_LEARNING_LLM_SELECTION_MODEL": "my-chat"})
    with client:
        assert client.provider.model == "my-completions" and client.provider.selection_model == "my-chat"
    explicit = make_client("openai", completion_model="flag-model",
                           env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "TASK_LEARNING_LLM_MODEL": "env-model"})
    with explicit:
        assert explicit.provider.model == "flag-model"  # an option beats the environment
