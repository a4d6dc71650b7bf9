"""Repair feedback -> what the offline model stops saying for that request.

A real model given "(RESULT) ... cabinet ... Response: No. Cannot see a cabinet." tends to avoid
the cabinet next time; the offline model does so by rule. Only the feedback text and the rejected
response are used (never the scene): "Cannot see a X" bans the place X, "Unknown word W" the word
W, "X is not grabbable" moving X, "X is not a receptacle" putting things in X, "X cannot have
property S" the state S on X, "The goal must be about X" nothing beyond the rejected response
(its own answers are always about the object asked for). Feedback it cannot read ("Could not understand. Rephrase.") bans the
rejected response's second clause, or the response itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from task_learning.inputs.names import normalize_name
from task_learning.offline_model.stars.goals import ParsedGoal, parse_goal

_FILLABLE_STATES = {"empty", "full", "full of water", "filled", "emptied"}
_OPENABLE_STATES = {"closed", "open", "shut", "opened", "locked"}
_TOGGLE_STATES = {"on", "off", "turned on", "turned off", "started", "running", "plugged in"}


def _head(phrase: str) -> str:
    words = normalize_name(phrase).split()
    return words[-1] if words else ""


def _strip_article(phrase: str) -> str:
    return re.sub(r"^(?:a|an|the)\s+", "", phrase.strip().lower()).strip(" .")


@dataclass
class Avoidance:
    """What not to say. Empty = allows everything."""

    unseen: set[str] = field(default_factory=set)
    unknown_words: set[str] = field(default_factory=set)
    not_movable: set[str] = field(default_factory=set)  # heads
    not_receptacles: set[str] = field(default_factory=set)  # heads
    banned_states: set[tuple[str, str]] = field(default_factory=set)  # (subject head or "", state)
    banned_clauses: set[tuple[str, str, str]] = field(default_factory=set)  # (dest, subject, state)
    banned_goals: set[ParsedGoal] = field(default_factory=set)
    object_words: frozenset[str] = frozenset()
    rejected: ParsedGoal | None = None  # the response being repaired, as parts

    def __bool__(self) -> bool:
        return any((self.unseen, self.unknown_words, self.not_movable, self.not_receptacles,
                    self.banned_states, self.banned_clauses, self.banned_goals))

    def allows(self, parts: ParsedGoal) -> bool:
        if parts in self.banned_goals:
            return False
        places = {parts.dest}
        if parts.clause_kind in ("dest_state", "start_state", "start_moved"):
            places.add(parts.clause_subject)
        if parts.clause_kind == "start_moved":
            places.add(parts.clause_state)
        if places & self.unseen:
            return False
        words = [w for w in parts.words() if w not in self.object_words]
        joined = " " + " ".join(words) + " "
        for word in self.unknown_words:
            if f" {word} " in joined:
                return False
        if parts.clause_kind == "start_moved":
            if _head(parts.clause_subject) in self.not_movable:
                return False
            if _head(parts.clause_state) in self.not_receptacles:
                return False
        if _head(parts.dest) in self.not_receptacles:
            return False
        if parts.clause_kind in ("dest_state", "start_state"):
            subject = _head(parts.clause_subject)
            if (subject, parts.clause_state) in self.banned_states or ("", parts.clause_state) in self.banned_states:
                return False
        if parts.clause_kind and (parts.dest, parts.clause_subject, parts.clause_state) in self.banned_clauses:
            return False
        return True


def parse_feedback(feedback: str, repair_of: str, object_name: str) -> Avoidance:
    """Read the robot's feedback sentences (one or several) about the rejected `repair_of`."""
    avoid = Avoidance(object_words=frozenset(normalize_name(object_name).split()))
    rejected = parse_goal(repair_of, object_name) if repair_of.strip() else None
    avoid.rejected = rejected
    if rejected is not None:
        avoid.banned_goals.add(rejected)
    understood = False
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", feedback or ""):
        sentence = sentence.strip().rstrip(".").strip()
        low = sentence.lower()
        if not low or low in ("no", "yes"):
            continue
        low = re.sub(r"^no[.,:]?\s+", "", low)
        understood |= _read_one(low, avoid, rejected)
    if (feedback or "").strip() and not understood and rejected is not None:
        if rejected.clause_kind:
            avoid.banned_clauses.add((rejected.dest, rejected.clause_subject, rejected.clause_state))
            avoid.banned_states.add((_head(rejected.clause_subject), rejected.clause_state))
        if rejected.verb:
            avoid.unknown_words.update(rejected.verb.split())
    return avoid


def _read_one(low: str, avoid: Avoidance, rejected: ParsedGoal | None) -> bool:
    if re.match(r"^(?:the\s+)?goal\s+(?:must|should)\s+be\s+about\s+.+$", low):
        return True  # the rejected response (already banned) was about another object
    m = re.match(r"^(?:i\s+)?(?:cannot|can't|can not)\s+see\s+(.+)$", low)
    if m:
        avoid.unseen.add(normalize_name(_strip_article(m.group(1))))
        return True
    m = re.match(r"^unknown\s+words?:?\s+(.+)$", low) or re.match(r"^i\s+do\s+not\s+know\s+(?:the\s+word\s+)?(.+)$", low)
    if m:
        for word in re.split(r"\s*,\s*|\s+and\s+", m.group(1)):
            word = word.strip(" '\"")
            if word:
                avoid.unknown_words.add(word)
        return True
    m = re.match(r"^(.+?)\s+(?:is|are)\s+not\s+(?:grabbable|pickupable|movable|moveable)$", low) \
        or re.match(r"^(.+?)\s+(?:cannot|can't)\s+be\s+(?:picked\s+up|moved|grabbed)$", low)
    if m:
        avoid.not_movable.add(_head(_strip_article(m.group(1))))
        return True
    m = re.match(r"^(.+?)\s+(?:is|are)\s+not\s+an?\s+(?:receptacle|surface|container)$", low)
    if m:
        avoid.not_receptacles.add(_head(_strip_article(m.group(1))))
        return True
    m = re.match(r"^(.+?)\s+(?:cannot|can't|can not)\s+(?:have\s+(?:the\s+)?(?:property|state)\s+|be\s+|have\s+)(.+)$", low)
    if m:
        avoid.banned_states.add((_head(_strip_article(m.group(1))), m.group(2).strip()))
        return True
    m = re.match(r"^(.+?)\s+(?:is|are)\s+not\s+(fillable|openable|toggleable)$", low)
    if m:
        subject = _head(_strip_article(m.group(1)))
        states = {"fillable": _FILLABLE_STATES, "openable": _OPENABLE_STATES, "toggleable": _TOGGLE_STATES}[m.group(2)]
        avoid.banned_states.update((subject, s) for s in states)
        return True
    m = re.match(r"^(.+?)\s+needs?\s+an?\s+(fillable|openable|toggleable)\s+object$", low)
    if m:
        states = {"fillable": _FILLABLE_STATES, "openable": _OPENABLE_STATES, "toggleable": _TOGGLE_STATES}[m.group(2)]
        subject = _head(rejected.clause_subject) if rejected is not None and rejected.clause_kind else ""
        avoid.banned_states.update((subject, s) for s in states)
        return True
    return False
