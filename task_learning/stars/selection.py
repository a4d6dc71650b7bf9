"""Selection (S): the LLM picks one goal among numbered candidates (the STARS paper §4.3, B.6).

Options are presented lowest score first (the model leans to the last option) and the model is
asked for a single integer. An answer that is missing, not a number, or out of range is asked once
more with a stricter instruction; if that fails too the highest-scoring option is used, and the
outcome says so (it is never silent).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.stars.prompts import GoalContext, PromptTemplates, option_of_sentence
from task_learning.stars.tree import CompletionClient, Steps, drive
from task_learning.types import GoalCandidate

log = logging.getLogger(__name__)

_LEADING_INT = re.compile(r"^\s*(?:answer\s*:?\s*)?(?:option\s*)?\(?#?(\d+)(?![.,]\d)\)?(?:\s*[.):]|\s|$)", re.IGNORECASE)


@dataclass
class SelectionOutcome:
    """How the goal was chosen. method: llm | llm_retry | fallback_highest_score | single_option |
    no_options."""

    chosen: GoalCandidate | None
    options: list[GoalCandidate] = field(default_factory=list)  # in presentation order
    method: str = "no_options"
    answers: list[str] = field(default_factory=list)  # raw model answers (errors as "error: ...")
    index: int | None = None  # 1-based index of the chosen option in `options`
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "index": self.index,
                "chosen": self.chosen.text if self.chosen else None,
                "options": [c.text for c in self.options], "answers": list(self.answers),
                "problems": list(self.problems)}


def presentation_order(candidates: Sequence[GoalCandidate]) -> list[GoalCandidate]:
    """Lowest score first; ties keep discovery order (candidate id)."""
    return sorted(candidates, key=lambda c: (c.score, c.candidate_id))


def highest_score(candidates: Sequence[GoalCandidate]) -> GoalCandidate | None:
    """The ST/STAR choice: best score; ties go to the earliest found."""
    if not candidates:
        return None
    return min(candidates, key=lambda c: (-c.score, c.candidate_id))


def parse_answer(text: str, count: int) -> tuple[int | None, str]:
    """The option number in a model answer ("5", "5.", "Answer: 5", "5. The goal is ..."), or None
    and why it is unusable."""
    if not text.strip():
        return None, "empty answer"
    match = _LEADING_INT.match(text)
    if not match:
        return None, f"not an option number: {text.strip()[:60]!r}"
    number = int(match.group(1))
    if not 1 <= number <= count:
        return None, f"option {number} does not exist (1..{count})"
    return number, ""


def select_goal(client: CompletionClient, templates: PromptTemplates, ctx: GoalContext,
                candidates: Sequence[GoalCandidate], *, scope: str = "",
                ask_single: bool = False, constrained: bool = False) -> SelectionOutcome:
    """Ask the model which candidate is the most reasonable goal."""
    def send(requests: list[LLMRequest]) -> list[LLMResponse]:
        out = []
        for request in requests:
            try:
                out.append(client.complete(request))
            except Exception as exc:  # noqa: BLE001 - the client should not raise; never let selection crash
                out.append(LLMResponse(text="", error=f"client raised {type(exc).__name__}: {exc}"))
        return out

    return drive(select_goal_steps(templates, ctx, candidates, scope=scope, ask_single=ask_single,
                                   constrained=constrained), send)


def select_goal_steps(templates: PromptTemplates, ctx: GoalContext, candidates: Sequence[GoalCandidate],
                      *, scope: str = "", ask_single: bool = False,
                      constrained: bool = False) -> Steps[SelectionOutcome]:
    """`select_goal` as a generator: yields [request] (at most twice), receives [response].
    `constrained` (--decoding grounded): the answer can only be an option's number."""
    options = presentation_order(candidates)
    if not options:
        return SelectionOutcome(None, [], "no_options")
    if len(options) == 1 and not ask_single:
        return SelectionOutcome(options[0], options, "single_option", index=1)
    outcome = SelectionOutcome(None, options)
    texts = [c.text for c in options]
    for attempt, retry in enumerate((False, True)):
        request = templates.selection_request(ctx, texts, retry=retry, scope=scope, constrained=constrained)
        answers = yield [request]
        response = answers[0] if answers else LLMResponse(text="", error="no answer")
        if not response.ok:
            outcome.answers.append(f"error: {response.error}")
            outcome.problems.append(f"request failed: {response.error}")
        else:
            outcome.answers.append(response.text)
            number, problem = parse_answer(response.text, len(options))
            if number is None and request.constraint is not None and request.constraint.stop_when_unique:
                number = option_of_sentence(response.text, texts)  # grounded_answer: sentence
                problem = problem if number is None else ""
            if number is not None:
                outcome.chosen = options[number - 1]
                outcome.index = number
                outcome.method = "llm_retry" if attempt else "llm"
                return outcome
            outcome.problems.append(problem)
        log.info("selection answer unusable (%s)%s", outcome.problems[-1],
                 "; asking once more" if not retry else "; using the highest score")
    best = highest_score(options)
    outcome.chosen = best
    outcome.index = options.index(best) + 1 if best else None
    outcome.method = "fallback_highest_score"
    return outcome
