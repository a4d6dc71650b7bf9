"""What the web panel shows of a question: plain data (JSON) that the page renders as text.

Everything here is data, never markup: object names, candidate goals and the analysis' feedback
come from the world and the language model, so the page puts them in with `textContent` only
(static/panel.js), and the server sends them as JSON strings. The reading of replies, the hint of
what a question expects and the time left come from `answers` (one module for every front end).
"""
from __future__ import annotations

import re
import time
from typing import Any

from task_learning.oversight.answers import expected, object_noun, remaining_s, remaining_text
from task_learning.types import CandidateSource, ConfirmationRequest, GoalCandidate

_WHERE = re.compile(r"\s+(?P<where>(?:in|on|inside|at|under|near|by)\s+.+)$")

_SOURCES = {
    CandidateSource.INITIAL: "proposed by the language model",
    CandidateSource.RECURSE: "a continuation the language model proposed",
    CandidateSource.REPAIR: "a repair the language model made after the robot's feedback",
    CandidateSource.REPAIR_RECURSE: "a continuation of a repair",
    CandidateSource.USER: "described by an operator",
}


def where_of(object_description: str) -> str:
    """'mug in the dish rack' -> 'in the dish rack'; '' when the description names no place."""
    found = _WHERE.search(object_description.strip())
    return found.group("where") if found else ""


def candidate_view(cand: GoalCandidate, asked: bool) -> dict[str, Any]:
    return {
        "id": cand.candidate_id,
        "text": cand.text,
        "score": round(float(cand.score), 3),
        "source": cand.source.value,
        "source_text": _SOURCES.get(cand.source, cand.source.value),
        "parent": cand.parent_id,
        "viable": cand.viable,
        "asked": asked,
        "repair_feedback": cand.repair_feedback,
        "mismatches": [{"kind": m.kind.value, "detail": m.detail, "feedback": m.feedback}
                       for m in cand.mismatches],
        "literals": [str(lit) for lit in cand.literals],
    }


def reasons(request: ConfirmationRequest) -> list[str]:
    """Why the robot asks, in sentences: who asked, how the candidate was ranked among the
    others, the repair it came from, and what the analysis said of the rejected ones."""
    lines: list[str] = []
    if request.asked_by:
        lines.append(f"Asked by the robot's {request.asked_by.lstrip('/')} node.")
    asked = request.candidate
    listed = list(request.candidates)
    if request.wants_description:
        lines.append("None of the robot's own candidate goals could be confirmed, so it asks for "
                     "the goal in your words.")
    if asked is not None:
        lines.append(f"The candidate asked about (#{asked.candidate_id}) was "
                     f"{_SOURCES.get(asked.source, asked.source.value)}.")
        ranked = sorted(listed, key=lambda c: -float(c.score))
        place = next((i for i, c in enumerate(ranked) if c.candidate_id == asked.candidate_id), None)
        if place is not None and len(ranked) > 1:
            lines.append(f"Selection ranked it {place + 1} of {len(ranked)} candidates by the language "
                         f"model's score ({asked.score:.3f}).")
        if asked.viable:
            lines.append("The robot's analysis grounded it in this scene"
                         + (f": {', '.join(str(lit) for lit in asked.literals)}." if asked.literals else "."))
        elif asked.viable is False:
            lines.append("The robot's analysis could not ground it: "
                         + "; ".join(m.feedback or m.detail for m in asked.mismatches) + ".")
        if asked.repair_feedback:
            lines.append(f"It repairs #{asked.parent_id} after the feedback: \"{asked.repair_feedback}\"")
    rejected = [c for c in listed if c.viable is False and (asked is None or c.candidate_id != asked.candidate_id)]
    if rejected:
        lines.append(f"{len(rejected)} other candidate(s) were rejected by the analysis (see the list).")
    return lines


def question_view(request: ConfirmationRequest, *, nonce: str, has_image: bool,
                  now: float | None = None) -> dict[str, Any]:
    """One pending question as the page gets it. `nonce`: what an answer from this page must
    carry (the server issued it to this page's live connection for this question)."""
    now = time.time() if now is None else now
    asked = request.candidate
    listed = list(request.candidates)
    if asked is not None and all(c.candidate_id != asked.candidate_id for c in listed):
        listed.insert(0, asked)
    left = remaining_s(request, now)
    return {
        "id": request.request_id,
        "nonce": nonce,
        "question": request.question,
        "object_id": request.object_id,
        "object": object_noun(request.object_description) if request.object_description else request.object_id,
        "where": where_of(request.object_description),
        "object_description": request.object_description,
        "candidate": asked.text if asked is not None else "",
        "wants_description": bool(request.wants_description),
        "expected": expected(request),
        "reasons": reasons(request),
        "candidates": [candidate_view(c, asked is not None and c.candidate_id == asked.candidate_id)
                       for c in listed],
        "deadline": float(request.deadline or 0.0),
        "remaining_s": None if left is None else round(left, 1),
        "remaining_text": remaining_text(request, now),
        "asked_by": request.asked_by,
        "has_image": has_image,
    }
