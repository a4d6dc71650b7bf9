"""The task-anticipation paper's prompts in the traces' own words (`--prompts paper`): Execution Examples 01 and 03.

The fixed text lives in config/anticipation/paper_prompts.yaml, quoted exactly; this module fills
its slots (the task list, the drawn examples, the day, the world state, the goal) and returns chat
messages: the first paragraph of each printed prompt as the system message ("a pre-defined system
message", Example 01; "a system message", Example 03), the rest as the user message. The
structured context the offline stand-in reads is the caller's, unchanged: both wordings show the
same facts (the paper's explanation of a drawn example is text, not a fact).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Sequence

from task_learning.inputs.config import config_path
from task_learning.inputs.schema import Schema, load_model
from task_learning.llm.prompt_templates import fill, slots

if TYPE_CHECKING:
    from task_learning.anticipation.config import AnticipationConfig
    from task_learning.kb.store import StoredRoutine


@dataclass(frozen=True)
class PaperPrompts:
    source: str
    anticipation_system: str
    anticipation_user: str
    anticipation_example: str
    explanations: tuple[tuple[str, tuple[str, ...], str], ...]  # (context text, tasks, explanation)
    base8_system: str
    base8_user: str
    adjacency_separator: str

    def explanation_for(self, routine: StoredRoutine, cfg: AnticipationConfig) -> str:
        """The paper's explanation of this day if the traces print it, else the routine's own."""
        from task_learning.anticipation.context import parse_context

        for text, tasks, explanation in self.explanations:
            ctx = parse_context(text, cfg)
            if (ctx.day, tuple(sorted(ctx.facts)), tasks) == (routine.day, tuple(sorted(routine.facts)),
                                                              tuple(routine.tasks)):
                return explanation
        return routine.explanation


def default_path() -> Path:
    return config_path("anticipation", "paper_prompts.yaml")


class ExplanationDoc(Schema):
    context: str
    tasks: list[str]
    explanation: str


class PaperPromptsDoc(Schema):
    """paper_prompts.yaml: the templates with the slots each may use."""

    anticipation_system: Annotated[str, slots(())]
    anticipation_user: Annotated[str, slots(("tasks", "examples", "context", "done"))]
    anticipation_example: Annotated[str, slots(("number", "context", "tasks", "explanation"))]
    explanations: list[ExplanationDoc]
    base8_system: Annotated[str, slots(())]
    base8_user: Annotated[str, slots(("adjacency", "state", "previous", "goal_name", "goal", "context"))]
    adjacency_separator: str


@functools.lru_cache(maxsize=4)
def load_paper_prompts(path: str | None = None) -> PaperPrompts:
    """Read and check the file (cached: it is read once per process)."""
    file = Path(path) if path else default_path()
    doc = load_model(PaperPromptsDoc, file)
    return PaperPrompts(
        source=str(file),
        anticipation_system=doc.anticipation_system,
        anticipation_user=doc.anticipation_user,
        anticipation_example=doc.anticipation_example,
        explanations=tuple((e.context, tuple(e.tasks), e.explanation) for e in doc.explanations),
        base8_system=doc.base8_system,
        base8_user=doc.base8_user,
        adjacency_separator=doc.adjacency_separator,
    )


def anticipation_messages(cfg: AnticipationConfig, examples: Sequence[tuple[str, StoredRoutine]], context: str,
                          done: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Example 01's prompt; `examples`: (the example's context as said, its routine)."""
    prompts = load_paper_prompts()
    shown = [fill(prompts.anticipation_example, {"number": str(i), "context": said, "tasks": ", ".join(ex.tasks),
                                                 "explanation": prompts.explanation_for(ex, cfg)}).rstrip()
             for i, (said, ex) in enumerate(examples, 1)]
    user = fill(prompts.anticipation_user, {"tasks": ", ".join(cfg.tasks), "examples": "\n\n".join(shown) or None,
                                            "context": context, "done": ", ".join(done)})
    return (("system", prompts.anticipation_system), ("user", user))


def base8_messages(adjacency: Sequence[str], state: str, previous: str | None, goal_name: str, goal: str,
                   context: str) -> tuple[tuple[str, str], ...]:
    """Example 03's prompt; `previous` None (nothing done yet) leaves its line out."""
    prompts = load_paper_prompts()
    user = fill(prompts.base8_user, {"adjacency": prompts.adjacency_separator.join(adjacency), "state": state,
                                     "previous": previous, "goal_name": goal_name, "goal": goal,
                                     "context": context})
    return (("system", prompts.base8_system), ("user", user))

