"""The robot's long-term memory: learned goals, policies, questions and answers, in SQLite.

Why SQLite: one file, atomic transactions, readable by any tool. Every write is one transaction
committed before the call returns (WAL journal, synchronous=FULL), so a node killed mid-run loses
nothing it had confirmed, and a restarted run finds the answers it already got and does not ask
again.

Goals are keyed by (task, context): the context is the object in its gross location as the paper
learns it ("mug in dish rack"), so two mugs in different places learn different goals. Literals are
stored lifted: the object itself becomes `?object` and other arguments their object type, so a
goal learned once grounds again in a world whose ids differ.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from task_learning.errors import TaskLearningError
from task_learning.types import (
    ActionCall,
    AnswerKind,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalLiteral,
    Truth,
)

log = logging.getLogger(__name__)

# `ConfirmationAnswer.operator` of an answer nobody gave (task_learning.oversight.operator uses
# the same value): stored as a timeout, never as the safe default that stood in for it.
TIMEOUT_OPERATOR = "timeout"
SCHEMA_VERSION = 1
OBJECT_VAR = "?object"

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


class Confirmation(str, Enum):
    """How a learned goal was confirmed: the one input of the confirmation policy.

    OPERATOR_YES and OPERATOR_DESCRIPTION come from a person in an oversight dialogue.
    IMPORTED_TRUSTED marks a goal from `kb import --trust-confirmations`: the person importing
    vouched for the exporter's operator confirmations (and the goal's literals were re-grounded
    from its text), so it counts as confirmed. NONE: nobody confirmed it (a run without
    oversight, a plain import, or a knowledge base older than this column)."""

    OPERATOR_YES = "operator_yes"
    OPERATOR_DESCRIPTION = "operator_description"
    IMPORTED_TRUSTED = "imported_trusted"
    NONE = "none"

    @property
    def counts_as_confirmed(self) -> bool:
        return self is not Confirmation.NONE


def parse_confirmation(value: Any) -> Confirmation:
    """A stored or exported value; anything unknown (or missing) is NONE, never a confirmation."""
    try:
        return Confirmation(str(value or "none"))
    except ValueError:
        return Confirmation.NONE


@dataclass
class LearnedGoal:
    """A goal learned for an object in context, with what it came from."""

    task: str
    context: str  # "mug in dish rack"
    object_type: str
    text: str
    literals: list[GoalLiteral]  # lifted: ?object and object types
    condition: str = ""
    confirmation: Confirmation = Confirmation.NONE
    provenance: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0

    @property
    def confirmed(self) -> bool:
        """Confirmed by an operator (or imported with trusted confirmations): may be executed
        where the policy asks for confirmation, without asking again."""
        return self.confirmation.counts_as_confirmed

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "context": self.context,
            "object_type": self.object_type,
            "text": self.text,
            "literals": [lit.to_dict() for lit in self.literals],
            "condition": self.condition,
            "confirmed": self.confirmed,
            "confirmation": self.confirmation.value,
            "provenance": self.provenance,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LearnedGoal":
        return cls(
            task=str(data["task"]),
            context=str(data["context"]),
            object_type=str(data["object_type"]),
            text=str(data["text"]),
            literals=[GoalLiteral.from_dict(d) for d in data.get("literals", [])],
            condition=str(data.get("condition", "")),
            confirmation=parse_confirmation(data.get("confirmation")),
            provenance=dict(data.get("provenance") or {}),
            created_at=float(data.get("created_at") or 0.0),
        )


POLICY_LEARNED = "learned"  # this robot's executor learned it from its own successful actions
POLICY_UNREVIEWED = "none"  # imported, or of unknown origin: replayed only once an operator approves
MAX_POLICY_ACTIONS = 200  # a recipe longer than any plan (the planner's max_actions is 100)


def policy_approved_by(operator: str) -> str:
    """The approval recorded when an operator said yes to an unreviewed policy (who said it)."""
    return f"operator:{operator or 'unknown'}"


@dataclass
class Policy:
    """A successful action sequence for (task, object type, gross location), lifted like goals.

    `approval` says why it may be replayed: POLICY_LEARNED (this robot reached the goal with
    these actions), policy_approved_by(operator) (an operator approved it, from a question built
    from the actions), or POLICY_UNREVIEWED (imported or of unknown origin: never replayed
    until approved)."""

    task: str
    object_type: str
    location: str
    goal_key: str  # the lifted goal it achieves, as text
    actions: list[ActionCall]
    successes: int = 0
    failures: int = 0
    approval: str = POLICY_LEARNED

    @property
    def reviewed(self) -> bool:
        return self.approval != POLICY_UNREVIEWED

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "object_type": self.object_type,
            "location": self.location,
            "goal_key": self.goal_key,
            "actions": [action_to_dict(a) for a in self.actions],
            "successes": self.successes,
            "failures": self.failures,
            "approval": self.approval,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Policy":
        """An exported policy, unreviewed whatever the file says (an import is not a review)."""
        actions = data.get("actions", [])
        if not isinstance(actions, list) or len(actions) > MAX_POLICY_ACTIONS:
            raise ValueError(f"actions: expected a list of at most {MAX_POLICY_ACTIONS} actions")
        successes, failures = data.get("successes", 0), data.get("failures", 0)
        for name, value in (("successes", successes), ("failures", failures)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
                raise ValueError(f"{name}: expected a whole number from 0 to 1000000000, got {value!r:.40}")
        return cls(
            task=str(data["task"]),
            object_type=str(data["object_type"]),
            location=str(data["location"]),
            goal_key=str(data["goal_key"]),
            actions=[action_from_dict(a) for a in actions],
            successes=successes,
            failures=failures,
            approval=POLICY_UNREVIEWED,
        )


@dataclass(frozen=True)
class StoredRoutine:
    """One day the robot saw (task anticipation, the task-anticipation paper): the day ("weekday"/"weekend"), the
    facts of its context ("working_from_home", ...), the tasks in the order they were done, and
    an explanation used when the day is shown to the LLM as an example."""

    day: str
    facts: tuple[str, ...]
    tasks: tuple[str, ...]
    explanation: str = ""
    source: str = ""  # where it came from: "config" (the seeded days), "observed" (a day watched)
    created_at: float = 0.0
    routine_id: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "facts": list(self.facts), "tasks": list(self.tasks),
                "explanation": self.explanation, "source": self.source, "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StoredRoutine":
        """An exported routine; its strings must be strings (a number or a list where a name goes
        is refused, not turned into text)."""
        def names(key: str) -> tuple[str, ...]:
            value = data.get(key)
            if value is None:
                return ()
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ValueError(f"{key}: expected a list of names")
            return tuple(value)

        day, explanation, source = data["day"], data.get("explanation") or "", data.get("source") or ""
        if not isinstance(day, str) or not day.strip():
            raise ValueError("day: expected a name (weekday or weekend)")
        if not isinstance(explanation, str) or not isinstance(source, str):
            raise ValueError("explanation and source must be text")
        tasks = names("tasks")
        if not tasks:
            raise ValueError("tasks: a routine needs at least one task")
        return cls(day=day, facts=tuple(sorted(names("facts"))), tasks=tasks, explanation=explanation,
                   source=source, created_at=float(data.get("created_at") or 0.0))

    def same_day(self, other: "StoredRoutine") -> bool:
        """The same remembered day (what an import of an export already imported would repeat).
        The config's seeded days are the same days whenever they were seeded."""
        def key(r: StoredRoutine) -> tuple:
            return (r.day, tuple(sorted(r.facts)), r.tasks, r.explanation, r.source,
                    None if r.source == "config" else r.created_at)
        return key(self) == key(other)


