"""Learned goals, keyed by (task, context), and how each was confirmed."""
from __future__ import annotations

import json
import time
from typing import Any

from task_learning.kb.database import Database
from task_learning.kb.records import Confirmation, LearnedGoal, parse_confirmation
from task_learning.types import GoalLiteral


class GoalRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    def learn_goal(self, goal: LearnedGoal) -> None:
        """Store (or replace) the goal for (task, context) in one transaction."""
        with self.db.transaction() as cur:
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
        self.db.changed("goal", goal.to_dict())

    def set_confirmation(self, task: str, context: str, confirmation: Confirmation,
                         confirmed_by: dict[str, Any] | None = None) -> bool:
        """Record how the goal for (task, context) was confirmed, and by whom (kept in its
        provenance as `confirmed_by`: operator, client, time); False when there is no such goal."""
        with self.db.transaction() as cur:
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
        self.db.changed("confirmation", {"task": task, "context": context, "confirmation": confirmation.value})
        return True

    def goal_for(self, task: str, context: str) -> LearnedGoal | None:
        with self.db.lock:
            row = self.db.conn.execute(
                "SELECT task, context, object_type, text, literals_json, condition, confirmed, "
                "provenance_json, created_at, confirmation FROM goals WHERE task=? AND context=?", (task, context)
            ).fetchone()
        return self._goal_from_row(row) if row else None

    def goals(self) -> list[LearnedGoal]:
        with self.db.lock:
            rows = self.db.conn.execute(
                "SELECT task, context, object_type, text, literals_json, condition, confirmed, "
                "provenance_json, created_at, confirmation FROM goals ORDER BY id"
            ).fetchall()
        return [self._goal_from_row(r) for r in rows]

    @staticmethod
    def _goal_from_row(row: tuple[Any, ...]) -> LearnedGoal:  # an SQLite row
        return LearnedGoal(
            task=row[0], context=row[1], object_type=row[2], text=row[3],
            literals=[GoalLiteral.from_dict(d) for d in json.loads(row[4])],
            condition=row[5], confirmation=parse_confirmation(row[9]),
            provenance=json.loads(row[7]), created_at=row[8],
        )
