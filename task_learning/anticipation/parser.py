"""The tolerant parser of an anticipation answer.

The paper's LLM answers with a comma-separated task list on its first line, then its reasoning.
Parsing is not stated in the seed; ours: take the first line that names a task of the list (else
the first non-empty line), keep what is inside brackets if there are any, split on commas (and
semicolons), strip brackets, quotes, numbering and full stops, and match each item to the task
list, ignoring case and '-', '_', spaces, through the list's names and the explicit alias table
(config `aliases`). Nothing is guessed: an item that matches neither is reported as unknown.
Duplicates and tasks already done are dropped and reported. No text is ever executed."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from task_learning.anticipation.config import AnticipationConfig

_NUMBERING = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")
_LABEL = re.compile(r"^\s*(?:answer|output|routine|tasks?|remaining tasks)\s*:\s*", re.IGNORECASE)
_STRIP = " \t'\"`[](){}.;:!*"


@dataclass
class ParsedAnswer:
    tasks: list[str] = field(default_factory=list)  # tasks of the list, in order, new ones only
    unknown: list[str] = field(default_factory=list)  # items naming no task of the list
    duplicates: list[str] = field(default_factory=list)
    already_done: list[str] = field(default_factory=list)
    empty: bool = False  # the answer named nothing at all
    line: str = ""  # the line parsed

    def issues(self) -> dict[str, int]:
        return {"unknown_names": len(self.unknown), "duplicates": len(self.duplicates),
                "already_done": len(self.already_done), "empty_answer": int(self.empty)}


def _items(line: str) -> list[str]:
    if "[" in line and "]" in line:
        line = line[line.index("[") + 1: line.rindex("]")]
    line = _LABEL.sub("", line)
    items = []
    for raw in re.split(r"[,;]", line):
        item = _NUMBERING.sub("", raw).strip(_STRIP).strip()
        if item.lower().startswith("and "):
            item = item[4:].strip(_STRIP)
        if item:
            items.append(item)
    return items


def parse_answer(text: str, cfg: AnticipationConfig, done: list[str] | tuple[str, ...] = ()) -> ParsedAnswer:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return ParsedAnswer(empty=True)
    chosen = next((ln for ln in lines if any(cfg.task_named(i) for i in _items(ln))), lines[0])
    out = ParsedAnswer(line=chosen)
    done_set = set(done)
    for item in _items(chosen):
        task = cfg.task_named(item)
        if task is None:
            out.unknown.append(item)
        elif task in out.tasks:
            out.duplicates.append(task)
        elif task in done_set:
            out.already_done.append(task)
        else:
            out.tasks.append(task)
    out.empty = not out.tasks and not out.unknown and not out.duplicates and not out.already_done
    return out
