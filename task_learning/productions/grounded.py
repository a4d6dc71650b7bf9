"""The bootstrapped productions' bounded answers under `--decoding grounded`: what the agent can
use, as grammars for the text after each cue (config/prompts/bounded_answers.yaml).

- Selection (after "[Possible Options: the one suggested]\\n*"): one of the decision's options
  that is not blacklisted, or 'done' / 'quit', as [Possible Options] lists them.
- Generalized rule (after "IF the current task is"): " <a family's task pattern> [AND <words>]
  THEN choose <words>": the form the instructions ask for, with a task pattern the agent knows and
  no room for the instructions' dots (the words are letters, digits, <, >, /, ', _, |, : and -).
- Rule implementation and its revisions (after '{"name": "'): the rule language's JSON object,
  its four fields in order, the task one of the families' patterns, at most five conditions.
What the model writes inside them is still parsed, replayed and revised as before.
"""
from __future__ import annotations

from typing import Sequence

from task_learning.llm.constraints import Constraint, gbnf_literal

SPECIAL = ("special action: 'done'", "special action: 'quit'")
WORD = "[a-zA-Z0-9<>/'_|:-]+"
TEXT = '[^"\\\\\\n]'  # a JSON string's characters without escapes or new lines


def selection(options: Sequence[str], blacklist: Sequence[str]) -> Constraint:
    banned = {b.strip().lower() for b in blacklist}
    allowed = [o for o in options if o.strip().lower() not in banned]
    return Constraint(choices=tuple(f" {line}" for line in (*allowed, *SPECIAL)))


def english_rule(patterns: Sequence[str]) -> Constraint:
    tasks = " | ".join(gbnf_literal(p) for p in patterns) or gbnf_literal("<task>")
    grammar = (f'root ::= " " task (" AND " words)? " THEN choose " words\n'
               f"task ::= {tasks}\n"
               f'words ::= {WORD} (" " {WORD}){{0,14}}\n')
    return Constraint(grammar=grammar)


def structured_rule(patterns: Sequence[str]) -> Constraint:
    tasks = " | ".join(gbnf_literal(p) for p in patterns) or gbnf_literal("<task>")
    grammar = ('root ::= name "\\", \\"task\\": \\"" task "\\", \\"conditions\\": [" conditions '
               '"], \\"effect\\": " string "}"\n'
               "name ::= [a-zA-Z0-9_.-]{1,40}\n"
               f"task ::= {tasks}\n"
               'conditions ::= (string (", " string){0,4})?\n'
               f'string ::= "\\"" {TEXT}{{1,80}} "\\""\n')
    return Constraint(grammar=grammar)
