"""The experimental conditions of the STARS paper (Table 1) and what each one switches on."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from task_learning.errors import TaskLearningError


class Condition(str, Enum):
    TBP = "TBP"  # template-based prompting: samples at several temperatures, best mean probability
    TBP_O = "TBP+O"
    ST = "ST"  # search tree, highest score
    STS = "STS"  # search tree + LLM selection
    STAR = "STAR"  # search tree + analysis and repair, highest viable score
    STARS = "STARS"  # + LLM selection
    STARS_STAR = "STARS*"  # STARS, Selection given the STARS paper footnote 3's context (tidy kitchen)
    STARS_O = "STARS+O"  # STARS + user oversight
    STARS_CTX = "STARS+CTX"  # extension, not in the paper: the scene's user context to every prompt


@dataclass(frozen=True)
class ConditionFlags:
    search_tree: bool
    analyze_repair: bool
    llm_selection: bool
    oversight: bool
    user_context: bool  # the scene's `context` to goal prompts and Selection (STARS+CTX)
    selection_context: bool = False  # the scene's `selection_context` to Selection only (STARS*)


_FLAGS = {
    Condition.TBP: ConditionFlags(False, False, False, False, False),
    Condition.TBP_O: ConditionFlags(False, False, False, True, False),
    Condition.ST: ConditionFlags(True, False, False, False, False),
    Condition.STS: ConditionFlags(True, False, True, False, False),
    Condition.STAR: ConditionFlags(True, True, False, False, False),
    Condition.STARS: ConditionFlags(True, True, True, False, False),
    Condition.STARS_STAR: ConditionFlags(True, True, True, False, False, selection_context=True),
    Condition.STARS_O: ConditionFlags(True, True, True, True, False),
    Condition.STARS_CTX: ConditionFlags(True, True, True, False, True),
}


def flags(condition: Condition) -> ConditionFlags:
    return _FLAGS[condition]


def parse_condition(name: str | Condition) -> Condition:
    """'stars', 'STARS*', 'stars+o', 'stars_plus_o', 'stars_star' -> Condition; anything else is
    a clear error."""
    if isinstance(name, Condition):
        return name
    wanted = str(name).strip().upper().replace(" ", "").replace("-", "_")
    wanted = wanted.replace("_PLUS_", "+").replace("PLUS", "+")
    if wanted.endswith("_STAR"):
        wanted = wanted[: -len("_STAR")] + "*"
    for cond in Condition:
        if cond.value == wanted:
            return cond
    raise TaskLearningError(f"unknown condition {name!r} (choose from "
                            f"{', '.join(c.value for c in Condition)})")


def paper_selection_context(condition: Condition, scene: object) -> tuple[str, ...]:
    """STARS*'s sentences for Selection: the scene's `selection_context` (the STARS paper gives them,
    in footnote 3, for tidy kitchen only). Other conditions get none; STARS* on a scene without
    them is an error that names the alternative."""
    if not flags(condition).selection_context:
        return ()
    sentences = tuple(str(s) for s in (getattr(scene, "selection_context", None) or ()))
    if not sentences:
        name = getattr(scene, "name", "") or "this scene"
        raise TaskLearningError(f"STARS* is defined by the paper for tidy kitchen only (footnote 3);"
                                f" {name} has no selection_context: use STARS+CTX for user context")
    return sentences


def user_context(condition: Condition, given: Sequence[str], scene_context: Sequence[str] = ()) -> list[str]:
    """STARS+CTX's user-context sentences: the ones given (blank ones dropped), else the scene's;
    [] for a condition without user context."""
    if not flags(condition).user_context:
        return []
    return [s for s in given if s.strip()] or list(scene_context)
