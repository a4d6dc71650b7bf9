"""What an operator confirmed, read back from the knowledge base's question log: the measure of
"nothing unconfirmed moves the robot" that the fault probes (in process and through the ROS graph)
hold a run's report against, from the knowledge base itself rather than the run's own words."""
from __future__ import annotations

from pathlib import Path

from task_learning.kb import KnowledgeBase


def operator_confirmations(db: Path) -> dict[str, set[str]]:
    """object id -> goal texts an operator said yes to (or "*" for a description they gave), each
    as goal_text_key gives it."""
    out: dict[str, set[str]] = {}
    with KnowledgeBase(db) as kb:
        for row in kb.question_log():
            if row.get("answer") == "yes":
                out.setdefault(row["object_id"], set()).add(goal_text_key(row.get("candidate_text") or ""))
            elif row.get("answer") == "description":
                out.setdefault(row["object_id"], set()).add("*")
    return out


def goal_text_key(text: str) -> str:
    """A goal text compared without case, surrounding blanks or a final full stop."""
    return " ".join(text.lower().strip().rstrip(".").split())