class ImportCounts(NamedTuple):
    goals: int
    policies: int
    routines: int  # new routines; a day the knowledge base already has is not added twice
    policies_unreviewed: int = 0  # of the policies: replayed only once an operator approves them


def action_to_dict(call: ActionCall) -> dict[str, Any]:
    return {"action": call.action, "object_id": call.object_id, "params": [list(p) for p in call.params]}


def action_from_dict(data: dict[str, Any]) -> ActionCall:
    return ActionCall(
        action=str(data["action"]),
        object_id=str(data.get("object_id", "")),
        params=tuple((str(k), v) for k, v in data.get("params", [])),
    )


_KEY_LITERAL = re.compile(r"^(?:(?P<truth>[a-z_]+):)?(?P<predicate>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>[^()]*)\)$")


def parse_goal_key(key: str) -> list[GoalLiteral]:
    """The literals of a goal key (the inverse of goal_key); ValueError when it is not one."""
    literals = []
    for part in key.split(" & "):
        found = _KEY_LITERAL.match(part.strip())
        if not found:
            raise ValueError(f"goal_key: {part.strip()[:80]!r} is not a literal such as inside(?object, Fridge)")
        args = tuple(a.strip() for a in found["args"].split(",")) if found["args"].strip() else ()
        literals.append(GoalLiteral(found["predicate"], args, Truth(found["truth"] or "true")))
    return literals


def lift_literals(literals: list[GoalLiteral], object_id: str, type_of: dict[str, str]) -> list[GoalLiteral]:
    """Replace the object by ?object and other ids by their type, so the goal transfers."""
    lifted = []
    for lit in literals:
        args = tuple(OBJECT_VAR if a == object_id else type_of.get(a, a) for a in lit.args)
        lifted.append(GoalLiteral(lit.predicate, args, lit.truth))
    return lifted


def ground_lifted(
    literals: list[GoalLiteral], object_id: str, ids_by_type: dict[str, list[str]]
) -> list[GoalLiteral] | None:
    """The inverse of lift_literals in a given world: ?object becomes the object, a type becomes
    the one object of that type (the first by id when several). None when a type is absent: the
    goal no longer applies in this world (e.g. its destination disappeared)."""
    grounded = []
    for lit in literals:
        args = []
        for arg in lit.args:
            if arg == OBJECT_VAR:
                args.append(object_id)
            elif "|" in arg:
                args.append(arg)  # already an id
            else:
                candidates = sorted(ids_by_type.get(arg, []))
                if not candidates:
                    return None
                args.append(candidates[0])
        grounded.append(GoalLiteral(lit.predicate, tuple(args), lit.truth))
    return grounded


