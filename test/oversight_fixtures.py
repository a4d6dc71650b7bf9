"""Hand-built inputs for the oversight tests: the mug example (the STARS paper B.6/B.7) with grounded
literals, and a tiny stand-in analyser that reads "the goal is that the X is in the Y [and the Y is
closed]" against a fixed kitchen, so the flow tests do not depend on the grounding component."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from task_learning.types import (
    CandidateSource,
    GoalCandidate,
    GoalLiteral,
    Mismatch,
    MismatchKind,
    Truth,
)

KITCHEN = {"mug": "Mug|1", "dish rack": "DishRack|1", "cupboard": "Cupboard|1",
           "dishwasher": "Dishwasher|1", "drawer": "Drawer|1", "sink": "Sink|1"}
OPENABLE = {"Cupboard|1", "Dishwasher|1", "Drawer|1"}
MUG_PLACE = "mug in the dish rack"

_SENTENCE = re.compile(r"^the goal is that the (?P<obj>[a-z ]+?) is in the (?P<dest>[a-z ]+?)"
                       r"(?: and the (?P<closed>[a-z ]+?) is closed)?$")


@dataclass
class FakeAnalysis:
    viable: bool
    mismatches: list[Mismatch] = field(default_factory=list)
    literals: list[GoalLiteral] = field(default_factory=list)


def fake_analyze(sentence: str) -> FakeAnalysis:
    match = _SENTENCE.match(sentence.strip().lower())
    if not match:
        return FakeAnalysis(False, [Mismatch(MismatchKind.UNINTERPRETABLE, sentence,
                                             "No. Cannot interpret that.")])
    names = [match["obj"], match["dest"]] + ([match["closed"]] if match["closed"] else [])
    for name in names:
        if name not in KITCHEN:
            return FakeAnalysis(False, [Mismatch(MismatchKind.UNGROUNDED_OBJECT,
                                                 f"no {name} in the kitchen",
                                                 f"No. Cannot see a {name}.", name)])
    obj, dest = KITCHEN[match["obj"]], KITCHEN[match["dest"]]
    literals = [GoalLiteral("inside", (obj, dest))]
    if match["closed"]:
        literals.append(GoalLiteral("open", (KITCHEN[match["closed"]],), Truth.FALSE))
    return FakeAnalysis(True, [], literals)


# B.6: the six viable options for the mug, in the order presented (lowest score first).
MUG_OPTIONS = [
    ("the goal is that the mug is in the cupboard", 0.8612),
    ("the goal is that the mug is in the dishwasher", 0.8618),
    ("the goal is that the mug is in the dishwasher and the dishwasher is closed", 0.899),
    ("the goal is that the mug is in the drawer and the drawer is closed", 0.913),
    ("the goal is that the mug is in the cupboard and the cupboard is closed", 0.935),
    ("the goal is that the mug is in the dish rack", 0.971),
]
CUPBOARD_CLOSED = "the goal is that the mug is in the cupboard and the cupboard is closed"


def mug_candidates() -> list[GoalCandidate]:
    """The six viable options, analysed, ranked best (highest score) first."""
    out = []
    for number, (text, score) in enumerate(MUG_OPTIONS, start=1):
        analysis = fake_analyze(text)
        assert analysis.viable, text
        out.append(GoalCandidate(text=text, score=score, source=CandidateSource.INITIAL,
                                 candidate_id=number, viable=True, literals=analysis.literals))
    return sorted(out, key=lambda c: -c.score)


def by_score(options: list[GoalCandidate]) -> GoalCandidate | None:
    """A stand-in Selection: the highest-scoring remaining option (what TBP/ST would use)."""
    return max(options, key=lambda c: c.score) if options else None


def mug_preferences() -> dict:
    return {"Mug|1": ["Cupboard|1"]}
