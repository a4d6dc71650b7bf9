"""Persistence faults: `run` killed with SIGKILL at random moments, locked, corrupt, truncated and
foreign databases, and knowledge from runs or imports without an operator reused under +O.

Two counts are measured here from the knowledge base itself, not from the run's own report:
* confirmed goals lost: a goal stored as confirmed before a kill that is missing or unconfirmed
  after it (or after the final, completed run);
* unconfirmed goals executed: a goal executed in a +O run for an object whose question log holds
  no operator "yes" (or description) for that goal, in this run or an earlier one.
"""
from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import yaml

from task_learning.faults.base import (
    CommandOutcome,
    Probe,
    ProbeContext,
    ProbeResult,
    expect_one_line_error,
    run_command,
)
from task_learning.kb import KnowledgeBase, LearnedGoal
from task_learning.kb.store import KnowledgeBaseError

CATEGORY = "persistence"
SCENE = "tidy_kitchen"


def _run(ctx: ProbeContext, db: Path, condition: str, *extra: str) -> CommandOutcome:
    return run_command(ctx, ["run", "--scene", SCENE, "--condition", condition, "--db", str(db), *extra])


def confirmed_goals(db: Path) -> set[tuple[str, str, str]]:
    with KnowledgeBase(db) as kb:
        return {(g.task, g.context, g.text) for g in kb.goals() if g.confirmed}


def operator_confirmations(db: Path) -> dict[str, set[str]]:
    """object id -> goal texts an operator said yes to (or "*" for a description they gave)."""
    out: dict[str, set[str]] = {}
    with KnowledgeBase(db) as kb:
        for row in kb.question_log():
            if row.get("answer") == "yes":
                out.setdefault(row["object_id"], set()).add(_norm(row.get("candidate_text") or ""))
            elif row.get("answer") == "description":
                out.setdefault(row["object_id"], set()).add("*")
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().strip().rstrip(".").split())


def unconfirmed_executed(report: dict[str, Any], db: Path) -> list[str]:
    """Objects whose goal the +O run acted on (actions > 0) with no operator confirmation of it."""
    confirmations = operator_confirmations(db)
    bad = []
    for obj in report.get("objects", []):
        if not obj.get("actions"):
            continue
        said = confirmations.get(obj.get("object_id", ""), set())
        if "*" not in said and _norm(obj.get("goal", "")) not in said:
            bad.append(f"{obj.get('object_id')}: {obj.get('goal')}")
    return bad


# ------------------------------------------------------------------------------------ probes
def _sigkill(ctx: ProbeContext) -> ProbeResult:
    """SIGKILL `run --condition STARS+O` at random moments; the knowledge base must stay usable and
    keep every confirmed goal, and a final run must complete from where the kills left it."""
    rng = random.Random(ctx.seed)
    db = ctx.path("killed.sqlite")
    kills = 1 if ctx.fast else 4
    confirmed: set[tuple[str, str, str]] = set()
    lost: set[tuple[str, str, str]] = set()
    moments = []
    at_kill = []
    for _ in range(kills):
        moment = rng.uniform(1.0, 30.0)
        moments.append(f"{moment:.1f}")
        proc = subprocess.Popen([ctx.python, "-m", "task_learning.cli", "run", "--scene", SCENE, "--condition",
                                 "STARS+O", "--db", str(db)], env=dict(ctx.env), cwd=ctx.workdir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=moment)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        try:
            now = confirmed_goals(db)
            with sqlite3.connect(db) as conn:
                check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        except (KnowledgeBaseError, sqlite3.Error) as exc:
            return ProbeResult(CATEGORY, "SIGKILL of run at random moments", False,
                               f"knowledge base unusable after a kill at {moment:.1f} s: {exc}")
        if check != "ok":
            return ProbeResult(CATEGORY, "SIGKILL of run at random moments", False, f"integrity_check: {check}")
        lost |= confirmed - now
        confirmed |= now
        at_kill.append(str(len(now)))
    final = _run(ctx, db, "STARS+O", "--json")
    if final.returncode != 0:
        return ProbeResult(CATEGORY, "SIGKILL of run at random moments", False,
                           f"the resumed run failed: {final.stderr.strip()[-200:]}")
    after = confirmed_goals(db)
    lost |= confirmed - after
    data = json.loads(final.stdout)
    return ProbeResult(CATEGORY, "SIGKILL of run at random moments", not lost,
                       f"{kills} kill(s) at {', '.join(moments)} s with {', '.join(at_kill)} confirmed goals "
                       f"stored; resumed run {data['completion']:.1f}%, {len(after)} confirmed goals",
                       confirmed_lost=len(lost))


