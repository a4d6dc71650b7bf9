"""Hostile data, so `task-learning faults` keeps trying it: standard output cut
short by a disk that fills part-way, YAML alias bombs in every loader, a sweep grid of millions of
trials, episodes whose chunk decompresses to a gigabyte and episodes with malformed channels and
metadata, `--db` in a folder that does not exist, foreign files to import, exports through a
symbolic link and under a umask, topics that shared one export file, an installed model that is
not the pinned one. Each runs a real `task-learning` process; handled means one line naming the
problem, a non-zero exit, no traceback, nothing left behind, and for the bombs a peak resident
memory under MEMORY_LIMIT_MB (measured with wait4 on the child).
"""
from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from task_learning.apps.faults.base import CommandOutcome, Probe, ProbeContext, ProbeResult, expect_one_line_error
from task_learning.apps.faults.hostile_files import (
    MALFORMED_EPISODES,
    alias_bomb,
    bomb_episode,
    crowded_episode,
    huge_grid,
)

MEMORY_LIMIT_MB = 300


def run_measured(ctx: ProbeContext, args: Sequence[str], *, limit_bytes: int | None = None, umask: int | None = None,
                 stdout_path: Path | None = None, timeout_s: float = 300.0) -> tuple[CommandOutcome, float]:
    """`task-learning ARGS` as a child, and its own peak resident memory in MB (wait4's
    ru_maxrss of that child alone). `limit_bytes`: the child may write at most that much to a
    file (a disk that fills part-way); `stdout_path`: its standard output goes to that file."""
    def prepare() -> None:
        if limit_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        if umask is not None:
            os.umask(umask)

    started = time.monotonic()
    with open(stdout_path or os.devnull, "wb") as out:
        proc = subprocess.Popen([ctx.python, "-m", "task_learning.apps.cli", *args],
                                stdout=out if stdout_path is not None else subprocess.PIPE,
                                stderr=subprocess.PIPE, env=dict(ctx.env), cwd=ctx.workdir,
                                preexec_fn=prepare)  # noqa: PLW1509 - resource limits only
        code, stdout, stderr, peak_kb = wait_measured(proc, timeout_s)
    return CommandOutcome(code, stdout, stderr, time.monotonic() - started), peak_kb / 1024


def wait_measured(proc: subprocess.Popen, timeout_s: float) -> tuple[int | None, str, str, float]:
    """(exit status or None after a kill at the deadline, stdout, stderr, peak RSS in KB) of a
    child: its pipes read by threads, the child reaped here with wait4. The peak is the child's own
    VmHWM (/proc/PID/status), read every 10 ms while it runs: wait4's ru_maxrss also counts the
    resident size this process had when it forked the child (Linux keeps the pre-exec memory's
    high-water mark), so a large runner (the faults command after its ROS probes: 589 MB) made
    every child look that large."""
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(key: str, pipe: Any) -> None:
        if pipe is not None:
            chunks[key].append(pipe.read())
            pipe.close()

    readers = [threading.Thread(target=drain, args=(k, pipe), daemon=True)
               for k, pipe in (("out", proc.stdout), ("err", proc.stderr))]
    reaped: list[tuple[int, int, Any]] = []
    peak_kb = [0.0]
    waiter = threading.Thread(target=lambda: reaped.append(os.wait4(proc.pid, 0)), daemon=True)
    sampler = threading.Thread(target=_sample_hwm, args=(proc.pid, reaped, peak_kb), daemon=True)
    for thread in (*readers, waiter, sampler):
        thread.start()
    waiter.join(timeout_s)
    killed = not reaped
    if killed:
        proc.kill()
        waiter.join(30)
    for reader in readers:
        reader.join(30)
    _pid, status, _usage = reaped[0] if reaped else (0, 0, None)  # not ru_maxrss: see above
    proc.returncode = os.waitstatus_to_exitcode(status) if reaped else -9  # reaped here, not by Popen
    text = {k: b"".join(v).decode(errors="replace") for k, v in chunks.items()}
    sampler.join(5)
    return (None if killed else proc.returncode), text["out"], text["err"], peak_kb[0]


def _sample_hwm(pid: int, reaped: list[Any], peak_kb: list[float]) -> None:
    """The child's VmHWM (its own peak resident set, in KB) into peak_kb[0] until it is reaped."""
    status = Path(f"/proc/{pid}/status")
    while not reaped:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb[0] = max(peak_kb[0], float(line.split()[1]))
        except (OSError, ValueError):  # gone (a zombie has no VmHWM line), or cut mid-read
            pass
        time.sleep(0.01)


