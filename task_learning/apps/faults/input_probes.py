"""Bad command-line input and bad configuration files, each through a real `task-learning`
process: handled means a one-line error naming the problem, a non-zero exit, no traceback and
no escape sequence reaching the terminal."""
from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from task_learning.apps.faults.base import (
    Probe,
    ProbeContext,
    ProbeResult,
    expect_one_line_error,
    run_command,
)
from task_learning.inputs.config import config_dir

ESC = "\x1b"


def _cli(name: str, args: Sequence[str], *needles: str, fast: bool = True) -> Probe:
    def probe(ctx: ProbeContext) -> ProbeResult:
        resolved = [a.replace("{workdir}", str(ctx.workdir)) for a in args]
        return expect_one_line_error("cli", name, run_command(ctx, resolved), *needles)

    return Probe("cli", name, probe, fast)


def cli_probes() -> list[Probe]:
    db = "{workdir}/cli.sqlite"
    return [
        _cli("run --workers 0", ["run", "--scene", "tidy_kitchen", "--db", db, "--workers", "0"], "--workers"),
        _cli("run --workers -3", ["run", "--scene", "tidy_kitchen", "--db", db, "--workers", "-3"], "--workers",
             fast=False),
        _cli("bcr --trials 1000000000", ["bcr", "--task", "make_coffee", "--trials", "1000000000"], "--trials",
             fast=False),
        _cli("bcr --max-actions 0", ["bcr", "--task", "make_coffee", "--max-actions", "0"], "--max-actions", fast=False),
        _cli("operator --wait inf", ["operator", "--list", "--wait", "inf"], "--wait", fast=False),
        _cli("scene --seed abc", ["scene", "--scene", "tidy_kitchen", "--seed", "abc"], "--seed", fast=False),
        _cli("run --condition bogus", ["run", "--scene", "tidy_kitchen", "--db", db, "--condition", "bogus"],
             "--condition", fast=False),
        _cli("escape sequences in an object name",
             ["scene", "--scene", "tidy_kitchen", "--object", f"{ESC}[2J{ESC}]0;owned\x07Mug"], "Mug"),
        _cli("unknown scene path", ["run", "--scene", "/etc/passwd", "--db", db], "passwd", fast=False),
        _cli("unknown object", ["elicit", "--scene", "tidy_kitchen", "--object", "unicorn"], "unicorn", fast=False),
        _cli("unknown BCR task", ["bcr", "--task", "fly_to_the_moon"], "fly_to_the_moon", fast=False),
    ]


def _config_copy(ctx: ProbeContext, name: str) -> Path:
    target = ctx.path(f"config_{name}")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(config_dir(), target)
    return target


def _config(name: str, edit: Callable[[Path], None], args: Sequence[str], *needles: str,
            fast: bool = True) -> Probe:
    def probe(ctx: ProbeContext) -> ProbeResult:
        cfg = _config_copy(ctx, name.replace(" ", "_").replace("/", "_"))
        edit(cfg)
        resolved = [a.replace("{workdir}", str(ctx.workdir)) for a in args]
        outcome = run_command(ctx, resolved, env={"TASK_LEARNING_CONFIG": str(cfg)})
        return expect_one_line_error("config", name, outcome, *needles)

    return Probe("config", name, probe, fast)


def _replace(relative: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(cfg: Path) -> None:
        path = cfg / relative
        text = path.read_text(encoding="utf-8")
        if old not in text:
            raise AssertionError(f"{relative} no longer contains {old!r}: update the probe")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return edit


def _write(relative: str, data: bytes) -> Callable[[Path], None]:
    def edit(cfg: Path) -> None:
        (cfg / relative).write_bytes(data)

    return edit


def _append(relative: str, text: str) -> Callable[[Path], None]:
    def edit(cfg: Path) -> None:
        with (cfg / relative).open("a", encoding="utf-8") as fh:
            fh.write(text)

    return edit


def config_probes() -> list[Probe]:
    run = ["run", "--scene", "tidy_kitchen", "--condition", "STARS+O", "--db", "{workdir}/config_run.sqlite"]
    return [
        _config("broken lexicon", _replace("grounding/lexicon.yaml", "\nnouns:", "\nnounz:"), run,
                "lexicon.yaml", "nounz"),
        _config("broken grammar", _replace("grounding/grammar.yaml", "clauses:", "clauzes:"), run,
                "grammar.yaml", "clauzes", fast=False),
        _config("broken affordances", _replace("grounding/affordances.yaml", "groups:", "groupz:"), run,
                "affordances.yaml", "groupz", fast=False),
        _config("duplicate key in llm.yaml", _append("llm.yaml", "\ndefault: openai\n"), run,
                "llm.yaml", "duplicate key 'default'", fast=False),
        _config("binary bcr_tasks.yaml", _write("domains/bcr_tasks.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00"),
                ["bcr", "--task", "make_coffee"], "bcr_tasks.yaml", "binary", fast=False),
        _config("non-UTF-8 scene file", _write("scenes/tidy_kitchen.yaml", "name: caf\u00e9\n".encode("latin-1")),
                run, "tidy_kitchen.yaml", "UTF-8", fast=False),
        _config("unknown key in llm.yaml", _replace("llm.yaml", "  timeout_s:", "  timeout_sec:"), run,
                "llm.yaml", "timeout_sec", fast=False),
        _config("negative timeout in llm.yaml", _replace("llm.yaml", "timeout_s: 30.0", "timeout_s: -1"), run,
                "llm.yaml", "client.timeout_s", fast=False),
        _config("bringup --param nosuch.x:=1", lambda _cfg: None, ["bringup", "--param", "nosuch.x:=1"],
                "unknown node 'nosuch'"),
        _config("bringup --param planner.nosuch:=1", lambda _cfg: None, ["bringup", "--param", "planner.nosuch:=1"],
                "no parameter 'nosuch'", fast=False),
    ]
