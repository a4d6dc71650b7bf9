"""The results of a sweep: one SQLite file (`results.sqlite` in the run's folder, beside the
trials' knowledge bases), written by the driver as each trial ends, one committed transaction per
trial, so an interrupted sweep keeps every trial that finished and a rerun skips them.

Table `trials`: one row per trial key, status `done` (measures stored) or `failed` (the error of
its last attempt); `attempts` counts every start that ended (failures and the success). Table
`attempts`: one row per ended attempt, with its outcome (done | failed | killed) and error, so a
killed worker stays on record after its rerun succeeded.
"""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from task_learning.apps.sweeps.grid import Trial
from task_learning.errors import TaskLearningError
from task_learning.kb.database import enter_wal
from task_learning.kb.store import describe_db_error

BUSY_TIMEOUT_S = 10.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    attempts INTEGER NOT NULL,
    measures TEXT,
    error TEXT NOT NULL DEFAULT '',
    seconds REAL,
    worker TEXT NOT NULL DEFAULT '',
    finished_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    key TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('done', 'failed', 'killed')),
    error TEXT NOT NULL DEFAULT '',
    seconds REAL,
    worker TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL,
    PRIMARY KEY (key, attempt)
);
"""
APPLICATION = "task_learning sweep results 1"


class ResultsError(TaskLearningError):
    """The results file is unusable (not SQLite, another program's file, locked)."""


@dataclass(frozen=True)
class StoredTrial:
    key: str
    kind: str
    label: str
    params: dict[str, Any]
    status: str
    attempts: int
    measures: dict[str, Any]
    error: str
    seconds: float | None
    worker: str


class ResultsStore:
    """Open (or create) a results file; only the driver writes to it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise ResultsError(f"{self.path}: is a directory, not a results file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._check_foreign()  # before anything changes the file
            enter_wal(self._conn, BUSY_TIMEOUT_S)  # a reader opening it at once must not make it fail
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
            self._conn.execute("INSERT OR IGNORE INTO sweep_meta VALUES ('application', ?)", (APPLICATION,))
        except sqlite3.Error as exc:
            raise ResultsError(describe_db_error(str(self.path), exc, BUSY_TIMEOUT_S)
                               .replace("knowledge base", "results file")) from None

    def _check_foreign(self) -> None:
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "sweep_meta" not in tables:
            self._conn.close()
            raise ResultsError(f"{self.path}: not a sweep results file (it has tables {', '.join(sorted(tables))}); "
                               "use another --out")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """All statements in one transaction: a trial's row and its attempt land together or not at all."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, values in statements:
                    self._conn.execute(sql, values)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise ResultsError(describe_db_error(str(self.path), exc, BUSY_TIMEOUT_S)
                               .replace("knowledge base", "results file")) from None

    def attempts_of(self, key: str) -> int:
        row = self._conn.execute("SELECT COUNT(*) FROM attempts WHERE key=?", (key,)).fetchone()
        return int(row[0])

    def record(self, trial: Trial, outcome: str, *, measures: dict[str, Any] | None = None, error: str = "",
               seconds: float | None = None, worker: str = "", final: bool = True) -> int:
        """Record one ended attempt (outcome done | failed | killed); `final` also sets the trial's
        row (a done trial, or a failure that will not be retried). Returns the attempt's number."""
        from task_learning.llm.http_guard import redact_url

        attempt = self.attempts_of(trial.key) + 1
        now = time.time()
        error = redact_url(error)  # no credentials of a base URL in the file, from any message
        statements: list[tuple[str, tuple[Any, ...]]] = [(
            "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?)",
            (trial.key, attempt, outcome, error, seconds, worker, now))]
        if final:
            statements.append((
                "INSERT OR REPLACE INTO trials VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (trial.key, trial.kind, trial.label, json.dumps(trial.stored_params, sort_keys=True),
                 "done" if outcome == "done" else "failed", attempt,
                 json.dumps(measures) if measures is not None else None, error, seconds, worker, now)))
        self._write(statements)
        return attempt

    def done_keys(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT key FROM trials WHERE status='done'")}

    def trials(self, keys: set[str] | None = None) -> Iterator[StoredTrial]:
        for row in self._conn.execute("SELECT key, kind, label, params, status, attempts, measures, error, "
                                      "seconds, worker FROM trials ORDER BY finished_at"):
            if keys is not None and row[0] not in keys:
                continue
            yield StoredTrial(row[0], row[1], row[2], json.loads(row[3]), row[4], int(row[5]),
                              json.loads(row[6]) if row[6] else {}, row[7], row[8], row[9])

    def attempt_log(self, key: str) -> list[dict[str, Any]]:
        return [{"attempt": r[0], "outcome": r[1], "error": r[2], "worker": r[3]}
                for r in self._conn.execute("SELECT attempt, outcome, error, worker FROM attempts WHERE key=? "
                                            "ORDER BY attempt", (key,))]
