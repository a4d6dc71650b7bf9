"""The knowledge base's SQLite file: the connection, the schema and its migrations, the atomic
write transaction, and the guards around opening a file (another program's tables, a newer
schema, two processes opening one new file at once).

Why SQLite: one file, atomic transactions, readable by any tool. Every write is one transaction
committed before the call returns (WAL journal, synchronous=FULL), so a node killed mid-run loses
nothing it had confirmed. The tables' contents are the repositories' (kb/repositories/); this
module knows none of their meaning.

Opening a new file from several processes at once: switching a new file into WAL makes
SQLite read its header under a shared lock and then upgrade to the write lock; when two
connections do that at once, the one that finds the other's write lock while holding its own read
lock gets SQLITE_BUSY at once, without its busy handler (waiting would deadlock), so under load 2
of 8 processes failed within a second with "locked (waited 10 s)". `enter_wal` retries the
switch until the busy timeout has truly passed (the retry finds the file already in WAL), and the
schema, its added columns and its version are written in one write transaction, not one per
statement, so the write lock is held once, briefly, and a file is never left half created.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from task_learning.errors import TaskLearningError

log = logging.getLogger("task_learning.kb.store")

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS questions (
    request_id TEXT PRIMARY KEY,
    asked_at REAL NOT NULL,
    task TEXT NOT NULL DEFAULT '',
    context TEXT NOT NULL DEFAULT '',
    object_id TEXT NOT NULL DEFAULT '',
    object_description TEXT NOT NULL DEFAULT '',
    question TEXT NOT NULL,
    candidate_text TEXT NOT NULL DEFAULT '',
    candidate_json TEXT NOT NULL DEFAULT '{}',
    wants_description INTEGER NOT NULL DEFAULT 0,
    asked_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS questions_by_context ON questions (task, context, question);
CREATE TABLE IF NOT EXISTS answers (
    request_id TEXT PRIMARY KEY REFERENCES questions (request_id),
    answered_at REAL NOT NULL,
    answer TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    operator TEXT NOT NULL DEFAULT '',
    client TEXT NOT NULL DEFAULT '',
    verified INTEGER NOT NULL DEFAULT 0,
    confirmation_id TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS goals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task TEXT NOT NULL,
    context TEXT NOT NULL,
    object_type TEXT NOT NULL,
    text TEXT NOT NULL,
    literals_json TEXT NOT NULL,
    condition TEXT NOT NULL DEFAULT '',
    confirmed INTEGER NOT NULL DEFAULT 0,
    provenance_json TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    confirmation TEXT NOT NULL DEFAULT 'none',
    UNIQUE (task, context)
);
CREATE TABLE IF NOT EXISTS policies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task TEXT NOT NULL,
    object_type TEXT NOT NULL,
    location TEXT NOT NULL,
    goal_key TEXT NOT NULL,
    actions_json TEXT NOT NULL,
    successes INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL,
    approval TEXT NOT NULL DEFAULT 'none',
    UNIQUE (task, object_type, location, goal_key)
);
CREATE TABLE IF NOT EXISTS productions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    task TEXT NOT NULL,
    rule_json TEXT NOT NULL,
    english TEXT NOT NULL DEFAULT '',
    utility REAL NOT NULL DEFAULT 0,
    count INTEGER NOT NULL DEFAULT 0,
    provenance_json TEXT NOT NULL DEFAULT '{}',
    approval TEXT NOT NULL DEFAULT 'none',
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS world_statements (
    statement TEXT PRIMARY KEY,
    truth INTEGER NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS operators (
    name TEXT PRIMARY KEY,
    verifier TEXT NOT NULL,
    created_at REAL NOT NULL,
    created_by TEXT NOT NULL DEFAULT '',
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS pairing_codes (
    code_id TEXT PRIMARY KEY,
    verifier TEXT NOT NULL,
    name TEXT NOT NULL,
    expires_at REAL NOT NULL,
    used_at REAL
);
CREATE TABLE IF NOT EXISTS routines (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    day TEXT NOT NULL,
    facts_json TEXT NOT NULL,
    tasks_json TEXT NOT NULL,
    explanation TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
"""


