"""Paired operators and pairing codes (task_learning.oversight.pairing). Only verifiers are
stored, never tokens; an export leaves these tables out."""
from __future__ import annotations

import time
from typing import Any

from task_learning.kb.database import Database


class OperatorRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    def save_operator(self, name: str, verifier: str, created_by: str) -> None:
        """Pair (or re-pair) an operator: a new verifier replaces the old one (its old token stops
        working) and lifts a revocation."""
        with self.db.transaction() as cur:
            cur.execute("INSERT INTO operators (name, verifier, created_at, created_by, revoked_at) "
                        "VALUES (?,?,?,?,NULL) ON CONFLICT (name) DO UPDATE SET "
                        "verifier=excluded.verifier, created_at=excluded.created_at, "
                        "created_by=excluded.created_by, revoked_at=NULL",
                        (name, verifier, time.time(), created_by))

    def operator_verifier(self, name: str) -> str | None:
        with self.db.lock:
            row = self.db.conn.execute("SELECT verifier FROM operators WHERE name=? AND revoked_at IS NULL",
                                     (name,)).fetchone()
        return str(row[0]) if row else None

    def operator_by_verifier(self, verifier: str) -> str | None:
        with self.db.lock:
            row = self.db.conn.execute("SELECT name FROM operators WHERE verifier=? AND revoked_at IS NULL",
                                     (verifier,)).fetchone()
        return str(row[0]) if row else None

    def revoke_operator(self, name: str) -> bool:
        with self.db.transaction() as cur:
            cur.execute("UPDATE operators SET revoked_at=? WHERE name=? AND revoked_at IS NULL",
                        (time.time(), name))
            return cur.rowcount > 0

    def operator_records(self) -> list[dict[str, Any]]:
        with self.db.lock:
            rows = self.db.conn.execute("SELECT name, created_at, created_by, revoked_at FROM operators "
                                      "ORDER BY name").fetchall()
        return [{"name": r[0], "paired_at": r[1], "paired_by": r[2], "revoked_at": r[3]} for r in rows]

    def save_pairing_code(self, code_id: str, verifier: str, name: str, expires_at: float) -> None:
        with self.db.transaction() as cur:
            cur.execute("INSERT OR REPLACE INTO pairing_codes VALUES (?,?,?,?,NULL)",
                        (code_id, verifier, name, expires_at))

    def use_pairing_code(self, code_id: str, verifier: str, now: float) -> str | None:
        """The operator a code pairs, marking it used in the same transaction; None when the code
        is unknown, wrong, used or expired (a wrong secret does not use it up)."""
        import hmac

        with self.db.transaction() as cur:
            row = cur.execute("SELECT verifier, name, expires_at, used_at FROM pairing_codes WHERE code_id=?",
                              (code_id,)).fetchone()
            if row is None or row[3] is not None or row[2] <= now or not hmac.compare_digest(row[0], verifier):
                return None
            cur.execute("UPDATE pairing_codes SET used_at=? WHERE code_id=?", (now, code_id))
            return str(row[1])
