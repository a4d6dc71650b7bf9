"""`task-learning sweep` on a real embedded Ray, as a user runs it (the CLI in a subprocess):
Ctrl-C then a rerun that does not redo finished trials; a Ray worker SIGKILLed mid-trial, its
trial reported and run again; the summary's tables with their intervals; and no Ray process
outliving the command, also when the command itself is SIGKILLed.

Needs Ray (the `sweep` extra, which `make test` installs). The trials are STARS on
store_groceries with the offline model (not a language model: these tests check the sweep, not
the figures).
"""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from task_learning.apps.sweeps.reaper import descendants
from test.ros_testing import CLI, wait_until

pytest.importorskip("ray", reason="the sweep extra (Ray) is not installed: make sweep-setup")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # 420 s was not enough at load 30

GRID = {"name": "t", "experiments": [{"kind": "stars", "scenes": ["store_groceries"],
                                       "conditions": ["STARS", "STARS+O"], "seeds": 3}]}
TRIALS = 6


class Sweep:
    """The CLI as a child, its stderr read line by line, every process below it remembered."""

    def __init__(self, tmp_path: Path, *extra: str, grid: dict | None = None) -> None:
        self.file = tmp_path / "grid.yaml"
        self.file.write_text(yaml.safe_dump(grid or GRID))
        self.out = tmp_path / "out"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([CLI, "sweep", str(self.file), "--out", str(self.out), "--workers", "2",
                                      *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=tmp_path, env=env, start_new_session=True)
        self.err: list[str] = []
        self.seen: set[tuple[int, int]] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line.rstrip("\n"))

    def look(self) -> list[tuple[int, int]]:
        """The processes below the command now (and remembered for `leftovers`)."""
        now = descendants(self.proc.pid)
        self.seen.update(now)
        return now

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()  # stderr is the reader thread's
        self.proc.wait(timeout)
        self._reader.join(10)
        return self.proc.returncode, out

    def leftovers(self) -> list[int]:
        """Remembered processes still running with the same start time."""
        alive = []
        for pid, start in self.seen:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[19]) == start:
                alive.append(pid)
        return alive

    def kill_all(self) -> None:
        """Teardown: nothing this test started keeps running, whatever failed."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def done_lines(self) -> int:
        return sum(1 for line in self.err if re.match(r"\[\d+/\d+ done", line))


def _rows(out: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(out / "results.sqlite", timeout=10)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _watch_until(sweep: Sweep, predicate, timeout: float, what: str):
    def check():
        sweep.look()
        return predicate()
    return wait_until(check, timeout, what, interval=0.2)


def test_ctrl_c_then_rerun_does_not_redo_finished_trials(tmp_path):
    first = Sweep(tmp_path)
    try:
        _watch_until(first, lambda: first.done_lines() >= 2, 240, "two trials done")
        first.proc.send_signal(signal.SIGINT)
        code, out = first.finish(120)
        assert code == 130, "\n".join(first.err)
        assert any(line.startswith("interrupted: ") and "run the same command again" in line for line in first.err)
        assert out == ""
        wait_until(lambda: not first.leftovers(), 30, "no Ray process after Ctrl-C")
    finally:
        first.kill_all()
    before = dict((key, when) for key, when in _rows(first.out, "SELECT key, finished_at FROM trials"))
    assert 2 <= len(before) < TRIALS

    second = Sweep(tmp_path)
    try:
        code, out = second.finish()
        assert code == 0, "\n".join(second.err)
        wait_until(lambda: not second.leftovers(), 30, "no Ray process after the sweep")
    finally:
        second.kill_all()
    assert f"{TRIALS} trials: {len(before)} done before, {TRIALS - len(before)} run now" in out
    after = dict(_rows(second.out, "SELECT key, finished_at FROM trials WHERE status='done'"))
    assert len(after) == TRIALS
    assert all(after[key] == when for key, when in before.items()), "a finished trial was run again"
    attempts = dict(_rows(second.out, "SELECT key, COUNT(*) FROM attempts GROUP BY key"))
    assert all(attempts[key] == 1 for key in before)
    started_again = sum(1 for line in second.err if re.match(r"\[\d+/\d+ done", line))
    assert started_again == TRIALS - len(before)
    # The summary: one row per cell, mean ± half-width over the 3 seeds, the method named.
    assert re.search(r"store_groceries\s+STARS\+O\s+100\.0 ± 0\.0 .* 3$", out, re.M), out
    assert re.search(r"store_groceries\s+STARS\s+\d+\.\d ± \d+\.\d", out), out
    assert "95 % confidence interval of the mean (Student's t, two-sided 95 %, n-1 degrees of freedom" in out
    assert "The offline model is NOT a language model" in out
    assert (second.out / "plots" / "stars.png").is_file()
    assert list((second.out / "ray").glob("session_*/logs/raylet.out")), "Ray's logs are not in the run's folder"


def test_a_worker_killed_mid_trial_is_reported_and_its_trial_rerun(tmp_path):
    sweep = Sweep(tmp_path, "--json")
    try:
        def running_trial() -> int | None:
            for pid, _start in sweep.look():
                try:
                    if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::run_trial"):
                        return pid
                except OSError:
                    continue
            return None

        victim = _watch_until(sweep, running_trial, 240, "a Ray worker running a trial")
        os.kill(victim, signal.SIGKILL)
        code, out = sweep.finish()
        wait_until(lambda: not sweep.leftovers(), 30, "no Ray process after the sweep")
    finally:
        sweep.kill_all()
    assert code == 0, "\n".join(sweep.err)
    killed = [line for line in sweep.err if line.startswith("killed: stars store_groceries")]
    assert len(killed) == 1 and "WorkerCrashedError" in killed[0] and killed[0].endswith("running it again")
    summary = json.loads(out)  # stdout is the JSON alone: Ray's own report of the death went to stderr
    assert summary["trials"] == {"total": TRIALS, "skipped": 0, "done": TRIALS, "running": 0, "failed": 0,
                                 "retried": 1}
    assert [a["outcome"] for a in summary["retried"][0]["attempts"]] == ["killed", "done"]
    assert _rows(sweep.out, "SELECT COUNT(*) FROM trials WHERE status='done'") == [(TRIALS,)]
    assert _rows(sweep.out, "SELECT outcome, COUNT(*) FROM attempts GROUP BY outcome ORDER BY outcome") == [
        ("done", TRIALS), ("killed", 1)]
    assert summary["tables"][0]["rows"][0]["completion"]["n"] == 3


def test_no_ray_process_outlives_a_sweep_killed_outright(tmp_path):
    sweep = Sweep(tmp_path)
    try:
        _watch_until(sweep, lambda: sweep.done_lines() >= 1, 240, "a trial done")
        assert len(sweep.seen) >= 5  # GCS, raylet, agents, workers...
        sweep.proc.kill()
        sweep.proc.wait(30)
        wait_until(lambda: not sweep.leftovers(), 30, "the watchdog killing every Ray process")
    finally:
        sweep.kill_all()
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"tlray-*/r/session_*{sweep.proc.pid}"))


def test_a_failing_trial_is_retried_by_option_then_reported_and_the_rest_still_runs(tmp_path):
    broken = {"provider": "replay", "cassette": str(tmp_path / "missing.jsonl"), "label": "broken"}
    grid = {"name": "f", "retries": 2, "experiments": [{"kind": "llm_state", "tasks": ["heat_milk"], "trials": 1,
                                                        "seeds": 1, "llm": ["offline", broken]}]}
    sweep = Sweep(tmp_path, grid=grid)
    try:
        code, out = sweep.finish()
        wait_until(lambda: not sweep.leftovers(), 30, "no Ray process after the sweep")
    finally:
        sweep.kill_all()
    assert code == 1, "\n".join(sweep.err)
    failed = [line for line in sweep.err if line.startswith("failed: llm_state heat_milk ours broken seed 0: ")]
    assert [line.endswith("running it again") for line in failed] == [True, True, False], sweep.err
    assert "cassette" in failed[0]
    assert re.search(r"^FAILED llm_state heat_milk ours broken seed 0: .*cassette", out, re.M), out
    assert re.search(r"^heat_milk\s+ours\s+100\.0 \(n=1\)", out, re.M), out  # the other trial's row
    assert _rows(sweep.out, "SELECT label, status, attempts FROM trials ORDER BY label") == [
        ("llm_state heat_milk ours broken seed 0", "failed", 3), ("llm_state heat_milk ours offline seed 0", "done", 1)]
