"""Policies: successful action sequences for (task, object type, location, goal), and who
approved their replay."""
from __future__ import annotations

import json
import time
from typing import Any

from task_learning.kb.database import Database
from task_learning.kb.records import Policy, action_from_dict, action_to_dict


class PolicyRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    def save_policy(self, policy: Policy) -> None:
        with self.db.transaction() as cur:
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
        self.db.changed("policy", policy.to_dict())

    _POLICY_COLUMNS = "task, object_type, location, goal_key, actions_json, successes, failures, approval"

    @staticmethod
    def _policy_from_row(row: tuple[Any, ...]) -> Policy:  # an SQLite row: columns of _POLICY_COLUMNS
        return Policy(row[0], row[1], row[2], row[3], [action_from_dict(a) for a in json.loads(row[4])],
                      row[5], row[6], row[7])

    def policy_for(self, task: str, object_type: str, location: str, goal_key_text: str) -> Policy | None:
        with self.db.lock:
            row = self.db.conn.execute(
                f"SELECT {self._POLICY_COLUMNS} FROM policies "
                "WHERE task=? AND object_type=? AND location=? AND goal_key=?",
                (task, object_type, location, goal_key_text),
            ).fetchone()
        return None if row is None else self._policy_from_row(row)

    def policies(self) -> list[Policy]:
        with self.db.lock:
            rows = self.db.conn.execute(f"SELECT {self._POLICY_COLUMNS} FROM policies ORDER BY id").fetchall()
        return [self._policy_from_row(r) for r in rows]