def goal_key(literals: list[GoalLiteral]) -> str:
    return " & ".join(sorted(str(lit) for lit in literals))


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


class KnowledgeBase:
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
        self._lock = threading.RLock()
        try:
            if read_only:
                # Nothing may be created beside the file either: a WAL database opened read-only
                # still creates its -shm and -wal files, unless it is opened as immutable. That
                # is safe when no -wal file exists (no process has the base open: a live one
                # keeps it); with one, the reader joins the live WAL as any reader does.
                live = Path(f"{self.path}-wal").exists()
                self._conn = sqlite3.connect(f"{Path(self.path).resolve().as_uri()}?mode=ro"
                                             + ("" if live else "&immutable=1"), uri=True,
                                             check_same_thread=False, timeout=self.busy_timeout_s,
                                             isolation_level=None)
            else:
                self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout_s,
                                             isolation_level=None)
        except sqlite3.Error as exc:
            raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None
        if read_only:
            try:
                self._wait_for_writer()
                self._check_schema()
                self._shadow_missing()
                self._check_version()
            except sqlite3.Error as exc:
                self._conn.close()
                raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None
            except KnowledgeBaseError:
                self._conn.close()
                raise
            return
        try:
            self._check_schema()  # before changing anything in a file that may be another program's
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.executescript(_SCHEMA)
            self._add_missing_columns()
            self._check_version()
        except sqlite3.Error as exc:
            self._conn.close()
            raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None
        except KnowledgeBaseError:
            self._conn.close()
            raise

    def _check_file(self, read_only: bool) -> None:
        """The file is a regular file (or, when not read-only, absent: it is created); named
        errors for a missing file, a directory, a FIFO or a device."""
        import stat as stat_kind

        from task_learning.files import describe_kind

        path = Path(self.path)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            if read_only:
                raise KnowledgeBaseError(f"no knowledge base at {self.path} (check the path; a knowledge base is "
                                         "created by the commands that learn, e.g. `task-learning run --db`)") from None
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise KnowledgeBaseError(f"{self.path}: cannot create its folder: {exc.strerror or exc}") from None
            return
        except OSError as exc:
            raise KnowledgeBaseError(f"{self.path}: cannot open the knowledge base: {exc.strerror or exc}") from None
        if not stat_kind.S_ISREG(mode):
            raise KnowledgeBaseError(f"{self.path}: {describe_kind(mode)}, not a knowledge base file")

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
        present = {r[0] for r in self._conn.execute("SELECT name FROM main.sqlite_master WHERE type='table'")}
        for statement in _SCHEMA.split(";"):
            text = statement.strip()
            if not text.startswith("CREATE TABLE IF NOT EXISTS"):
                continue
            name = text.split()[5]
            if name not in present:
                self._conn.execute(text.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))
        for table, added in ADDED_COLUMNS.items():
            columns = {r[1] for r in self._conn.execute(f"PRAGMA main.table_info({table})")}
            missing = sorted(set(added) - columns)
            if table in present and missing:
                # each column's DEFAULT, as _add_missing_columns would give it
                extra = ", ".join(f"{added[c].split(' DEFAULT ', 1)[1]} AS {c}" for c in missing)
                self._conn.execute(f"CREATE TEMP VIEW {table} AS SELECT *, {extra} FROM main.{table}")

    def _check_schema(self) -> None:
        """A file whose tables belong to another program (a `goals` table of its own, or any
        table, index, view or trigger task_learning does not create) is refused by name instead
        of being used and written into; an empty file (no tables) becomes a knowledge base."""
        expected = _expected_objects() | RETIRED
        foreign = sorted(f"{kind} {name!r}" for kind, name in
                         self._conn.execute("SELECT type, name FROM main.sqlite_master")
                         if not str(name).startswith("sqlite_") and (kind, name) not in expected)
        if foreign:
            raise KnowledgeBaseError(
                f"{self.path}: not a task_learning knowledge base: it holds {', '.join(foreign[:5])}"
                + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                + " that task_learning did not create; use another --db (a new or empty file)")
        for table, columns in _expected_columns().items():
            have = {r[1] for r in self._conn.execute(f"PRAGMA main.table_info({table})")}
            # Absent tables are created, and columns added since version 1 are added to old files.
            missing = sorted(columns - have - set(ADDED_COLUMNS.get(table, {}))) if have else []
            if missing:
                raise KnowledgeBaseError(
                    f"{self.path}: not a task_learning knowledge base (schema mismatch): table {table!r} "
                    f"lacks column(s) {', '.join(missing)}; use another --db")

    def _check_version(self) -> None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            if self.read_only:
                return
            # OR IGNORE: two processes opening one new file at once (the oversight node and an
            # operator client pairing there) both find no version; the second must not fail.
            with self._transaction() as cur:
                cur.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                raise KnowledgeBaseError(f"{self.path}: its schema version could not be recorded")
        if not str(row[0]).isdigit():
            raise KnowledgeBaseError(f"{self.path}: not a task_learning knowledge base (schema version {row[0]!r})")
        elif int(row[0]) > SCHEMA_VERSION:
            raise KnowledgeBaseError(
                f"{self.path}: schema version {row[0]} is newer than this software ({SCHEMA_VERSION})")

    def _add_missing_columns(self) -> None:
        """Columns added after schema version 1, with defaults that keep old files readable by
        this and by older software: an older file's goals read as confirmation "none" (nothing
        recorded how they were confirmed, so the policy asks again), its answers as not verified
        (never replayed by the oversight node's memory), its policies as approval "none" (reviewed
        before they are replayed: nothing recorded whether this robot learned them or an import,
        which took policies on their shape alone, put them there)."""
        for table, added in ADDED_COLUMNS.items():
            columns = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
            for column, definition in added.items():
                if column not in columns:
                    with self._transaction() as cur:  # read again under the write lock: another
                        # process opening the same old file may have added it meanwhile
                        now = {row[1] for row in cur.execute(f"PRAGMA table_info({table})")}
                        if column not in now:
                            cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """BEGIN IMMEDIATE ... COMMIT: all of a write lands, or none of it."""
        with self._lock:
            cur = self._conn.cursor()
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
                    if self._conn.in_transaction:
                        cur.execute("ROLLBACK")
                    raise KnowledgeBaseError(describe_db_error(self.path, exc, self.busy_timeout_s)) from None

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _changed(self, kind: str, data: dict[str, Any]) -> None:
        """Tell `on_change` about a committed write; a failing observer loses nothing here."""
        if self.on_change is not None:
            try:
                self.on_change(kind, data)
            except Exception as exc:
                log.warning("knowledge-base change observer failed: %s", exc)

    # --- questions and answers -------------------------------------------------------------

    def record_question(self, request: ConfirmationRequest, *, task: str = "", context: str = "",
                        asked_by: str = "") -> None:
        """`asked_by`: the verified asker of a question the oversight node issued ("" for a
        question asked in this process); the node's memory replays only its own askers' answers."""
        candidate = request.candidate
        with self._transaction() as cur:
            cur.execute(
                "INSERT OR REPLACE INTO questions (request_id, asked_at, task, context, object_id, "
                "object_description, question, candidate_text, candidate_json, wants_description, "
                "asked_by) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    request.request_id,
                    time.time(),
                    task,
                    context or request.object_description,
                    request.object_id,
                    request.object_description,
                    request.question,
                    candidate.text if candidate else "",
                    json.dumps(candidate.to_dict() if candidate else {}),
                    int(request.wants_description),
                    asked_by,
                ),
            )
        self._changed("question", {"request_id": request.request_id, "task": task, "question": request.question,
                                   "object_id": request.object_id})

    def record_answer(self, answer: ConfirmationAnswer, *, client: str = "", verified: bool = False,
                      confirmation_id: str = "") -> None:
        """Persist an answer with its provenance: `operator` who gave it (a paired operator's
        name when `verified`: the oversight node checked the operator's signature), `client` the
        node it came from, the time, and the confirmation id the node issued for it. An answer
        nobody gave (the question timed out, was withdrawn, or its operator went away: `operator`
        is "timeout") is stored as a timeout whatever safe default stood in for it, so it is never
        replayed as the operator's "no"."""
        kind = AnswerKind.TIMEOUT if answer.operator == TIMEOUT_OPERATOR else answer.answer
        with self._transaction() as cur:
            known = cur.execute("SELECT 1 FROM questions WHERE request_id=?", (answer.request_id,)).fetchone()
            if not known:
                raise KnowledgeBaseError(f"no question with request id {answer.request_id!r}")
            cur.execute(
                "INSERT OR REPLACE INTO answers (request_id, answered_at, answer, description, "
                "operator, client, verified, confirmation_id) VALUES (?,?,?,?,?,?,?,?)",
                (answer.request_id, answer.stamp or time.time(), kind.value,
                 answer.description, answer.operator, client, int(bool(verified)), confirmation_id),
            )
        self._changed("answer", {"request_id": answer.request_id, "answer": kind.value,
                                 "description": answer.description, "operator": answer.operator})

    def previous_answer(self, *, task: str, question: str, context: str | None = None,
                        asked_by: str = "", object_id: str | None = None,
                        candidate_text: str | None = None) -> ConfirmationAnswer | None:
        """The answer already given to this very question, so a restarted run does not ask again.

        Keyed by provenance as well as words: only a question of the same asker (`asked_by`; ""
        is this process's own dialogue) matches, and for an asker (the oversight node's memory)
        only an answer the node verified as a paired operator's; `object_id` and `candidate_text`,
        when given, must match too. So a question put by a stranger, or answered by one, never
        answers the planner's. In any context when `context` is None (the question names its
        object). Timeouts are not answers: a question that timed out is asked again."""
        sql = ("SELECT a.request_id, a.answer, a.description, a.operator, a.answered_at "
               "FROM questions q JOIN answers a ON a.request_id = q.request_id "
               "WHERE q.task=? AND q.question=? AND a.answer != ? AND a.operator != ? "
               "AND q.asked_by=?")
        args: list[Any] = [task, question, AnswerKind.TIMEOUT.value, TIMEOUT_OPERATOR, asked_by]
        if asked_by:
            sql += " AND a.verified=1"
        for column, value in (("q.context", context), ("q.object_id", object_id),
                              ("q.candidate_text", candidate_text)):
            if value is not None:
                sql += f" AND {column}=?"
                args.append(value)
        with self._lock:
            row = self._conn.execute(sql + " ORDER BY a.answered_at DESC LIMIT 1", args).fetchone()
        if row is None:
            return None
        return ConfirmationAnswer(row[0], AnswerKind(row[1]), row[2], row[3], row[4])

    def question_log(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT q.request_id, q.asked_at, q.task, q.context, q.object_id, q.question, "
                "q.candidate_text, q.wants_description, a.answer, a.description, a.operator, "
                "a.answered_at, q.asked_by, a.client, a.verified, a.confirmation_id "
                "FROM questions q LEFT JOIN answers a ON a.request_id = q.request_id "
                "ORDER BY q.asked_at"
            ).fetchall()
        keys = ("request_id", "asked_at", "task", "context", "object_id", "question", "candidate_text",
                "wants_description", "answer", "description", "operator", "answered_at", "asked_by",
                "client", "verified", "confirmation_id")
        return [dict(zip(keys, row)) for row in rows]

    def answer_history(self, operator: str, limit: int = 20) -> list[dict[str, Any]]:
        """The latest answers `operator` gave (remembered replays of them included), newest first:
        what the web panel shows a paired operator of their own answers."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT q.request_id, q.question, q.object_description, q.candidate_text, a.answer, "
                "a.description, a.operator, a.client, a.answered_at, a.confirmation_id "
                "FROM answers a JOIN questions q ON q.request_id = a.request_id "
                "WHERE a.operator = ? OR a.operator = ? ORDER BY a.answered_at DESC LIMIT ?",
                (operator, f"{operator} (remembered)", int(limit))).fetchall()
        keys = ("request_id", "question", "object_description", "candidate_text", "answer", "description",
                "operator", "client", "answered_at", "confirmation_id")
        return [dict(zip(keys, row)) for row in rows]

    # --- paired operators (task_learning.oversight.pairing) ---------------------------------
    # Only verifiers are stored, never tokens; export_dict leaves these tables out.

    def save_operator(self, name: str, verifier: str, created_by: str) -> None:
        """Pair (or re-pair) an operator: a new verifier replaces the old one (its old token stops
        working) and lifts a revocation."""
        with self._transaction() as cur:
            cur.execute("INSERT INTO operators (name, verifier, created_at, created_by, revoked_at) "
                        "VALUES (?,?,?,?,NULL) ON CONFLICT (name) DO UPDATE SET "
                        "verifier=excluded.verifier, created_at=excluded.created_at, "
                        "created_by=excluded.created_by, revoked_at=NULL",
                        (name, verifier, time.time(), created_by))

    def operator_verifier(self, name: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT verifier FROM operators WHERE name=? AND revoked_at IS NULL",
                                     (name,)).fetchone()
        return str(row[0]) if row else None

    def operator_by_verifier(self, verifier: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT name FROM operators WHERE verifier=? AND revoked_at IS NULL",
                                     (verifier,)).fetchone()
        return str(row[0]) if row else None

    def revoke_operator(self, name: str) -> bool:
        with self._transaction() as cur:
            cur.execute("UPDATE operators SET revoked_at=? WHERE name=? AND revoked_at IS NULL",
                        (time.time(), name))
            return cur.rowcount > 0

    def operator_records(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute("SELECT name, created_at, created_by, revoked_at FROM operators "
                                      "ORDER BY name").fetchall()
        return [{"name": r[0], "paired_at": r[1], "paired_by": r[2], "revoked_at": r[3]} for r in rows]

    def save_pairing_code(self, code_id: str, verifier: str, name: str, expires_at: float) -> None:
        with self._transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO pairing_codes VALUES (?,?,?,?,NULL)",
                        (code_id, verifier, name, expires_at))

    def use_pairing_code(self, code_id: str, verifier: str, now: float) -> str | None:
        """The operator a code pairs, marking it used in the same transaction; None when the code
        is unknown, wrong, used or expired (a wrong secret does not use it up)."""
        import hmac

        with self._transaction() as cur:
            row = cur.execute("SELECT verifier, name, expires_at, used_at FROM pairing_codes WHERE code_id=?",
                              (code_id,)).fetchone()
            if row is None or row[3] is not None or row[2] <= now or not hmac.compare_digest(row[0], verifier):
                return None
            cur.execute("UPDATE pairing_codes SET used_at=? WHERE code_id=?", (now, code_id))
            return str(row[1])

    # --- goals -------------------------------------------------------------------------------

    def learn_goal(self, goal: LearnedGoal) -> None:
        """Store (or replace) the goal for (task, context) in one transaction."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO goals (task, context, object_type, text, literals_json, condition, "
                "confirmed, provenance_json, created_at, confirmation) VALUES (?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (task, context) DO UPDATE SET object_type=excluded.object_type, "
                "text=excluded.text, literals_json=excluded.literals_json, "
                "condition=excluded.condition, confirmed=excluded.confirmed, "
                "provenance_json=excluded.provenance_json, created_at=excluded.created_at, "
                "confirmation=excluded.confirmation",
                (goal.task, goal.context, goal.object_type, goal.text,
                 json.dumps([lit.to_dict() for lit in goal.literals]), goal.condition,
                 int(goal.confirmed), json.dumps(goal.provenance, default=str),
                 goal.created_at or time.time(), goal.confirmation.value),
            )
        self._changed("goal", goal.to_dict())

    def set_confirmation(self, task: str, context: str, confirmation: Confirmation,
                         confirmed_by: dict[str, Any] | None = None) -> bool:
        """Record how the goal for (task, context) was confirmed, and by whom (kept in its
        provenance as `confirmed_by`: operator, client, time); False when there is no such goal."""
        with self._transaction() as cur:
            row = cur.execute("SELECT provenance_json FROM goals WHERE task=? AND context=?",
                              (task, context)).fetchone()
            if row is None:
                return False
            provenance = json.loads(row[0] or "{}")
            if confirmed_by is not None:
                provenance["confirmed_by"] = confirmed_by
            elif not confirmation.counts_as_confirmed:
                provenance.pop("confirmed_by", None)
            cur.execute("UPDATE goals SET confirmation=?, confirmed=?, provenance_json=? WHERE task=? AND context=?",
                        (confirmation.value, int(confirmation.counts_as_confirmed),
                         json.dumps(provenance, default=str), task, context))
        self._changed("confirmation", {"task": task, "context": context, "confirmation": confirmation.value})
        return True

    def goal_for(self, task: str, context: str) -> LearnedGoal | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT task, context, object_type, text, literals_json, condition, confirmed, "
                "provenance_json, created_at, confirmation FROM goals WHERE task=? AND context=?", (task, context)
            ).fetchone()
        return self._goal_from_row(row) if row else None

    def goals(self) -> list[LearnedGoal]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT task, context, object_type, text, literals_json, condition, confirmed, "
                "provenance_json, created_at, confirmation FROM goals ORDER BY id"
            ).fetchall()
        return [self._goal_from_row(r) for r in rows]

    @staticmethod
    def _goal_from_row(row: tuple) -> LearnedGoal:
        return LearnedGoal(
            task=row[0], context=row[1], object_type=row[2], text=row[3],
            literals=[GoalLiteral.from_dict(d) for d in json.loads(row[4])],
            condition=row[5], confirmation=parse_confirmation(row[9]),
            provenance=json.loads(row[7]), created_at=row[8],
        )

    # --- policies ----------------------------------------------------------------------------

    def save_policy(self, policy: Policy) -> None:
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO policies (task, object_type, location, goal_key, actions_json, "
                "successes, failures, updated_at, approval) VALUES (?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (task, object_type, location, goal_key) DO UPDATE SET "
                "actions_json=excluded.actions_json, successes=excluded.successes, "
                "failures=excluded.failures, updated_at=excluded.updated_at, approval=excluded.approval",
                (policy.task, policy.object_type, policy.location, policy.goal_key,
                 json.dumps([action_to_dict(a) for a in policy.actions]), policy.successes,
                 policy.failures, time.time(), policy.approval),
            )
        self._changed("policy", policy.to_dict())

    _POLICY_COLUMNS = "task, object_type, location, goal_key, actions_json, successes, failures, approval"

    @staticmethod
    def _policy_from_row(row: tuple) -> Policy:
        return Policy(row[0], row[1], row[2], row[3], [action_from_dict(a) for a in json.loads(row[4])],
                      row[5], row[6], row[7])

    def policy_for(self, task: str, object_type: str, location: str, goal_key_text: str) -> Policy | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {self._POLICY_COLUMNS} FROM policies "
                "WHERE task=? AND object_type=? AND location=? AND goal_key=?",
                (task, object_type, location, goal_key_text),
            ).fetchone()
        return None if row is None else self._policy_from_row(row)

    def policies(self) -> list[Policy]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {self._POLICY_COLUMNS} FROM policies ORDER BY id").fetchall()
        return [self._policy_from_row(r) for r in rows]

    # --- productions (the bootstrapped-productions paper) and world knowledge -----------------------------------------

    def save_production(self, record: dict[str, Any]) -> None:
        """Store (or replace) a production by name: `record` holds name, task, rule (its data
        form, validated by task_learning.productions.language on every load), english, utility,
        count, provenance (the conversation that produced it) and approval."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO productions (name, task, rule_json, english, utility, count, provenance_json, "
                "approval, updated_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT (name) DO UPDATE SET "
                "task=excluded.task, rule_json=excluded.rule_json, english=excluded.english, "
                "utility=excluded.utility, count=excluded.count, provenance_json=excluded.provenance_json, "
                "approval=excluded.approval, updated_at=excluded.updated_at",
                (str(record["name"]), str(record["task"]), json.dumps(record["rule"]),
                 str(record.get("english", "")), float(record.get("utility", 0.0)), int(record.get("count", 0)),
                 json.dumps(record.get("provenance") or {}, default=str), str(record.get("approval", "none")),
                 time.time()),
            )

    def update_production_utilities(self, updates: list[tuple[str, float, int]]) -> None:
        """(name, U, N) for several productions, in one transaction (a task's reward)."""
        with self._transaction() as cur:
            now = time.time()
            cur.executemany("UPDATE productions SET utility=?, count=?, updated_at=? WHERE name=?",
                            [(float(u), int(n), now, name) for name, u, n in updates])

    def approve_production(self, name: str, approval: str) -> bool:
        """Record an operator's approval of a production; False when there is no such one."""
        with self._transaction() as cur:
            cur.execute("UPDATE productions SET approval=?, updated_at=? WHERE name=?", (approval, time.time(), name))
            return cur.rowcount > 0

    def delete_production(self, name: str) -> None:
        with self._transaction() as cur:
            cur.execute("DELETE FROM productions WHERE name=?", (name,))

    def productions(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT name, task, rule_json, english, utility, count, provenance_json, approval "
                "FROM productions ORDER BY id").fetchall()
        return [{"name": r[0], "task": r[1], "rule": json.loads(r[2]), "english": r[3], "utility": r[4],
                 "count": r[5], "provenance": json.loads(r[6]), "approval": r[7]} for r in rows]

    def statement_truth(self, statement: str) -> bool | None:
        with self._lock:
            row = self._conn.execute("SELECT truth FROM world_statements WHERE statement=?",
                                     (statement,)).fetchone()
        return None if row is None else bool(row[0])

    def record_statement(self, statement: str, truth: bool, source: str) -> None:
        with self._transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO world_statements VALUES (?,?,?,?)",
                        (statement, int(bool(truth)), source, time.time()))

    def family_end_conditions(self) -> dict[str, str]:
        """Task family pattern -> the critic's end condition (kept in `meta`)."""
        with self._lock:
            rows = self._conn.execute("SELECT key, value FROM meta WHERE key LIKE 'family_end:%'").fetchall()
        return {r[0][len("family_end:"):]: r[1] for r in rows}

    def set_family_end_condition(self, family: str, end_condition: str) -> None:
        with self._transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"family_end:{family}", end_condition))

    def statements(self, source: str | None = None) -> dict[str, bool]:
        """Every world statement and its truth; with `source`, only those recorded from it."""
        with self._lock:
            if source is None:
                rows = self._conn.execute("SELECT statement, truth FROM world_statements ORDER BY statement").fetchall()
            else:
                rows = self._conn.execute("SELECT statement, truth FROM world_statements WHERE source=? "
                                          "ORDER BY statement", (source,)).fetchall()
        return {r[0]: bool(r[1]) for r in rows}

    def parse_production_import(self, data: Any, *, source: str = "<import>") -> list[dict[str, Any]]:
        """The productions of an export, each validated by the rule language and its utility and
        count by their range (a rule that does not validate refuses the whole import, naming
        it). Only the rule and its numbers are taken: the file's English description and
        provenance (the conversation, the state) are free text that would reach the operator's
        approval question and later prompts unreviewed, so they are dropped; every imported
        production is unapproved. Nothing is written."""
        from task_learning.errors import ConfigError
        from task_learning.productions.language import RuleError, production_from_dict
        from task_learning.productions.utility import utility_problem

        items = (data.get("productions") if isinstance(data, dict) else None) or []
        if not isinstance(items, list):
            raise ConfigError(source, "productions", f"expected a list, got {type(items).__name__}")
        records = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ConfigError(source, f"productions[{i}]", "expected a mapping")
            try:
                rule = production_from_dict(item.get("rule"), where="rule")
            except RuleError as exc:
                raise ConfigError(source, f"productions[{i}]", str(exc)) from None
            utility, count = item.get("utility", 0.0), item.get("count", 0)
            problem = utility_problem(utility, count)
            if problem:
                raise ConfigError(source, f"productions[{i}] ({rule.name})", problem)
            records.append({"name": rule.name, "task": rule.task, "rule": rule.to_dict(), "english": "",
                            "utility": float(utility), "count": int(count),
                            "provenance": {"imported_from": source}, "approval": "none"})
        return records

    def import_productions(self, records: list[dict[str, Any]]) -> int:
        """Write productions parsed by parse_production_import. An export's world statements and
        family end conditions are not imported: they are free text ("Ignore all previous
        instructions ...") and truths the rules act on, which no operator reviewed; a bootstrap
        asks the LLM for them again (imported_free_text counts what was left out)."""
        for record in records:
            self.save_production(record)
        return len(records)

    # --- routines (task anticipation's experience, the task-anticipation paper) ---------------------------------

    def add_routines(self, routines: list[StoredRoutine]) -> list[int]:
        """Store days the robot has seen (context, ordered tasks, explanation), all in one
        transaction; returns their ids."""
        ids = []
        with self._transaction() as cur:
            for r in routines:
                cur.execute(
                    "INSERT INTO routines (day, facts_json, tasks_json, explanation, source, created_at) "
                    "VALUES (?,?,?,?,?,?)",
                    (r.day, json.dumps(sorted(r.facts)), json.dumps(list(r.tasks)), r.explanation,
                     r.source, r.created_at or time.time()))
                ids.append(int(cur.lastrowid or 0))
        return ids

    def routines(self) -> list[StoredRoutine]:
        """Every stored routine, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, day, facts_json, tasks_json, explanation, source, created_at "
                "FROM routines ORDER BY id").fetchall()
        return [StoredRoutine(day=r[1], facts=tuple(json.loads(r[2])), tasks=tuple(json.loads(r[3])),
                              explanation=r[4], source=r[5], created_at=r[6], routine_id=r[0])
                for r in rows]

    # --- export / import ---------------------------------------------------------------------

    def export_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "goals": [g.to_dict() for g in self.goals()],
            "policies": [p.to_dict() for p in self.policies()],
            "questions": self.question_log(),
            "productions": self.productions(),
            "family_end_conditions": self.family_end_conditions(),
            "world_statements": self.statements(),
            "routines": [r.to_dict() for r in self.routines()],
        }

    def import_dict(self, data: dict[str, Any], *, source: str = "<import>",
                    trust_confirmations: bool = False,
                    verify: Callable[[LearnedGoal, str], None] | None = None,
                    verify_routine: Callable[[StoredRoutine, str], None] | None = None,
                    verify_policy: Callable[[Policy, str], None] | None = None) -> ImportCounts:
        """Merge goals, policies and routines (task anticipation's experience) from an export;
        returns how many of each were imported (a routine already stored, the same day with the
        same time, is not added again: importing a file twice does not double the experience the
        validator counts).

        All or nothing: every entry is parsed (and checked by `verify(goal, key)`, which raises
        ConfigError naming the entry, e.g. a goal whose literals do not say what its text says)
        (and every routine by `verify_routine(routine, key)`, every policy by
        `verify_policy(policy, key)`) before anything is written. Confirmations are not taken on
        the file's word: an imported goal is unconfirmed, unless `trust_confirmations`, when a
        goal the file says an operator confirmed is stored as IMPORTED_TRUSTED. An imported policy
        is unreviewed whatever the file or the flag says (replayed only once an operator
        approves it), unless it repeats the actions of the policy already stored for its goal."""
        from task_learning.errors import ConfigError

        if not isinstance(data, dict):
            raise ConfigError(source, None, "expected a mapping with 'goals' and 'policies'")
        goals, policies = data.get("goals") or [], data.get("policies") or []
        routines = data.get("routines") or []
        for key, value in (("goals", goals), ("policies", policies), ("routines", routines)):
            if not isinstance(value, list):
                raise ConfigError(source, key, f"expected a list, got {type(value).__name__}")
        parsed_goals, parsed_policies = [], []
        for i, item in enumerate(goals):
            try:
                goal = LearnedGoal.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(source, f"goals[{i}]", f"invalid goal: {_problem(exc)}") from None
            claimed = goal.confirmed or (isinstance(item, dict) and item.get("confirmed") is True)
            goal.confirmation = (Confirmation.IMPORTED_TRUSTED if trust_confirmations and claimed
                                 else Confirmation.NONE)
            if verify is not None:
                verify(goal, f"goals[{i}] ({goal.task} | {goal.context})")
            parsed_goals.append(goal)
        for i, item in enumerate(policies):
            try:
                policy = Policy.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(source, f"policies[{i}]", f"invalid policy: {_problem(exc)}") from None
            if verify_policy is not None:
                verify_policy(policy, f"policies[{i}] ({policy.task} | {policy.object_type} in {policy.location})")
            stored_policy = self.policy_for(policy.task, policy.object_type, policy.location, policy.goal_key)
            if stored_policy is not None and stored_policy.actions == policy.actions:
                policy.approval = stored_policy.approval  # nothing new to review
            parsed_policies.append(policy)
        parsed_routines: list[StoredRoutine] = []
        for i, item in enumerate(routines):
            try:
                routine = StoredRoutine.from_dict(item)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(source, f"routines[{i}]", f"invalid routine: {_problem(exc)}") from None
            if verify_routine is not None:
                verify_routine(routine, f"routines[{i}]")
            parsed_routines.append(routine)
        stored = self.routines()
        new_routines: list[StoredRoutine] = []
        for routine in parsed_routines:
            if not any(routine.same_day(r) for r in stored + new_routines):
                new_routines.append(routine)
        for goal in parsed_goals:
            self.learn_goal(goal)
        for policy in parsed_policies:
            self.save_policy(policy)
        if new_routines:
            self.add_routines(new_routines)
        return ImportCounts(len(parsed_goals), len(parsed_policies), len(new_routines),
                            sum(1 for p in parsed_policies if not p.reviewed))


def imported_free_text(data: Any) -> dict[str, int]:
    """What `kb import` leaves out of an export, by kind: world statements and family end
    conditions (import_productions says why)."""
    if not isinstance(data, dict):
        return {}
    counts = {}
    for key in ("world_statements", "family_end_conditions"):
        value = data.get(key)
        counts[key] = len(value) if isinstance(value, (dict, list)) else 0
    return counts


def _problem(exc: Exception) -> str:
    return f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)


__all__ = [
    "Confirmation",
    "parse_confirmation",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "LearnedGoal",
    "Policy",
    "StoredRoutine",
    "ImportCounts",
    "OBJECT_VAR",
    "POLICY_LEARNED",
    "POLICY_UNREVIEWED",
    "policy_approved_by",
    "parse_goal_key",
    "imported_free_text",
    "lift_literals",
    "ground_lifted",
    "goal_key",
    "Truth",
]