def _locked(ctx: ProbeContext) -> ProbeResult:
    db = ctx.path("locked.sqlite")
    with KnowledgeBase(db):
        pass
    export = ctx.path("locked_import.yaml")
    export.write_text(yaml.safe_dump({"goals": [], "policies": []}))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, and not letting go
    try:
        if ctx.fast:  # the same code path with a short busy timeout
            try:
                with KnowledgeBase(db, busy_timeout_s=0.3) as kb:
                    kb.learn_goal(LearnedGoal(task="t", context="mug in sink", object_type="Mug", text="x",
                                              literals=[]))
            except KnowledgeBaseError as exc:
                ok = "locked by another process" in str(exc)
                return ProbeResult(CATEGORY, "locked database", ok, str(exc))
            return ProbeResult(CATEGORY, "locked database", False, "a write went through a held lock")
        outcome = run_command(ctx, ["run", "--scene", SCENE, "--condition", "STARS", "--db", str(db)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    return expect_one_line_error(CATEGORY, "locked database", outcome, "locked by another process")


def _corrupt(ctx: ProbeContext) -> ProbeResult:
    db = ctx.path("corrupt.sqlite")
    db.write_bytes(random.Random(ctx.seed).randbytes(8192))
    return expect_one_line_error(CATEGORY, "corrupt database", _run(ctx, db, "STARS"), "corrupt.sqlite")


def _truncated(ctx: ProbeContext) -> ProbeResult:
    db = ctx.path("truncated.sqlite")
    with KnowledgeBase(db) as kb:
        for i in range(200):
            kb.learn_goal(LearnedGoal(task="t", context=f"thing {i} on table", object_type="Mug",
                                      text="x" * 200, literals=[]))
        kb.database.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    outcome = run_command(ctx, ["kb", "show", "--db", str(db)])
    if outcome.returncode == 0 and not outcome.traceback:
        return ProbeResult(CATEGORY, "truncated database", True, "read what survives")
    return expect_one_line_error(CATEGORY, "truncated database", outcome, "truncated.sqlite")


def _foreign(ctx: ProbeContext) -> ProbeResult:
    db = ctx.path("foreign.sqlite")
    db.unlink(missing_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE goals (name TEXT, score REAL)")
    before = db.read_bytes()
    result = expect_one_line_error(CATEGORY, "foreign goals table", _run(ctx, db, "STARS"), "foreign.sqlite",
                                   "schema mismatch")
    if db.read_bytes() != before:
        return ProbeResult(CATEGORY, result.name, False, "the other program's file was modified")
    return result


def _reuse_without_operator(ctx: ProbeContext) -> ProbeResult:
    """Goals learned by `run --condition STARS` (no operator), then `run --condition STARS+O` on the
    same knowledge base: none may be executed without a question."""
    db = ctx.path("reuse.sqlite")
    db.unlink(missing_ok=True)
    first = _run(ctx, db, "STARS")
    if first.returncode != 0:
        return ProbeResult(CATEGORY, "STARS goals reused under STARS+O", False, f"STARS run failed: {first.stderr[-200:]}")
    return _under_oversight(ctx, db, "STARS goals reused under STARS+O", "goal(s) executed without a question")


def _import_confirmed(ctx: ProbeContext) -> ProbeResult:
    """An export whose goals claim `confirmed: true` (with a wrong goal among them) imported into a
    fresh knowledge base, then `run --condition STARS+O`: nothing unconfirmed by this operator runs."""
    source = ctx.path("import_source.sqlite")
    target = ctx.path("import_target.sqlite")
    for path in (source, target):
        path.unlink(missing_ok=True)
    first = _run(ctx, source, "STARS")
    if first.returncode != 0:
        return ProbeResult(CATEGORY, "imported 'confirmed' goals under STARS+O", False, first.stderr[-200:])
    with KnowledgeBase(source) as kb:
        data = kb.export_dict()
    for goal in data["goals"]:
        goal["confirmed"] = True
    export = ctx.path("import_confirmed.yaml")
    export.write_text(yaml.safe_dump(data, sort_keys=False))
    imported = run_command(ctx, ["kb", "import", "--db", str(target), str(export)])
    if imported.returncode != 0:
        ok, line = imported.one_line_error()
        return ProbeResult(CATEGORY, "imported 'confirmed' goals under STARS+O", ok, f"import refused: {line}")
    return _under_oversight(ctx, target, "imported 'confirmed' goals under STARS+O",
                            "imported goal(s) executed without this operator's yes")


def _under_oversight(ctx: ProbeContext, db: Path, name: str, what: str) -> ProbeResult:
    """`run --condition STARS+O` on `db`: passes when it refuses with one clear line or when no
    goal it executed lacks this operator's yes (`what` names such goals in the detail)."""
    run = _run(ctx, db, "STARS+O", "--json")
    if run.returncode != 0:
        ok, line = run.one_line_error()
        return ProbeResult(CATEGORY, name, ok, f"refused: {line}")
    bad = unconfirmed_executed(json.loads(run.stdout), db)
    return ProbeResult(CATEGORY, name, not bad, f"{len(bad)} {what}" + (f", e.g. {bad[0]}" if bad else ""),
                       unconfirmed_executed=len(bad))


def probes() -> list[Probe]:
    return [
        Probe(CATEGORY, "locked database", _locked),
        Probe(CATEGORY, "corrupt database", _corrupt, fast=False),
        Probe(CATEGORY, "truncated database", _truncated, fast=False),
        Probe(CATEGORY, "foreign goals table", _foreign),
        Probe(CATEGORY, "SIGKILL of run at random moments", _sigkill, fast=False),
        Probe(CATEGORY, "STARS goals reused under STARS+O", _reuse_without_operator, fast=False),
        Probe(CATEGORY, "imported 'confirmed' goals under STARS+O", _import_confirmed, fast=False),
    ]

