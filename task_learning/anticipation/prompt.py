"""The anticipation prompt, with the paper's parts in the paper's order (the task-anticipation paper, Example 01):

1. the role and the job (anticipate the rest of the day from earlier days, only with tasks of the
   list, like the examples);
2. `Task List: [...]`;
3. `Example1:`, `Example2:`: routines drawn at random from experience, each as the query would be
   asked, then the routine in brackets and its explanation;
4. the query: "Complete the following routine on a <context>: [<tasks done>]".

The wording is ours by default; with `cfg.wording == "paper"` (`--prompts paper`) it is Example
01's own (paper_prompts.py). The structured facts travel in `LLMRequest.context` (real endpoints
never see it; the offline model reads it instead of parsing the text), the same under both."""
from __future__ import annotations

import random
from typing import Sequence

from task_learning.anticipation import paper_prompts
from task_learning.anticipation.config import AnticipationConfig
from task_learning.anticipation.context import DayContext
from task_learning.kb.store import StoredRoutine
from task_learning.llm.base import NEXT_TURN, LLMRequest

PROMPT_TYPE = "anticipation"
# The answer (the tasks, then why) ends where the next few-shot item would begin: a model that does
# not stop by itself goes on to invent "Example3: ..." or another "Complete the following routine ...",
# so both are stop sequences, under either wording, and so is its next turn (docs/llm.md)
STOP = ("\nExample", "\nComplete the following routine", NEXT_TURN)

SYSTEM = (
    "You are a household assistant. From what the household did on earlier days, anticipate the "
    "tasks still to come today. You get the list of tasks that can be done in this home, the day "
    "and what the human is doing, examples of partly completed routines with the expected output, "
    "and today's partly completed routine. Complete today's routine using only tasks from the task "
    "list, as in the examples: first the remaining tasks on one line, separated by commas, then "
    "why."
)


def query_line(ctx_text: str, done: Sequence[str]) -> str:
    return f"Complete the following routine on a {ctx_text}: [{', '.join(done)}]"


def choose_examples(routines: Sequence[StoredRoutine], count: int, rng: random.Random) -> list[StoredRoutine]:
    """`count` routines drawn at random (without replacement) from experience."""
    pool = list(routines)
    return rng.sample(pool, min(count, len(pool)))


def build_request(ctx: DayContext, done: Sequence[str], examples: Sequence[StoredRoutine],
                  cfg: AnticipationConfig, *, agent: str = "agent", temperature: float | None = None) -> LLMRequest:
    parts = [f"Task List: [{', '.join(cfg.tasks)}]"]
    shown = []
    for i, ex in enumerate(examples, 1):
        ex_ctx = DayContext(ex.day, frozenset(ex.facts))
        said = ex_ctx.describe(cfg)
        parts.append(f"Example{i}: {query_line(said, ())}\n[{', '.join(ex.tasks)}] {ex.explanation}".rstrip())
        shown.append({"context": said, "tasks": list(ex.tasks)})
    said_now = ctx.describe(cfg)
    parts.append(query_line(said_now, done))
    messages: tuple[tuple[str, str], ...] = (("system", SYSTEM), ("user", "\n\n".join(parts)))
    if cfg.wording == "paper":
        messages = paper_prompts.anticipation_messages(
            cfg, [(str(s["context"]), ex) for s, ex in zip(shown, examples)], said_now, done)
    return LLMRequest(
        prompt_type=PROMPT_TYPE,
        messages=messages,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature if temperature is None else temperature,
        stop=STOP,
        context={"day": ctx.day, "facts": sorted(ctx.facts), "context": said_now, "done": list(done),
                 "tasks": list(cfg.tasks), "examples": shown, "agent": agent},
        scope=f"anticipation:{agent}",
    )
