"""Questions put to the operator and their answers, with provenance (who asked, who answered,
verified or not), so a restarted run does not ask again and a stranger's answer never counts."""
from __future__ import annotations

import json
import time
from typing import Any

from task_learning.kb.database import Database, KnowledgeBaseError
from task_learning.kb.records import TIMEOUT_OPERATOR
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest


class QuestionRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record_question(self, request: ConfirmationRequest, *, task: str = "", context: str = "",
                        asked_by: str = "") -> None:
        """`asked_by`: the verified asker of a question the oversight node issued ("" for a
        question asked in this process); the node's memory replays only its own askers' answers."""
        candidate = request.candidate
        with self.db.transaction() as cur:
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
        self.db.changed("question", {"request_id": request.request_id, "task": task, "question": request.question,
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
        with self.db.transaction() as cur:
            known = cur.execute("SELECT 1 FROM questions WHERE request_id=?", (answer.request_id,)).fetchone()
            if not known:
                raise KnowledgeBaseError(f"no question with request id {answer.request_id!r}")
            cur.execute(
                "INSERT OR REPLACE INTO answers (request_id, answered_at, answer, description, "
                "operator, client, verified, confirmation_id) VALUES (?,?,?,?,?,?,?,?)",
                (answer.request_id, answer.stamp or time.time(), kind.value,
                 answer.description, answer.operator, client, int(bool(verified)), confirmation_id),
            )
        self.db.changed("answer", {"request_id": answer.request_id, "answer": kind.value,
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
        with self.db.lock:
            row = self.db.conn.execute(sql + " ORDER BY a.answered_at DESC LIMIT 1", args).fetchone()
        if row is None:
            return None
        return ConfirmationAnswer(row[0], AnswerKind(row[1]), row[2], row[3], row[4])

    def question_log(self) -> list[dict[str, Any]]:
        with self.db.lock:
            rows = self.db.conn.execute(
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
        with self.db.lock:
            rows = self.db.conn.execute(
                "SELECT q.request_id, q.question, q.object_description, q.candidate_text, a.answer, "
                "a.description, a.operator, a.client, a.answered_at, a.confirmation_id "
                "FROM answers a JOIN questions q ON q.request_id = a.request_id "
                "WHERE a.operator = ? OR a.operator = ? ORDER BY a.answered_at DESC LIMIT ?",
                (operator, f"{operator} (remembered)", int(limit))).fetchall()
        keys = ("request_id", "question", "object_description", "candidate_text", "answer", "description",
                "operator", "client", "answered_at", "confirmation_id")
        return [dict(zip(keys, row)) for row in rows]
