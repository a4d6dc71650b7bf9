"""The proposed agent's anticipation step (the task-anticipation paper): prompt -> LLM -> parse -> validate -> merge.

One call per anticipation. Everything that can go wrong with an answer is handled and counted in
`AnticipationResult.issues`: names outside the task list, an empty answer, a task twice, a task
already done, a context never seen in experience, an LLM error (then nothing is anticipated)."""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from task_learning.anticipation.config import AnticipationConfig
from task_learning.anticipation.context import DayContext
from task_learning.anticipation.experience import Experience
from task_learning.anticipation.parser import ParsedAnswer, parse_answer
from task_learning.anticipation.prompt import build_request, choose_examples
from task_learning.anticipation.validator import Validation, merge, validate
from task_learning.llm.base import LLMRequest, LLMResponse

log = logging.getLogger(__name__)


class Completer(Protocol):
    """What the anticipator needs of an LLM client (task_learning.llm.client.LLMClient)."""

    def complete(self, request: LLMRequest) -> LLMResponse: ...


@dataclass
class AnticipationResult:
    context: str
    done: list[str]
    assigned: list[str]
    answer: str
    proposed: list[str]
    kept: list[str]
    dropped: list[dict[str, str]]
    merged: list[str]
    issues: dict[str, int]
    parsed: ParsedAnswer
    validation: Validation
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""
    examples: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "done": self.done, "assigned": self.assigned,
                "proposed": self.proposed, "kept": self.kept, "dropped": self.dropped,
                "merged": self.merged, "issues": self.issues, "unknown_names": self.parsed.unknown,
                "answer": self.answer, "examples": self.examples, "error": self.error,
                "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens}}


class Anticipator:
    """One ad hoc agent's anticipation (its own random draws of examples, its own LLM answers)."""

    def __init__(self, client: Completer, cfg: AnticipationConfig, experience: Experience, *,
                 agent: str = "agent", seed: int = 0) -> None:
        self.client = client
        self.cfg = cfg
        self.experience = experience
        self.agent = agent
        self._rng = random.Random(f"{agent}:{seed}")

    def anticipate(self, ctx: DayContext, done: Sequence[str] = (), assigned: Sequence[str] = ()) -> AnticipationResult:
        examples = choose_examples(self.experience.routines, self.cfg.examples, self._rng)
        request = build_request(ctx, list(done), examples, self.cfg, agent=self.agent)
        response = self.client.complete(request)
        return self.process(ctx, response, done, assigned, request)

    def process(self, ctx: DayContext, response: LLMResponse, done: Sequence[str] = (),
                assigned: Sequence[str] = (), request: LLMRequest | None = None) -> AnticipationResult:
        """Parse, validate and merge an answer (split from `anticipate` so a recorded answer, such
        as the traces', can be checked on its own)."""
        text = response.text if response.ok else ""
        parsed = parse_answer(text, self.cfg, list(done))
        validation = validate(parsed.tasks, ctx, self.experience, self.cfg, list(done))
        issues = parsed.issues()
        issues["unseen_context"] = int(bool(validation.fallback))
        issues["llm_error"] = int(not response.ok)
        if not response.ok:
            log.warning("anticipation: the LLM gave no answer (%s): nothing anticipated", response.error)
        for name in parsed.unknown:
            log.info("anticipation: %r is not a task of the list: ignored", name)
        shown = list((request.context or {}).get("examples", [])) if request is not None else []
        return AnticipationResult(
            context=ctx.describe(self.cfg), done=list(done), assigned=list(assigned), answer=text,
            proposed=list(parsed.tasks), kept=list(validation.kept), dropped=validation.dropped_dicts(),
            merged=merge(assigned, validation.kept, done), issues=issues, parsed=parsed,
            validation=validation, prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens, error=response.error, examples=shown)
