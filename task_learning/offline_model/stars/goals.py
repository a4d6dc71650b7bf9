"""A goal sentence of the offline model's own shape, as parts: what the model says (sentences.py),
what repair feedback rejects (feedback.py) and what Selection weighs (selection.py) all read it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from task_learning.inputs.names import normalize_name


@dataclass(frozen=True)
class ParsedGoal:
    """The parts of one goal sentence of the model's own shape."""

    verb: str  # "" or "stored", "put away" ...
    relation: str
    dest: str
    clause_kind: str = ""  # "" | dest_state | start_state | start_moved
    clause_subject: str = ""
    clause_state: str = ""  # the state word(s), or the place of a start_moved clause

    def words(self) -> list[str]:
        text = " ".join([self.verb, self.dest, self.clause_subject, self.clause_state])
        return text.split()


_OPENING = re.compile(r"^\s*(?:the\s+goal\s+is\s+that\s+)?", re.IGNORECASE)


def parse_goal(text: str, object_name: str) -> ParsedGoal | None:
    """Read a goal sentence of the model's shape back into parts (None if it has another shape).

    Used for repair feedback (what the rejected answer said) and for Selection (what each option
    proposes). The object's own name is removed first so "half and half" is not a conjunction.
    """
    body = text.strip().lower().rstrip(".").strip()
    body = _OPENING.sub("", body)
    obj = normalize_name(object_name)
    match = re.match(rf"^(?:the\s+)?{re.escape(obj)}\s+(?:is|are)\s+(.*)$", body) if obj else None
    if match is None:
        match = re.match(r"^(?:the\s+)?.+?\s+(?:is|are)\s+(.*?\b(?:in|on|inside)\s+.*)$", body)
        if match is None:
            return None
    rest = match.group(1)
    m = re.match(r"^(?:(.*?)\s+)?(in|on|inside)\s+(?:the\s+)?(.+)$", rest)
    if m is None:
        return None
    verb, relation, tail = (m.group(1) or "").strip(), m.group(2), m.group(3)
    dest, _, clause = tail.partition(" and the ")
    dest = dest.strip()
    if not clause:
        return ParsedGoal(verb, relation, dest)
    cm = re.match(r"^(.+?)\s+(?:is|are)\s+(?:(?:in|on|inside)\s+(?:the\s+)?(.+)|(.+))$", clause.strip())
    if cm is None:
        return ParsedGoal(verb, relation, dest, "other", "", clause.strip())
    subject = cm.group(1).strip()
    if cm.group(2):
        return ParsedGoal(verb, relation, dest, "start_moved", subject, cm.group(2).strip())
    kind = "dest_state" if subject == dest else "start_state"
    return ParsedGoal(verb, relation, dest, kind, subject, cm.group(3).strip())

