"""The measures of the STARS paper Table 2 / appendix C for one run of one condition."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from task_learning.types import LLMUsage

if TYPE_CHECKING:
    from task_learning.oversight.flow import OversightCounts


@dataclass
class RunMetrics:
    """Counts accumulated over a run.

    retrieved: distinct goal descriptions produced by the LLM (TBP or the search tree, repairs
    included); proposed: goals put to the user as yes/no questions; sourced: goals the robot
    actually used (from the LLM; user descriptions are not sourced goals); instructions / words:
    everything the user said, the teaching dialogue included; yes_no: yes/no answers given.
    """

    satisfied: int = 0
    assertions: int = 0
    retrieved: int = 0
    proposed: int = 0
    sourced: int = 0
    instructions: int = 0
    yes_no: int = 0
    words: int = 0
    questions: int = 0  # questions actually put to an operator this run
    learned_goals_reused: int = 0
    policies_reused: int = 0
    usage: LLMUsage = field(default_factory=LLMUsage)
    per_object: list[dict[str, Any]] = field(default_factory=list)

    def count_dialogue(self, counts: OversightCounts) -> None:
        """Add what an operator was asked and said (goals proposed, yes/no answers, instructions
        and their words; every instruction answered one question)."""
        self.proposed += counts.proposed
        self.yes_no += counts.yes_no
        self.instructions += counts.instructions
        self.words += counts.words
        self.questions += counts.instructions

    @property
    def completion(self) -> float:
        return 100.0 * self.satisfied / self.assertions if self.assertions else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "completion": round(self.completion, 1),
            "satisfied": self.satisfied,
            "assertions": self.assertions,
            "retrieved": self.retrieved,
            "proposed": self.proposed,
            "sourced": self.sourced,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "total_tokens": self.usage.prompt_tokens + self.usage.completion_tokens,
            "instructions": self.instructions,
            "yes_no": self.yes_no,
            "words": self.words,
            "questions": self.questions,
            "learned_goals_reused": self.learned_goals_reused,
            "policies_reused": self.policies_reused,
            "usage": self.usage.to_dict(),
            "objects": self.per_object,
        }
