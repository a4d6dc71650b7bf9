"""Productions (the bootstrapped-productions method) with their utilities and approvals, and the
world knowledge they act on: world statements and the critic's family end conditions. The rules
are stored as data: the production language above (task_learning.productions) validates them on
their way in and on every load, so this layer imports none of it."""
from __future__ import annotations

import json
import time
from typing import Any

from task_learning.kb.database import Database


class ProductionRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    def save_production(self, record: dict[str, Any]) -> None:
        """Store (or replace) a production by name: `record` holds name, task, rule (its data
        form, validated by task_learning.productions.language on every load), english, utility,
        count, provenance (the conversation that produced it) and approval."""
        with self.db.transaction() as cur:
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
        with self.db.transaction() as cur:
            now = time.time()
            cur.executemany("UPDATE productions SET utility=?, count=?, updated_at=? WHERE name=?",
                            [(float(u), int(n), now, name) for name, u, n in updates])

    def approve_production(self, name: str, approval: str) -> bool:
        """Record an operator's approval of a production; False when there is no such one."""
        with self.db.transaction() as cur:
            cur.execute("UPDATE productions SET approval=?, updated_at=? WHERE name=?", (approval, time.time(), name))
            return cur.rowcount > 0

    def delete_production(self, name: str) -> None:
        with self.db.transaction() as cur:
            cur.execute("DELETE FROM productions WHERE name=?", (name,))

    def productions(self) -> list[dict[str, Any]]:
        with self.db.lock:
            rows = self.db.conn.execute(
                "SELECT name, task, rule_json, english, utility, count, provenance_json, approval "
                "FROM productions ORDER BY id").fetchall()
        return [{"name": r[0], "task": r[1], "rule": json.loads(r[2]), "english": r[3], "utility": r[4],
                 "count": r[5], "provenance": json.loads(r[6]), "approval": r[7]} for r in rows]

    def statement_truth(self, statement: str) -> bool | None:
        with self.db.lock:
            row = self.db.conn.execute("SELECT truth FROM world_statements WHERE statement=?",
                                     (statement,)).fetchone()
        return None if row is None else bool(row[0])

    def record_statement(self, statement: str, truth: bool, source: str) -> None:
        with self.db.transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO world_statements VALUES (?,?,?,?)",
                        (statement, int(bool(truth)), source, time.time()))

    def family_end_conditions(self) -> dict[str, str]:
        """Task family pattern -> the critic's end condition (kept in `meta`)."""
        with self.db.lock:
            rows = self.db.conn.execute("SELECT key, value FROM meta WHERE key LIKE 'family_end:%'").fetchall()
        return {r[0][len("family_end:"):]: r[1] for r in rows}

    def set_family_end_condition(self, family: str, end_condition: str) -> None:
        with self.db.transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"family_end:{family}", end_condition))

    def bootstrap_records(self) -> dict[str, dict[str, Any]]:
        """Task family -> what its last bootstrapping run did (kept in `meta`): a knowledge base
        bootstrapped by a model that learned no production is still a bootstrapped one."""
        with self.db.lock:
            rows = self.db.conn.execute("SELECT key, value FROM meta WHERE key LIKE 'bootstrap:%'").fetchall()
        out: dict[str, dict[str, Any]] = {}
        for key, value in rows:
            try:
                record = json.loads(value)
            except json.JSONDecodeError:
                continue  # written by no version of this code; not a record
            if isinstance(record, dict):
                out[key[len("bootstrap:"):]] = record
        return out

    def record_bootstrap(self, family: str, record: dict[str, Any]) -> None:
        with self.db.transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"bootstrap:{family}", json.dumps(record)))

    def statements(self, source: str | None = None) -> dict[str, bool]:
        """Every world statement and its truth; with `source`, only those recorded from it."""
        with self.db.lock:
            if source is None:
                rows = self.db.conn.execute("SELECT statement, truth FROM world_statements ORDER BY statement").fetchall()
            else:
                rows = self.db.conn.execute("SELECT statement, truth FROM world_statements WHERE source=? "
                                          "ORDER BY statement", (source,)).fetchall()
        return {r[0]: bool(r[1]) for r in rows}

    def import_productions(self, records: list[dict[str, Any]]) -> int:
        """Write imported productions, each already validated and made unapproved by the production
        language (task_learning.productions.memory.parse_production_import). An export's world statements and
        family end conditions are not imported: they are free text ("Ignore all previous
        instructions ...") and truths the rules act on, which no operator reviewed; a bootstrap
        asks the LLM for them again (imported_free_text counts what was left out)."""
        for record in records:
            self.save_production(record)
        return len(records)
