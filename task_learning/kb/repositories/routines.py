"""Routines: the days task anticipation has seen, its experience."""
from __future__ import annotations

import json
import time

from task_learning.kb.database import Database
from task_learning.kb.records import StoredRoutine


class RoutineRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add_routines(self, routines: list[StoredRoutine]) -> list[int]:
        """Store days the robot has seen (context, ordered tasks, explanation), all in one
        transaction; returns their ids."""
        ids = []
        with self.db.transaction() as cur:
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
        with self.db.lock:
            rows = self.db.conn.execute(
                "SELECT id, day, facts_json, tasks_json, explanation, source, created_at "
                "FROM routines ORDER BY id").fetchall()
        return [StoredRoutine(day=r[1], facts=tuple(json.loads(r[2])), tasks=tuple(json.loads(r[3])),
                              explanation=r[4], source=r[5], created_at=r[6], routine_id=r[0])
                for r in rows]
