"""LLM-State's bounded answers under `--decoding grounded`: the calls the robot can carry out, on
objects it knows, as grammars for the text after each cue (config/prompts/bounded_answers.yaml).

- Policy (after "Low-level Action Plan:"): numbered lines "N. <primitive>(<object>[, <object>])",
  one of the paper's nine primitives with its arity, every argument a name the robot has observed
  (an object or a room); at most 12 lines (`MAX_PLAN_STEPS`).
- Attention: lines `add_related_objects("<observed object>")`, at most 8.
- State estimator (after "update_"): `state("<observed object>", "<attributes>")` or
  `reasoning("<text>")`, further lines starting `update_`; at most 12.
What the model writes is still parsed and checked by the state as before.
"""
from __future__ import annotations

from typing import Iterable

from task_learning.llm.constraints import Constraint, gbnf_literal
from task_learning.llm_state.calls import PLAN_FUNCTIONS

TEXT = '[^"\\\\\\n]'
# A plan's lines: the grammar ends the plan before the bounded answer's 160 tokens do (measured:
# allowed 20 lines, the model wrote 11 and a cut twelfth, "12. open(comp", dropped by the parser;
# a line is 8-12 tokens).
MAX_PLAN_STEPS = 12


def _names(known: Iterable[str]) -> str:
    names = sorted({n for n in known if n})
    return " | ".join(gbnf_literal(n) for n in names) or gbnf_literal("none")


def policy(known: Iterable[str]) -> Constraint:
    calls = []
    for name, arity in PLAN_FUNCTIONS.items():
        args = ' ", " '.join(["obj"] * arity)
        calls.append(f'"{name}(" {args} ")"' if arity else f'"{name}()"')
    grammar = (f'root ::= step ("\\n" step){{0,{MAX_PLAN_STEPS - 1}}}\n'
               'step ::= [1-9] [0-9]? ". " call\n'
               f"call ::= {' | '.join(calls)}\n"
               f"obj ::= {_names(known)}\n")
    return Constraint(grammar=grammar)


def attention(known: Iterable[str]) -> Constraint:
    grammar = ('root ::= line ("\\n" line){0,7}\n'
               'line ::= "add_related_objects(\\"" obj "\\")"\n'
               f"obj ::= {_names(known)}\n")
    return Constraint(grammar=grammar)


def estimator(known: Iterable[str]) -> Constraint:
    grammar = ('root ::= call ("\\nupdate_" call){0,11}\n'
               'call ::= "state(\\"" obj "\\", \\"" text "\\")" | "reasoning(\\"" text "\\")"\n'
               f"text ::= {TEXT}{{1,80}}\n"
               f"obj ::= {_names(known)}\n")
    return Constraint(grammar=grammar)