def _judged(category: str, name: str, outcome: CommandOutcome, peak_mb: float, *needles: str) -> ProbeResult:
    result = expect_one_line_error(category, name, outcome, *needles)
    if result.handled and peak_mb >= MEMORY_LIMIT_MB:
        return ProbeResult(category, name, False, f"peak memory {peak_mb:.0f} MB (limit {MEMORY_LIMIT_MB}): {result.detail}")
    return ProbeResult(category, name, result.handled, f"{result.detail} [peak {peak_mb:.0f} MB]")


# -- short writes to standard output -----------------------------------------------------------


def _knowledge(ctx: ProbeContext, name: str, goals: int = 300) -> Path:
    from task_learning.kb import KnowledgeBase, LearnedGoal

    db = ctx.path(name)
    db.unlink(missing_ok=True)
    with KnowledgeBase(db) as kb:
        for i in range(goals):
            kb.learn_goal(LearnedGoal(task="tidy kitchen", context=f"mug {i} in sink", object_type="Mug",
                                      text="the goal is that the mug is in the cabinet " * 3, literals=[]))
    return db


def _short_stdout(name: str, args: Callable[[ProbeContext], list[str]]) -> Probe:
    """A disk that fills after 16 KiB behind `> file`: CPython's text layer ignored the short write
    (64 KiB of 220 KB written, exit 0); now an error naming standard output."""
    def probe(ctx: ProbeContext) -> ProbeResult:
        target = ctx.path("short_write/out.txt")
        outcome, peak = run_measured(ctx, args(ctx), limit_bytes=16 * 1024, stdout_path=target)
        return _judged("cli", name, outcome, peak, "standard output")

    return Probe("cli", name, probe, fast=False)


# -- YAML, sweeps ------------------------------------------------------------------------------


def _yaml_bomb(name: str, args: Callable[[Path, Path], list[str]]) -> Probe:
    def probe(ctx: ProbeContext) -> ProbeResult:
        bomb = ctx.path("yaml_bomb/bomb.yaml")
        bomb.write_text(alias_bomb(9), encoding="utf-8")
        db = bomb.parent / "kb.sqlite"
        db.unlink(missing_ok=True)
        outcome, peak = run_measured(ctx, args(bomb, db), timeout_s=120)
        result = _judged("config", name, outcome, peak, "bomb.yaml", "aliases")
        if result.handled and db.exists():
            return ProbeResult("config", name, False, f"{db} was created: {result.detail}")
        return result

    return Probe("config", name, probe, fast=name.endswith("scene"))


def _huge_grid(ctx: ProbeContext) -> ProbeResult:
    name = "sweep grid of 6,000,000 trials"
    path = ctx.path("sweeps/huge.yaml")
    path.write_text(huge_grid(2000, 1000), encoding="utf-8")
    out = path.parent / "out"
    outcome, peak = run_measured(ctx, ["sweep", str(path), "--out", str(out)], timeout_s=120)
    result = _judged("config", name, outcome, peak, "6,000,000 trials", "100,000")
    if result.handled and out.exists():
        return ProbeResult("config", name, False, f"{out} was made before the refusal")
    return result


# -- episodes ----------------------------------------------------------------------------------

EPISODE_COMMANDS: tuple[tuple[str, ...], ...] = (("replay",), ("episode", "info"), ("episode", "export"))


def _episode_args(command: tuple[str, ...], path: Path) -> list[str]:
    extra = ["--out", str(path.parent / f"{path.stem}_export")] if command[-1] == "export" else []
    return [*command, str(path), *extra]


def _bomb(honest: bool) -> Probe:
    name = f"episode decompressing to 1 GiB ({'header says so' if honest else 'header claims 1 KB'})"

    def probe(ctx: ProbeContext) -> ProbeResult:
        path = bomb_episode(ctx.path(f"episodes/bomb_{'honest' if honest else 'lying'}.mcap"), honest=honest)
        size_kb = path.stat().st_size / 1024
        results = []
        for command in EPISODE_COMMANDS:
            outcome, peak = run_measured(ctx, _episode_args(command, path), timeout_s=180)
            results.append(_judged("persistence", f"{name}: {' '.join(command)}", outcome, peak, path.name,
                                   "decompresses to"))
        bad = [r for r in results if not r.handled]
        detail = (bad or results)[-1].detail
        return ProbeResult("persistence", name, not bad, f"{size_kb:.0f} KB file; {detail}")

    return Probe("persistence", name, probe, fast=not honest)


