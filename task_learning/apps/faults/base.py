"""What a fault probe is and what it reports, and the table `task-learning faults` prints.

A probe provokes one fault (a dripping endpoint, `run --workers 0`, a binary config file, a
SIGKILL mid-run, a malformed ROS request...) the way a user, a broken server or a hostile client
would, then judges the outcome: *handled* means a clear outcome (a one-line error naming the
problem and a non-zero exit, or a correct recovery), no traceback, no hang past a deadline.
Each probe also counts the two things that must never happen: a goal executed without operator
confirmation where oversight was on, and a confirmed goal lost.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATEGORIES = ("llm", "cli", "config", "persistence", "imports", "ros", "web")
CATEGORY_TITLES = {
    "llm": "LLM endpoint faults",
    "cli": "bad CLI input",
    "config": "bad config files",
    "persistence": "persistence (kills, bad databases)",
    "imports": "hostile imports (policies, productions)",
    "ros": "ROS graph (kills, malformed requests, oversight)",
    "web": "web operator panel (floods, slow and oversized requests)",
}


@dataclass
class ProbeResult:
    category: str
    name: str
    handled: bool
    detail: str  # what happened, one line (the error the user saw, or why it is not handled)
    unconfirmed_executed: int = 0
    confirmed_lost: int = 0
    skipped: bool = False  # could not be tried here (e.g. no ROS graph); counted apart

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class ProbeContext:
    """Where probes work: a scratch folder, the Python running task_learning, a seeded RNG seed,
    and `fast` (a subset with shorter waits, for tests)."""

    workdir: Path
    seed: int = 0
    fast: bool = False
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def path(self, name: str) -> Path:
        path = self.workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


@dataclass(frozen=True)
class Probe:
    category: str
    name: str
    run: Callable[[ProbeContext], ProbeResult | list[ProbeResult]]
    fast: bool = True  # part of the fast subset


@dataclass
class CommandOutcome:
    returncode: int | None  # None: killed at the deadline (a hang)
    stdout: str
    stderr: str
    seconds: float

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stdout + self.stderr

    def one_line_error(self) -> tuple[bool, str]:
        """Whether this is a clean failure (non-zero exit, exactly one stderr line, no traceback),
        and that line (or why not)."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        if self.returncode is None:
            return False, f"still running after {self.seconds:.0f} s (hang)"
        if self.traceback:
            return False, "traceback: " + (lines[-1] if lines else "")
        if self.returncode == 0:
            return False, "exit 0 (the fault went unnoticed)"
        if len(lines) != 1:
            return False, f"exit {self.returncode} with {len(lines)} stderr lines: " + " | ".join(lines[:3])
        if "\x1b" in self.stdout + self.stderr:
            return False, "escape sequence reached the terminal"
        return True, lines[0]


def run_command(ctx: ProbeContext, args: Sequence[str], *, env: Mapping[str, str] | None = None,
                timeout_s: float = 300.0, cwd: Path | None = None) -> CommandOutcome:
    """`task-learning ARGS` as a real process with a deadline (a hang is reported, not waited out)."""
    started = time.monotonic()
    try:
        proc = subprocess.run([ctx.python, "-m", "task_learning.apps.cli", *args], capture_output=True, text=True, check=False,
                              env={**ctx.env, **(env or {})}, timeout=timeout_s, cwd=cwd or ctx.workdir,
                              errors="replace")
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return CommandOutcome(None, out, err, time.monotonic() - started)
    return CommandOutcome(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


def expect_one_line_error(category: str, name: str, outcome: CommandOutcome, *needles: str) -> ProbeResult:
    """Handled when the command failed cleanly and its error names the problem (`needles`)."""
    ok, line = outcome.one_line_error()
    missing = [n for n in needles if n.lower() not in line.lower()]
    if ok and missing:
        return ProbeResult(category, name, False, f"error does not name {', '.join(missing)}: {line}")
    return ProbeResult(category, name, ok, line)


@dataclass
class CategoryRow:
    category: str
    tried: int = 0
    handled: int = 0
    not_handled: int = 0
    skipped: int = 0
    unconfirmed_executed: int = 0
    confirmed_lost: int = 0


def summarize(results: Sequence[ProbeResult]) -> list[CategoryRow]:
    rows = {c: CategoryRow(c) for c in CATEGORIES if any(r.category == c for r in results)}
    for r in results:
        row = rows.setdefault(r.category, CategoryRow(r.category))
        if r.skipped:
            row.skipped += 1
            continue
        row.tried += 1
        row.handled += int(r.handled)
        row.not_handled += int(not r.handled)
        row.unconfirmed_executed += r.unconfirmed_executed
        row.confirmed_lost += r.confirmed_lost
    return list(rows.values())


def format_table(results: Sequence[ProbeResult]) -> str:
    """The category table (Markdown, so docs/safety.md can hold it as printed)."""
    rows = summarize(results)
    header = ("| category | tried | handled | not handled | unconfirmed goals executed | confirmed goals lost |\n"
              "|---|---:|---:|---:|---:|---:|")
    lines = [header]
    total = CategoryRow("total")
    for row in rows:
        title = CATEGORY_TITLES.get(row.category, row.category)
        skipped = f" ({row.skipped} skipped)" if row.skipped else ""
        lines.append(f"| {title}{skipped} | {row.tried} | {row.handled} | {row.not_handled} | "
                     f"{row.unconfirmed_executed} | {row.confirmed_lost} |")
        for name in ("tried", "handled", "not_handled", "skipped", "unconfirmed_executed", "confirmed_lost"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
    lines.append(f"| **total** | {total.tried} | {total.handled} | {total.not_handled} | "
                 f"{total.unconfirmed_executed} | {total.confirmed_lost} |")
    return "\n".join(lines)


def format_details(results: Sequence[ProbeResult]) -> str:
    lines = []
    for r in results:
        mark = "skip" if r.skipped else ("ok  " if r.handled else "FAIL")
        counts = ""
        if r.unconfirmed_executed or r.confirmed_lost:
            counts = f" [unconfirmed executed {r.unconfirmed_executed}, confirmed lost {r.confirmed_lost}]"
        lines.append(f"{mark} {r.category:<11} {r.name:<34} {r.detail[:160]}{counts}")
    return "\n".join(lines)
