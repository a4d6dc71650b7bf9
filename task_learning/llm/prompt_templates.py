"""Prompt text quoted from a paper, kept in config/ YAML with `{slot}` places for what changes.

The task-anticipation and LLM-State papers print their prompts in full; `--prompts paper` sends those words verbatim
(config/anticipation/paper_prompts.yaml, config/llm_state/paper_prompts.yaml) while the project's
own wording stays the default. A template here is the paper's fixed text with `{name}` slots; a
slot is filled by plain substitution, once, so a value is never read again as a template (an
object name holding braces stays text). Every slot a template uses must be one its prompt knows,
checked on load with the file and key named.

`PROMPT_WORDINGS` are the two choices every command with `--prompts` offers.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping

from pydantic import AfterValidator

from task_learning.inputs.schema import invalid

PROMPT_WORDINGS = ("own", "paper")
_SLOT = re.compile(r"\{([a-z_]+)\}")


def check_wording(name: str) -> str:
    if name not in PROMPT_WORDINGS:
        raise ValueError(f"prompts: expected one of {', '.join(PROMPT_WORDINGS)}, got {name!r}")
    return name


def slots(names: Iterable[str]) -> AfterValidator:
    """For a schema field holding a template: every {slot} it uses is one of `names`."""
    allowed = set(names)

    def check(text: str) -> str:
        unknown = sorted(set(_SLOT.findall(text)) - allowed)
        if unknown:
            raise invalid(f"unknown slot(s) {', '.join('{' + u + '}' for u in unknown)} "
                          f"(known: {', '.join('{' + s + '}' for s in sorted(allowed))})")
        return text

    return AfterValidator(check)


def fill(text: str, values: Mapping[str, str | None]) -> str:
    """The template with each slot replaced by its value. A slot whose value is None takes its
    whole line with it, and the blank lines right after (a part this prompt does not have)."""
    lines: list[str] = []
    skip_blank = False
    for line in text.split("\n"):
        names = _SLOT.findall(line)
        if any(values.get(n, "") is None for n in names):
            skip_blank = True
            continue
        if skip_blank and not line.strip():
            continue
        skip_blank = False
        lines.append(_SLOT.sub(lambda m: str(values.get(m.group(1), m.group(0))), line))
    return "\n".join(lines)


def drop_block(text: str, title: str) -> str:
    """`text` without its banner block "******** <title> start ********" ... "... end ********"
    and the blank lines after it (the w/o States baseline's policy prompt has no state block)."""
    start, end = f"******** {title} start ********", f"******** {title} end ********"
    lines = text.split("\n")
    if start not in lines or end not in lines:
        return text
    i, j = lines.index(start), lines.index(end)
    k = j + 1
    while k < len(lines) and not lines[k].strip():
        k += 1
    return "\n".join(lines[:i] + lines[k:])
