"""Hostile inputs, so `task-learning faults` keeps trying them: NaN and
absurd numbers, flag combinations that cannot work, special files, deep nesting, marker
registries, prompts, LLM-State task files, bring-up entries, malformed recorded AI2-THOR
metadata, exports that cannot be written, locked and foreign databases, and read-only commands
that must change nothing. Each runs a real `task-learning` process; handled means one line naming
the problem, a non-zero exit, no traceback, and (where it says so) no file created or changed.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from task_learning.apps.faults.base import (
    CommandOutcome,
    Probe,
    ProbeContext,
    ProbeResult,
    expect_one_line_error,
    run_command,
)
from task_learning.apps.faults.input_probes import _config, _replace


def _cli(name: str, args: Sequence[str], *needles: str, fast: bool = False) -> Probe:
    def probe(ctx: ProbeContext) -> ProbeResult:
        resolved = [a.replace("{workdir}", str(ctx.workdir)) for a in args]
        return expect_one_line_error("cli", name, run_command(ctx, resolved, timeout_s=120), *needles)

    return Probe("cli", name, probe, fast)


def _special_file(name: str, make: Callable[[Path], Path], args: Callable[[Path], list[str]], *needles: str,
                  fast: bool = False) -> Probe:
    """An input that is not a regular file: refused by name within seconds (a FIFO used to hang)."""
    def probe(ctx: ProbeContext) -> ProbeResult:
        path = make(ctx.workdir)
        outcome = run_command(ctx, args(path), timeout_s=60)
        return expect_one_line_error("cli", name, outcome, *needles)

    return Probe("cli", name, probe, fast)


def _fifo(folder: Path, name: str = "fifo.yaml") -> Path:
    path = folder / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def cli_probes() -> list[Probe]:
    return [
        _cli("bag play --rate nan", ["bag", "play", "--bag", "{workdir}/none", "--rate", "nan"], "--rate", "finite",
             fast=True),
        _cli("bag play --rate 1e-9", ["bag", "play", "--bag", "{workdir}/none", "--rate", "1e-9"], "--rate"),
        _cli("perceive --depth-noise nan", ["perceive", "--backend", "fetch", "--scene", "tidy_kitchen", "--synthetic",
                                            "--depth-noise", "nan"], "--depth-noise", "finite"),
        _cli("anticipate --graph without --robot", ["anticipate", "--day", "trace_01", "--graph"],
             "--graph needs --robot", fast=True),
        _cli("run --synthetic without --backend fetch", ["run", "--scene", "tidy_kitchen", "--db",
                                                         "{workdir}/synthetic.sqlite", "--synthetic"],
             "--synthetic needs --backend fetch"),
        _cli("bringup --backend unity", ["bringup", "--backend", "unity"], "--backend", "unity"),
        _special_file("scene from a named pipe", _fifo, lambda p: ["scene", "--scene", str(p)], "fifo.yaml",
                      "named pipe", fast=True),
        _special_file("scene from a directory", lambda d: d, lambda p: ["scene", "--scene", str(p)], "a directory"),
        _special_file("kb import from /dev/zero", lambda d: Path("/dev/zero"),
                      lambda p: ["kb", "import", "--db", str(p.parent / "zero.sqlite"), str(p)], "/dev/zero",
                      "character device"),
        _special_file("cassette from a named pipe", lambda d: _fifo(d, "cassette.jsonl"),
                      lambda p: ["elicit", "--scene", "tidy_kitchen", "--object", "mug in dish rack", "--llm",
                                 f"replay:{p}"], "cassette.jsonl", "named pipe"),
    ]


# -- configuration ------------------------------------------------------------------------------


MUG = "{id: 2, object: 'Mug|1', type: Mug, size: 0.05"
REGISTRIES = {
    "empty marker registry": ("markers: []\n", "markers", "empty"),
    "unknown object state in a registry": (f"markers:\n  - {MUG}, state: {{isFilthy: true}}}}\n", "isFilthy",
                                           "unknown key"),
    "marker id beyond the dictionary": ("markers:\n  - {id: 4096, object: 'Mug|1', type: Mug, size: 0.05}\n",
                                        "markers[0].id", "between 0 and 49"),
    "marker of a kilometre": ("markers:\n  - {id: 2, object: 'Mug|1', type: Mug, size: 1000.0}\n", "markers[0].size",
                              "(0, 2]"),
    "NaN marker offset": (f"markers:\n  - {MUG}, offset: [0, .nan, 0]}}\n", "offset", "finite"),
    "control characters in a marker's object": ("markers:\n  - {id: 2, object: \"Mug|\\e[2J1\", type: Mug, size: 0.05}\n",
                                                "markers[0].object", "control characters"),
}


def _deep(relative: str, depth: int) -> Callable[[Path], None]:
    def edit(cfg: Path) -> None:
        (cfg / relative).write_text("task: t\nlocation: kitchen\nobjects: " + "[" * depth + "]" * depth + "\n",
                                    encoding="utf-8")

    return edit


def _contained(cfg: Path) -> None:
    boxes = "\n".join(f"  - {{type: Box, id: 'Box|{i}'" + (f", at: 'Box|{i - 1}'" if i else "") + "}"
                      for i in range(40))
    (cfg / "scenes" / "nested.yaml").write_text(
        f"task: t\nlocation: kitchen\ntypes:\n  Box: {{receptacle: true, pickupable: true}}\nobjects:\n{boxes}\n",
        encoding="utf-8")


def config_probes() -> list[Probe]:
    run = ["run", "--scene", "tidy_kitchen", "--condition", "STARS+O", "--db", "{workdir}/config_run.sqlite"]
    probes = [
        _config("timeout_s: .nan in llm.yaml", _replace("llm.yaml", "timeout_s: 30.0", "timeout_s: .nan"), run,
                "llm.yaml", "client.timeout_s", "finite"),
        _config("goal prompt asking for 500 logprobs", _replace("prompts/goal.yaml", "logprobs: 5", "logprobs: 500"),
                run, "goal.yaml", "request.logprobs", "between 1 and 20", fast=False),
        _config("goal prompt with an unknown {placeholder}",
                _replace("prompts/goal.yaml", "Task context: I am in $location.", "Task context: I am in {room}."),
                run, "goal.yaml", "{room}", fast=False),
        _config("LLM-State task of an unknown class",
                _replace("llm_state/tasks.yaml", "check: [{class: milk, state: [hot]}]",
                         "check: [{class: unicorn, state: [hot]}]"),
                ["llm-state", "--task", "heat_milk"], "tasks.yaml", "unknown class 'unicorn'", fast=False),
        _config("scene nested 5000 levels deep", _deep("scenes/deep.yaml", 5000), ["scene", "--scene", "deep"],
                "deep.yaml", "nested more than", fast=False),
        _config("scene contained 40 levels deep", _contained, ["scene", "--scene", "nested"], "nested.yaml",
                "levels deep", fast=False),
        _config("bringup entry naming http.server",
                _replace("bringup.yaml", "  perception:\n    params: nodes/perception.yaml",
                         "  perception:\n    module: http.server\n    params: nodes/perception.yaml"),
                ["bringup"], "bringup.yaml", "http.server", "not a node of this project", fast=False),
    ]
    probes += [_registry_probe(name, text, key, words) for name, (text, key, words) in REGISTRIES.items()]
    probes += [_recording_probe(name, edit) for name, edit in RECORDINGS.items()]
    return probes


def _registry_probe(name: str, text: str, *needles: str) -> Probe:
    """`bag perceive --registry R.yaml` with a hostile registry: refused before any frame is read."""
    def probe(ctx: ProbeContext) -> ProbeResult:
        registry = ctx.path(f"registries/{name.replace(' ', '_').replace(chr(39), '')}.yaml")
        registry.write_text(text, encoding="utf-8")
        outcome = run_command(ctx, ["bag", "perceive", "--bag", str(ctx.workdir / "none"), "--scene", "tidy_kitchen",
                                    "--registry", str(registry)], timeout_s=120)
        return expect_one_line_error("config", name, outcome, registry.name, *needles)

    return Probe("config", name, probe, fast=False)


# -- recorded AI2-THOR metadata ------------------------------------------------------------------------


def _object(kind: str, oid: str, x: float, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"objectId": oid, "objectType": kind, "name": oid.replace("|", "_"),
                              "position": {"x": x, "y": 0.9, "z": 0.0}, "rotation": {"x": 0.0, "y": 0.0, "z": 0.0},
                              "receptacle": False, "pickupable": False, "openable": False, "isOpen": False,
                              "parentReceptacles": None, "receptacleObjectIds": None}
    record.update(extra)
    return record


def _recorded_kitchen() -> list[dict[str, Any]]:
    return [_object("CounterTop", "CounterTop|1", 0.0, receptacle=True, receptacleObjectIds=["Apple|1", "Mug|1"]),
            _object("Fridge", "Fridge|1", 2.0, receptacle=True, openable=True),
            _object("Apple", "Apple|1", 0.1, pickupable=True, parentReceptacles=["CounterTop|1"]),
            _object("Mug", "Mug|1", -0.1, pickupable=True, receptacle=True, parentReceptacles=["CounterTop|1"])]


def _with(change: Callable[[list[dict[str, Any]]], None]) -> Callable[[], list[dict[str, Any]]]:
    def build() -> list[dict[str, Any]]:
        objects = _recorded_kitchen()
        change(objects)
        return objects

    return build


def _set(index: int, key: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda objects: objects[index].__setitem__(key, value)


def _cycle(objects: list[dict[str, Any]]) -> None:
    objects[2].update(receptacle=True, parentReceptacles=["Mug|1"])
    objects[3]["parentReceptacles"] = ["Apple|1"]


RECORDINGS: dict[str, tuple[Callable[[], list[dict[str, Any]]], str]] = {
    "recording: empty object list": (list, "no objects"),
    "recording: control characters in an id": (_with(_set(1, "objectId", "Fridge|\x1b]0;owned\x07")), "control characters"),
    "recording: a child that does not exist": (_with(lambda o: o[0]["receptacleObjectIds"].append("Ghost|1")),
                                               "Ghost|1"),
    "recording: a string for a number": (_with(_set(2, "mass", "heavy")), "mass"),
    "recording: a containment cycle": (_with(_cycle), "containment cycle"),
    "recording: the string 'false' for a boolean": (_with(_set(1, "isOpen", "false")), "isOpen"),
    "recording: NaN position": (_with(_set(2, "position", {"x": float("nan"), "y": 0.9, "z": 0.0})), "finite"),
    "recording: infinite position": (_with(_set(2, "position", {"x": float("inf"), "y": 0.9, "z": 0.0})), "finite"),
    "recording: null position": (_with(_set(3, "position", None)), "position"),
}


def _recording_probe(name: str, case: tuple[Callable[[], list[dict[str, Any]]], str]) -> Probe:
    build, words = case

    def probe(ctx: ProbeContext) -> ProbeResult:
        path = ctx.path(f"recordings/{name.split(': ', 1)[1].replace(' ', '_').replace(chr(39), '')}.json")
        path.write_text(json.dumps({"7": build()}), encoding="utf-8")  # NaN and Infinity as JSON writes them
        results = []
        for backend in ("symbolic", "ai2thor"):
            outcome = run_command(ctx, ["scene", "--scene", f"{path}#7", "--backend", backend], timeout_s=120)
            results.append(expect_one_line_error("config", f"{name} ({backend})", outcome, path.name, words))
        bad = [r for r in results if not r.handled]
        return ProbeResult("config", name, not bad, (bad or results)[0].detail)

    return Probe("config", name, probe, fast=False)


# -- persistence: writes, locks, foreign tables, read-only commands -----------------------------


def _limited(limit_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return apply


def _knowledge(ctx: ProbeContext, name: str) -> Path:
    from task_learning.kb import KnowledgeBase, LearnedGoal

    db = ctx.path(name)
    db.unlink(missing_ok=True)
    with KnowledgeBase(db) as kb:
        for i in range(30):
            kb.learn_goal(LearnedGoal(task="tidy kitchen", context=f"mug {i} in sink", object_type="Mug",
                                      text="the goal is that the mug is in the cabinet", literals=[]))
    return db


def _export_full_disk(ctx: ProbeContext) -> ProbeResult:
    db = _knowledge(ctx, "export_full.sqlite")
    folder = ctx.path("export_full/x").parent
    out = folder / "kb.yaml"
    out.write_text("the previous export\n")
    started = time.monotonic()
    try:
        proc = subprocess.run([ctx.python, "-m", "task_learning.apps.cli", "kb", "export", "--db", str(db), "--out",
                               str(out)], capture_output=True, text=True, timeout=120, env=dict(ctx.env),
                              preexec_fn=_limited(2048))
    except subprocess.TimeoutExpired:
        return ProbeResult("persistence", "kb export onto a full disk", False, "hang")
    outcome = CommandOutcome(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)
    result = expect_one_line_error("persistence", "kb export onto a full disk", outcome, str(out))
    left = sorted(p.name for p in folder.iterdir())
    if result.handled and (out.read_text() != "the previous export\n" or left != ["kb.yaml"]):
        return ProbeResult("persistence", result.name, False, f"a partial file was left: {left}")
    return result


def _export_device(ctx: ProbeContext) -> ProbeResult:
    db = _knowledge(ctx, "export_device.sqlite")
    outcome = run_command(ctx, ["kb", "export", "--db", str(db), "--out", "/dev/full"])
    result = expect_one_line_error("persistence", "kb export --out /dev/full", outcome, "/dev/full")
    if not Path("/dev/full").is_char_device():
        return ProbeResult("persistence", result.name, False, "/dev/full was replaced by a file")
    return result


def _export_locked(ctx: ProbeContext) -> ProbeResult:
    db = _knowledge(ctx, "export_locked.sqlite")
    code = (f"import sqlite3, sys\nc = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); c.execute('DELETE FROM goals')\nprint('locked', flush=True)\n"
            "sys.stdin.readline()\nc.execute('ROLLBACK')\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout is None or holder.stdout.readline().strip() != "locked":
            return ProbeResult("persistence", "kb export from a locked database", False, "could not hold the lock")
        outcome = run_command(ctx, ["kb", "export", "--db", str(db), "--out", str(ctx.path("locked_export.yaml"))])
    finally:
        holder.kill()
        holder.wait()
    return expect_one_line_error("persistence", "kb export from a locked database", outcome, "locked by another process")


def _other_tables(ctx: ProbeContext) -> ProbeResult:
    db = ctx.path("other_program.sqlite")
    db.unlink(missing_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
    before = db.read_bytes()
    outcome = run_command(ctx, ["run", "--scene", "tidy_kitchen", "--condition", "STARS", "--db", str(db)])
    result = expect_one_line_error("persistence", "run --db holding another program's tables", outcome,
                                   "invoices", "did not create")
    if db.read_bytes() != before:
        return ProbeResult("persistence", result.name, False, "the other program's file was written into")
    return result


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _read_only(ctx: ProbeContext) -> ProbeResult:
    folder = ctx.path("read_only/x").parent
    missing = folder / "typo.sqlite"
    outcome = run_command(ctx, ["kb", "show", "--db", str(missing)], cwd=folder)
    result = expect_one_line_error("persistence", "read-only commands change nothing", outcome,
                                   f"no knowledge base at {missing}")
    if not result.handled or missing.exists():
        return ProbeResult("persistence", result.name, False, result.detail if not result.handled
                           else "kb show created the missing knowledge base")
    db = _knowledge(ctx, "read_only/kb.sqlite")
    before = _tree(folder)
    for args in (["kb", "show", "--db", str(db)], ["kb", "export", "--db", str(db)],
                 ["scene", "--scene", "tidy_kitchen", "--json"]):
        done = run_command(ctx, args, cwd=folder)
        if done.returncode != 0:
            return ProbeResult("persistence", result.name, False, f"{' '.join(args[:2])}: {done.stderr.strip()[-160:]}")
        if _tree(folder) != before:
            return ProbeResult("persistence", result.name, False, f"{' '.join(args[:2])} created or changed a file")
    return ProbeResult("persistence", result.name, True, f"missing base named ({result.detail}); kb show, kb export "
                                                         "and scene left every file as it was")


def persistence_probes() -> list[Probe]:
    return [
        Probe("persistence", "kb export --out /dev/full", _export_device),
        Probe("persistence", "kb export onto a full disk", _export_full_disk, fast=False),
        Probe("persistence", "kb export from a locked database", _export_locked, fast=False),
        Probe("persistence", "run --db holding another program's tables", _other_tables, fast=False),
        Probe("persistence", "read-only commands change nothing", _read_only),
    ]