def _crowded(ctx: ProbeContext) -> ProbeResult:
    """One 8 MiB chunk of 40-byte messages (about 210,000): read within the memory limit, and
    what is wrong with them (empty, not JSON) said in one line."""
    name = "episode of 210,000 tiny messages in one chunk"
    path = crowded_episode(ctx.path("episodes/crowded.mcap"))
    peaks = []
    for command in EPISODE_COMMANDS[1:]:
        outcome, peak = run_measured(ctx, _episode_args(command, path), timeout_s=300)
        peaks.append(peak)
        if outcome.returncode is None or outcome.traceback or "internal error" in outcome.stderr:
            return ProbeResult("persistence", name, False, f"{' '.join(command)}: {outcome.one_line_error()[1]}")
    worst = max(peaks)
    return ProbeResult("persistence", name, worst < MEMORY_LIMIT_MB, f"peak {worst:.0f} MB (limit {MEMORY_LIMIT_MB})")


def _malformed(name: str) -> Probe:
    """Every command that reads the episode ends without a traceback; those that fail say what
    was wrong in one line (a command that never reads the bad part may succeed)."""
    build, words = MALFORMED_EPISODES[name]

    def probe(ctx: ProbeContext) -> ProbeResult:
        path = build(ctx.path(f"episodes/malformed_{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}.mcap"))
        refusals = []
        for command in EPISODE_COMMANDS:
            outcome, _peak = run_measured(ctx, _episode_args(command, path), timeout_s=180)
            if outcome.traceback or "internal error" in outcome.stderr or outcome.returncode is None:
                return ProbeResult("persistence", f"episode: {name}", False,
                                   f"{' '.join(command)}: {outcome.one_line_error()[1]}")
            if outcome.returncode != 0:
                refusals.append(expect_one_line_error("persistence", name, outcome, words))
        clear = [r for r in refusals if r.handled]
        if not clear:
            return ProbeResult("persistence", f"episode: {name}", False,
                               "no command refused it naming " + words + "".join(f"; {r.detail}" for r in refusals))
        return ProbeResult("persistence", f"episode: {name}", True, clear[0].detail)

    return Probe("persistence", f"episode: {name}", probe, fast=False)


# -- files the project creates -------------------------------------------------------------------


def _db_missing_folder(ctx: ProbeContext) -> ProbeResult:
    name = "run --db in a folder that does not exist"
    db = ctx.workdir / "no_such_folder" / "deeper" / "kb.sqlite"
    outcome, _peak = run_measured(ctx, ["run", "--scene", "tidy_kitchen", "--db", str(db)])
    result = expect_one_line_error("persistence", name, outcome, str(db.parent), "does not exist")
    if (ctx.workdir / "no_such_folder").exists():
        return ProbeResult("persistence", name, False, "the folder tree was created")
    return result


def _import_leaves_nothing(ctx: ProbeContext) -> list[ProbeResult]:
    folder = ctx.path("import_nothing/x").parent
    db = folder / "kb.sqlite"
    foreign = folder / "foreign.yaml"
    foreign.write_text("foo: 1\nbar: [2]\n", encoding="utf-8")
    cases = (("kb import of a missing file", folder / "missing.yaml", "missing.yaml"),
             ("kb import of a file of unknown keys", foreign, "unknown key"))
    results = []
    for name, path, words in cases:
        db.unlink(missing_ok=True)
        outcome, _peak = run_measured(ctx, ["kb", "import", "--db", str(db), str(path)])
        result = expect_one_line_error("persistence", name, outcome, words)
        if db.exists():
            result = ProbeResult("persistence", name, False, f"an empty knowledge base was left at {db}")
        results.append(result)
    return results