class KnowledgeBaseError(TaskLearningError):
    """The knowledge base file is unusable (not SQLite, newer schema, unreadable, another
    program's tables, locked past the busy timeout)."""


# Columns added after schema version 1, with their definitions: _add_missing_columns adds them to
# older files (defaults that read as "nobody confirmed / not verified / unreviewed": a policy's
# 'none' is POLICY_UNREVIEWED).
ADDED_COLUMNS = {
    "goals": {"confirmation": "TEXT NOT NULL DEFAULT 'none'"},
    "policies": {"approval": "TEXT NOT NULL DEFAULT 'none'"},
    "questions": {"asked_by": "TEXT NOT NULL DEFAULT ''"},
    "answers": {"client": "TEXT NOT NULL DEFAULT ''", "verified": "INTEGER NOT NULL DEFAULT 0",
                "confirmation_id": "TEXT NOT NULL DEFAULT ''"},
}
RETIRED = {("table", "counters")}  # created by earlier versions, no longer read: still ours
DEFAULT_BUSY_TIMEOUT_S = 10.0  # SQLite retries a locked database this long before giving up


def _expected_columns() -> dict[str, set[str]]:
    """Table -> columns of the schema above (read back from SQLite, so it cannot drift)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in tables
                if not t.startswith("sqlite_")}
    finally:
        conn.close()


def _expected_objects() -> set[tuple[str, str]]:
    """(type, name) of every table and index the schema above creates."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        return {(r[0], r[1]) for r in conn.execute("SELECT type, name FROM sqlite_master")
                if not str(r[1]).startswith("sqlite_")}
    finally:
        conn.close()


