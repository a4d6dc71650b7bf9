"""The experimental conditions of seed 000 (Table 1) and what each one switches on."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from task_learning.errors import TaskLearningError


class Condition(str, Enum):
    TBP = "TBP"  # template-based prompting: samples at several temperatures, best mean probability
    TBP_O = "TBP+O"
    ST = "ST"  # search tree, highest score
    STS = "STS"  # search tree + LLM selection
    STAR = "STAR"  # search tree + analysis and repair, highest viable score
    STARS = "STARS"  # + LLM selection
    STARS_STAR = "STARS*"  # STARS with the user's context as a system prompt
    STARS_O = "STARS+O"  # STARS + user oversight


@dataclass(frozen=True)
class ConditionFlags:
    search_tree: bool
    analyze_repair: bool
    llm_selection: bool
    oversight: bool
    user_context: bool


_FLAGS = {
    Condition.TBP: ConditionFlags(False, False, False, False, False),
    Condition.TBP_O: ConditionFlags(False, False, False, True, False),
    Condition.ST: ConditionFlags(True, False, False, False, False),
    Condition.STS: ConditionFlags(True, False, True, False, False),
    Condition.STAR: ConditionFlags(True, True, False, False, False),
    Condition.STARS: ConditionFlags(True, True, True, False, False),
    Condition.STARS_STAR: ConditionFlags(True, True, True, False, True),
    Condition.STARS_O: ConditionFlags(True, True, True, True, False),
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