def _export_symlink_and_umask(ctx: ProbeContext) -> list[ProbeResult]:
    db = _knowledge(ctx, "exports/kb.sqlite", goals=2)
    shared = ctx.path("exports/shared/x").parent
    real = shared / "kb.yaml"
    real.write_text("old\n", encoding="utf-8")
    real.chmod(0o640)
    link = db.parent / "kb-link.yaml"
    link.unlink(missing_ok=True)
    link.symlink_to(real)
    outcome, _peak = run_measured(ctx, ["kb", "export", "--db", str(db), "--out", str(link)])
    name = "kb export --out LINK"
    if outcome.returncode != 0:
        linked = ProbeResult("persistence", name, False, outcome.one_line_error()[1])
    elif not link.is_symlink() or "goals:" not in real.read_text(encoding="utf-8"):
        linked = ProbeResult("persistence", name, False, "the symbolic link was replaced by a regular file")
    else:
        linked = ProbeResult("persistence", name, True, f"written through to {real.name}; the link stays")
    out = db.parent / "umask.yaml"
    out.unlink(missing_ok=True)
    outcome, _peak = run_measured(ctx, ["kb", "export", "--db", str(db), "--out", str(out)], umask=0o022)
    mode = out.stat().st_mode & 0o777 if out.exists() else None
    name = "kb export under umask 022"
    umasked = ProbeResult("persistence", name, mode == 0o644,
                          f"written {oct(mode) if mode is not None else 'nothing'} (expected 0o644)")
    return [linked, umasked]


def _export_names(ctx: ProbeContext) -> ProbeResult:
    from task_learning.episode.recorder import McapSink, _encoder
    from task_learning.episode.schema import msgdef

    name = "episode export of topics /a/b and /a_b"
    path = ctx.path("episodes/two_topics.mcap")
    out = path.parent / "two_topics_export"
    encode = _encoder("std_msgs/msg/String", msgdef("std_msgs/msg/String"))
    sink = McapSink(path, {"scene": "tidy_kitchen"}, topics=None)
    for topic, text in (("/a/b", "first"), ("/a_b", "second")):
        sink.write_raw(topic, "std_msgs/msg/String", encode({"data": text}), 1000)
    sink.close()
    outcome, _peak = run_measured(ctx, ["episode", "export", str(path), "--out", str(out)])
    if outcome.returncode != 0:
        return ProbeResult("persistence", name, False, outcome.one_line_error()[1])
    texts = [p.read_text(encoding="utf-8") for p in out.glob("*.jsonl") if p.name != "llm_cassette.jsonl"]
    kept = sorted(w for t in texts for w in ("first", "second") if w in t)
    return ProbeResult("persistence", name, kept == ["first", "second"] and len(texts) == 2,
                       f"{len(texts)} topic files, messages kept: {', '.join(kept) or 'none'}")


def _random_model(ctx: ProbeContext) -> ProbeResult:
    name = "llm status with a random file as the model"
    from task_learning.llm.local_install import LocalModelPaths

    paths = LocalModelPaths(ctx.path("fake_cache/x").parent)
    paths.model.parent.mkdir(parents=True, exist_ok=True)
    paths.model.write_bytes(os.urandom(1024 * 1024))
    env = {**ctx.env, "TASK_LEARNING_CACHE": str(paths.root)}
    done = subprocess.run([ctx.python, "-m", "task_learning.apps.cli", "llm", "status"], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    ok = done.returncode == 1 and "not the pinned model" in done.stdout and "model_verified    False" in done.stdout
    return ProbeResult("llm", name, ok, "refused: sha256 differs from the pin" if ok else done.stdout[-200:])


def probes() -> list[Probe]:
    found = [
        _short_stdout("kb export to stdout, disk full part-way",
                      lambda ctx: ["kb", "export", "--db", str(_knowledge(ctx, "short_write/kb.sqlite"))]),
        _short_stdout("scene --json to stdout, disk full part-way", lambda _ctx: ["scene", "--scene", "tidy_kitchen",
                                                                                "--json"]),
        _yaml_bomb("YAML alias bomb: sweep", lambda bomb, _db: ["sweep", str(bomb)]),
        _yaml_bomb("YAML alias bomb: scene", lambda bomb, _db: ["scene", "--scene", str(bomb)]),
        _yaml_bomb("YAML alias bomb: kb import", lambda bomb, db: ["kb", "import", "--db", str(db), str(bomb)]),
        Probe("config", "sweep grid of 6,000,000 trials", _huge_grid, fast=True),
        _bomb(honest=True),
        _bomb(honest=False),
        Probe("persistence", "episode of 210,000 tiny messages in one chunk", _crowded, fast=False),
        Probe("persistence", "run --db in a folder that does not exist", _db_missing_folder, fast=True),
        Probe("persistence", "kb import leaves no empty knowledge base", _import_leaves_nothing, fast=False),
        Probe("persistence", "kb export through a link and under a umask", _export_symlink_and_umask, fast=False),
        Probe("persistence", "episode export of topics /a/b and /a_b", _export_names, fast=False),
        Probe("llm", "llm status with a random file as the model", _random_model, fast=False),
    ]
    return found + [_malformed(name) for name in MALFORMED_EPISODES]