def describe_db_error(path: str, exc: BaseException, busy_timeout_s: float) -> str:
    """One line saying what is wrong with the database file and what to do."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (f"{path}: the knowledge base is locked by another process (waited {busy_timeout_s:g} s); "
                "stop the other run or node using it, or use another --db")
    if "readonly" in text or "read-only" in text:
        return f"{path}: the knowledge base is read-only ({text}); use a writable --db"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return f"{path}: not a usable knowledge base, the file is not SQLite or is corrupt ({text})"
    if "unable to open" in text:
        return f"{path}: cannot open the knowledge base ({text}): is it a directory or in a missing/unwritable folder?"
    return f"{path}: knowledge base error: {text}"


# SQLite's lock bytes (unix VFS): the WAL write lock is byte 120 of the -shm file; a rollback-
# journal database's RESERVED lock is the byte after PENDING_BYTE (1 GiB) of the file itself.
_WAL_WRITE_LOCK = (("-shm", 120),)
_RESERVED_LOCK = (("", 0x40000001),)


def writer_holds_lock(path: str) -> bool:
    """Whether another process holds `path`'s write lock right now (a write transaction open),
    asked with fcntl's F_GETLK, which only looks: nothing is locked or changed. False where the
    question cannot be asked (no fcntl, an unexpected struct layout)."""
    try:
        import fcntl
        import struct
    except ImportError:
        return False
    layout = "hhqqi4x" if sys.platform.startswith("linux") else None
    if layout is None:
        return False
    for suffix, offset in _WAL_WRITE_LOCK + _RESERVED_LOCK:
        try:
            fd = os.open(f"{path}{suffix}", os.O_RDONLY)
        except OSError:
            continue
        try:
            query = struct.pack(layout, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
            if struct.unpack(layout, answer)[0] != fcntl.F_UNLCK:
                return True
        except OSError:
            continue
        finally:
            os.close(fd)
    return False


SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def remove_knowledge_base(path: str | Path) -> None:
    """Delete a knowledge base file and its SQLite companions (write-ahead log, shared memory,
    journal), so the next run starts from nothing: a WAL left beside a fresh file would be
    replayed into it. For runs that must not see an earlier run's learning (the demo's and the
    experiments' own files), never for a user's --db."""
    base = Path(path)
    for candidate in [base] + [base.with_name(base.name + suffix) for suffix in SQLITE_COMPANIONS]:
        candidate.unlink(missing_ok=True)


DEFAULT_DB = "$ROS_HOME/task_learning/task_learning.sqlite"


def resolve_db_path(value: str) -> str:
    """A node's db_path as it is used: $ROS_HOME (default ~/.ros, as in ROS 2), other environment
    variables and ~ expanded, a relative path made absolute (relative to the working folder);
    "" (not persisted, where a node allows it) and ":memory:" as they are."""
    value = str(value or "").strip()
    if value in ("", ":memory:"):
        return value
    ros_home = os.environ.get("ROS_HOME") or os.path.join("~", ".ros")
    value = value.replace("${ROS_HOME}", ros_home).replace("$ROS_HOME", ros_home)
    return os.path.abspath(os.path.expanduser(os.path.expandvars(value)))


def default_db_path() -> Path:
    """The one default knowledge base of the graph, whichever way it is started (`task-learning
    bringup`, `ros2 run`, `ros2 launch`): DEFAULT_DB, $ROS_HOME/task_learning/task_learning.sqlite.
    Not the working folder: the same robot, started from another folder, must find what it learned."""
    return Path(resolve_db_path(DEFAULT_DB))



def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+; the message before that
    return (code & 0xFF) == sqlite3.SQLITE_BUSY if isinstance(code, int) else "locked" in str(exc)


def enter_wal(conn: sqlite3.Connection, busy_timeout_s: float) -> str:
    """PRAGMA journal_mode=WAL, retried while SQLite answers busy, until busy_timeout_s has passed
    (then the busy error is raised). Returns the journal mode the file is in afterwards.

    Why not the busy handler alone: switching a rollback-journal file into WAL reads its header
    under a shared lock and then upgrades to the write lock, and when two connections do that at
    once SQLite fails the second at once instead of calling its busy handler (each holds the read
    lock the other waits for). Its statement ended, the failed connection holds nothing; tried
    again, it finds the file in WAL already and the switch is a read."""
    deadline = time.monotonic() + busy_timeout_s
    pause = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


class Database:
    """Thread-safe access to one SQLite file (or ":memory:").

    `read_only=True` is for commands that only look (`kb show`, `kb export`): the file must
    exist ("no knowledge base at ..." otherwise, never an empty one created in its place), it is
    opened read-only and nothing in it, or beside it, is created or changed; tables an older
    version did not have yet read as empty."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                 read_only: bool = False) -> None:
        self.path = str(path)
        self.busy_timeout_s = float(busy_timeout_s)
        self.read_only = read_only
        # Sees every committed write as (kind, what was written): an episode records the changes
        # with their provenance (task_learning.episode). None: nobody watches.
        self.on_change: Callable[[str, dict[str, Any]], None] | None = None
        if not self.path.strip():
            raise KnowledgeBaseError("no knowledge base file given (an empty path)")
        if self.path != ":memory:":
            self._check_file(read_only)
        self.lock = threading.RLock()
        try:
            if read_only:
                # Nothing may be created beside the file either: a WAL database opened read-only
                # still creates its -shm and -wal files, unless it is opened as immutable. That
                # is safe when no -wal file exists (no process has the base open: a live one
                # keeps it); with one, the reader joins the live WAL as any reader does.
                live = Path(f"{self.path}-wal").exists()
                self.conn = sqlite3.connect(f"{Path(self.path).resolve().as_uri()}?mode=ro"
                                             + ("" if live else "&immutable=1"), uri=True,
                                             check_same_thread=False, timeout=self.busy_timeout_s,
                                             isolation_level=None)
            else:
                self.conn = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout_s,
                                             isolation_level=None)
        except sqlite3.Error as exc:
            raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None
        if read_only:
            with self._closed_on_error():
                self._wait_for_writer()
                self._check_schema()
                self._shadow_missing()
                self._check_version()
            return
        with self._closed_on_error():
            self._check_schema()  # before changing anything in a file that may be another program's
            enter_wal(self.conn, self.busy_timeout_s)
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._create_missing()
            self._check_version()

    @contextmanager
    def _closed_on_error(self) -> Iterator[None]:
        """A file that cannot be opened as a knowledge base is closed again, and said so in one
        line (KnowledgeBaseError)."""
        try:
            yield
        except sqlite3.Error as exc:
            self.conn.close()
            raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None
        except KnowledgeBaseError:
            self.conn.close()
            raise

    def _check_file(self, read_only: bool) -> None:
        """The file is a regular file (or, when not read-only, absent: it is created); named
        errors for a missing file, a directory, a FIFO or a device."""
        import stat as stat_kind

        from task_learning.inputs.files import describe_kind

        path = Path(self.path)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            if read_only:
                raise KnowledgeBaseError(f"no knowledge base at {self.path} (check the path; a knowledge base is "
                                         "created by the commands that learn, e.g. `task-learning run --db`)") from None
            self._check_folder(path)
            return
        except OSError as exc:
            raise KnowledgeBaseError(f"{self.path}: cannot open the knowledge base: {exc.strerror or exc}") from None
        if not stat_kind.S_ISREG(mode):
            raise KnowledgeBaseError(f"{self.path}: {describe_kind(mode)}, not a knowledge base file")

    @staticmethod
    def _check_folder(path: Path) -> None:
        """A new knowledge base goes into a folder that exists: a typo'd `--db` (or one run as
        root) must not create a folder tree and silently start learning over. The graph's own
        default place ($ROS_HOME/task_learning) is the one folder made when missing."""
        folder = path.parent if str(path.parent) else Path(".")
        if folder.is_dir():
            return
        if path.resolve().parent != default_db_path().parent:
            raise KnowledgeBaseError(f"{path}: the folder {folder} does not exist (create it first, or check "
                                     "the path: no knowledge base was created)")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KnowledgeBaseError(f"{path}: cannot create its folder: {exc.strerror or exc}") from None

    def _wait_for_writer(self) -> None:
        """Read-only: a snapshot taken while another process holds the write lock would be
        reported complete while that process's writes are still coming; wait for it (as a
        writer would), then name the lock (as `run` does) if it is still held."""
        deadline = time.monotonic() + self.busy_timeout_s
        while writer_holds_lock(self.path):
            if time.monotonic() >= deadline:
                raise KnowledgeBaseError(describe_db_error(self.path, sqlite3.OperationalError("database is locked"),
                                                           self.busy_timeout_s))
            time.sleep(0.05)

    def _shadow_missing(self) -> None:
        """Read-only: tables (and the columns of ADDED_COLUMNS) an older file lacks are given as
        empty TEMP tables and TEMP views, which live in memory and shadow the file's names, so
        every query reads as it would after the file was upgraded, without changing it."""
        present = {r[0] for r in self.conn.execute("SELECT name FROM main.sqlite_master WHERE type='table'")}
        for statement in _SCHEMA.split(";"):
            text = statement.strip()
            if not text.startswith("CREATE TABLE IF NOT EXISTS"):
                continue
            name = text.split()[5]
            if name not in present:
                self.conn.execute(text.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))
        for table, added in ADDED_COLUMNS.items():
            columns = {r[1] for r in self.conn.execute(f"PRAGMA main.table_info({table})")}
            missing = sorted(set(added) - columns)
            if table in present and missing:
                # each column's DEFAULT, as _add_missing_columns would give it
                extra = ", ".join(f"{added[c].split(' DEFAULT ', 1)[1]} AS {c}" for c in missing)
                self.conn.execute(f"CREATE TEMP VIEW {table} AS SELECT *, {extra} FROM main.{table}")

    def _check_schema(self) -> None:
        """A file whose tables belong to another program (a `goals` table of its own, or any
        table, index, view or trigger task_learning does not create) is refused by name instead
        of being used and written into; an empty file (no tables) becomes a knowledge base."""
        expected = _expected_objects() | RETIRED
        foreign = sorted(f"{kind} {name!r}" for kind, name in
                         self.conn.execute("SELECT type, name FROM main.sqlite_master")
                         if not str(name).startswith("sqlite_") and (kind, name) not in expected)
        if foreign:
            raise KnowledgeBaseError(
                f"{self.path}: not a task_learning knowledge base: it holds {', '.join(foreign[:5])}"
                + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                + " that task_learning did not create; use another --db (a new or empty file)")
        for table, columns in _expected_columns().items():
            have = {r[1] for r in self.conn.execute(f"PRAGMA main.table_info({table})")}
            # Absent tables are created, and columns added since version 1 are added to old files.
            missing = sorted(columns - have - set(ADDED_COLUMNS.get(table, {}))) if have else []
            if missing:
                raise KnowledgeBaseError(
                    f"{self.path}: not a task_learning knowledge base (schema mismatch): table {table!r} "
                    f"lacks column(s) {', '.join(missing)}; use another --db")

    def _check_version(self) -> None:
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            if self.read_only:
                return
            raise KnowledgeBaseError(f"{self.path}: its schema version could not be recorded")
        if not str(row[0]).isdigit():
            raise KnowledgeBaseError(f"{self.path}: not a task_learning knowledge base (schema version {row[0]!r})")
        elif int(row[0]) > SCHEMA_VERSION:
            raise KnowledgeBaseError(
                f"{self.path}: schema version {row[0]} is newer than this software ({SCHEMA_VERSION})")

    def _create_missing(self) -> None:
        """Create what the file lacks (tables, indexes, the columns of ADDED_COLUMNS, the schema
        version) in one write transaction, and nothing when it lacks nothing: several processes
        opening one new file (the oversight node and an operator client pairing there) take the
        write lock once each at most, the first creates everything, the others find it done."""
        if not self._missing():
            return
        with self.transaction() as cur:  # looked at again under the write lock: another process
            for statement in _SCHEMA.split(";"):  # may have created it meanwhile
                if statement.strip():
                    cur.execute(statement)  # IF NOT EXISTS: what is there stays as it is
            self._add_missing_columns(cur)
            cur.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _missing(self) -> bool:
        """Whether any table, index, added column or the schema version is absent (read only)."""
        present = {(r[0], r[1]) for r in self.conn.execute("SELECT type, name FROM main.sqlite_master")}
        if _expected_objects() - present:
            return True
        for table, added in ADDED_COLUMNS.items():
            if set(added) - {r[1] for r in self.conn.execute(f"PRAGMA main.table_info({table})")}:
                return True
        return self.conn.execute("SELECT 1 FROM meta WHERE key='schema_version'").fetchone() is None

    @staticmethod
    def _add_missing_columns(cur: sqlite3.Cursor) -> None:
        """Columns added after schema version 1, with defaults that keep old files readable by
        this and by older software: an older file's goals read as confirmation "none" (nothing
        recorded how they were confirmed, so the policy asks again), its answers as not verified
        (never replayed by the oversight node's memory), its policies as approval "none" (reviewed
        before they are replayed: nothing recorded whether this robot learned them or an import,
        which took policies on their shape alone, put them there). Run under the write lock."""
        for table, added in ADDED_COLUMNS.items():
            columns = {row[1] for row in cur.execute(f"PRAGMA table_info({table})")}
            for column, definition in added.items():
                if column not in columns:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        """BEGIN IMMEDIATE ... COMMIT: all of a write lands, or none of it."""
        with self.lock:
            cur = self.conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")  # waits up to busy_timeout_s for another writer
            except sqlite3.OperationalError as exc:
                raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                try:
                    cur.execute("COMMIT")
                except sqlite3.OperationalError as exc:
                    if self.conn.in_transaction:
                        cur.execute("ROLLBACK")
                    raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def changed(self, kind: str, data: dict[str, Any]) -> None:
        """Tell `on_change` about a committed write; a failing observer loses nothing here."""
        if self.on_change is not None:
            try:
                self.on_change(kind, data)
            except Exception as exc:  # noqa: BLE001 - an observer (the episode) must not undo a committed write
                log.warning("knowledge-base change observer failed: %s", exc)
