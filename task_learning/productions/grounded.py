"""The bootstrapped productions' bounded answers under `--decoding grounded`: what the agent can
use, as grammars for the text after each cue (config/prompts/bounded_answers.yaml).

- Selection (after "[Possible Options: the one suggested]\\n*"): one of the decision's options
  that is not blacklisted, or 'done' / 'quit', as [Possible Options] lists them.
- Generalized rule (after "IF the current task is"): " <a family's task pattern> [AND <words>]
  THEN choose <effect>": the form the instructions ask for, the effect one of the rule language's
  effects, with no room for the instructions' dots.
- Rule implementation and its revisions (after '{"name": "'): a production of the rule language as
  the JSON object it is parsed from, **generated from the language's own definition**
  (`language.PREDICATES` with their arities, `language.MOTOR_FORMS`, the effect kinds) and from
  what the robot knows: the task the pattern of the decision's family, each condition a predicate
  of the table with its arity, every argument a variable of `variables()` or a kind the robot has
  perceived (a statement or a task, quoted, for the two predicates that take one; a bound kind
  where the language needs one), at most `MAX_CONDITIONS` conditions, the effect of the kind and
  verb of the option chosen (a motor action's arguments variables), as its replay must give it.
  That is the language's generic grammar (`rule_language`); a rule made for a decision is decoded
  in a narrower one, generated from the same table and the decision's state: only rules that
  replay there, each condition a literal that holds on that state, the effect the chosen option
  with its arguments variables the conditions bind to it (`replayable.py`; measured: inside the
  generic grammar every rule the model wrote was refused by its replay).
A grammar bounds the form only: what the model writes inside it is still parsed as data, replayed
on the state it was made for and revised as before (docs/llm.md); nothing of it is executed.
"""
from __future__ import annotations

import re
from typing import Sequence

from task_learning.llm.constraints import Constraint, gbnf_literal
from task_learning.productions import replayable
from task_learning.productions.knowledge import EnvKnowledge
from task_learning.productions.language import (
    DONE,
    MOTOR,
    MOTOR_FORMS,
    PREDICATES,
    QUIT,
    SUBTASK,
    Predicate,
    normalize_effect,
    task_binding,
)
from task_learning.productions.replayable import MAX_CONDITIONS

SPECIAL = ("special action: 'done'", "special action: 'quit'")
# An English word or a <variable>: letters only (measured: with digits allowed the model wrote
# "AND <object> 111111111111111111111111 1111…" to its 96 tokens, with '-' "---------------- …"),
# bounded in length and number.
WORD = "([a-zA-Z]{1,16} | variable)"
# The predicates whose argument is quoted text, not a variable or a kind: a statement the world
# knowledge is asked about ("<object> is commonly stored in a/an <kind>"), a task done earlier.
QUOTED = {"knows": "statement", "previous": "subtask"}
# The arguments language.py refuses unbound ("the kind must be bound before it is used": is's and
# nearest's kind): a kind the robot perceived or a variable the task binds, never a fresh variable
# (measured: the model wrote "is(<x>, <k>)" with <k> bound by nothing, refused at once).
BOUND_KIND = {"is": 1, "nearest": 1}
_VARIABLE = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
_SLOT = re.compile(r"\(\?P<\w+>([^()]*)\)")
_PLAIN_ALTERNATIVES = re.compile(r"^[a-z]+(\|[a-z]+)+$")


def selection(options: Sequence[str], blacklist: Sequence[str]) -> Constraint:
    banned = {b.strip().lower() for b in blacklist}
    allowed = [o for o in options if o.strip().lower() not in banned]
    return Constraint(choices=tuple(f" {line}" for line in (*allowed, *SPECIAL)))


def _alternatives(texts: Sequence[str], empty: str) -> str:
    names = sorted(dict.fromkeys(t for t in texts if t))
    return " | ".join(gbnf_literal(n) for n in names) or gbnf_literal(empty)


def variables(patterns: Sequence[str]) -> list[str]:
    """The variable names a rule may use: the families' task variables (`<object>`,
    `<receptacle>`) and the names the predicate table gives its parameters (`<x>`, `<r>`, `<t>`,
    `<k>`). Measured: with any name allowed the model wrote `<strong>`, `<em>` (HTML's)."""
    names = {v for p in patterns for v in _VARIABLE.findall(p)}
    names |= {n for p in PREDICATES.values() if p.name not in QUOTED for n in p.params or ("x", "y", "z")[:p.arity]}
    return sorted(names)


def variable_rule(patterns: Sequence[str]) -> str:
    """`variable`: one of `variables(patterns)` (measured: allowed any single letter too, the
    model wrote "<b> <i> <i> …", HTML's again)."""
    return "variable ::= " + " | ".join(gbnf_literal(f"<{n}>") for n in variables(patterns))



def kinds(env: EnvKnowledge | None) -> list[str]:
    """The kinds a rule may name as constants: the types of what the robot knows (never an
    instance's id: a production is about kinds)."""
    if env is None:
        return []
    return sorted(({r.type for r in env.receptacles.values()} | {t.type for t in env.objects.values()}) - {""})


def motor_rule(only: str = "", slot: str = "arg") -> str:
    """`motor`: the robot's verbs as language.MOTOR_FORMS defines them (`only`: the form of that
    motor action's text), each slot an `arg` (a slot of plain alternatives, "in|on", stays those
    words)."""
    forms = []
    for _, pattern in MOTOR_FORMS:
        if only and not pattern.match(only):
            continue
        parts = _SLOT.split(pattern.pattern.strip("^$"))
        pieces = []
        for i, part in enumerate(parts):
            if i % 2 == 0:
                if part:
                    pieces.append(gbnf_literal(part))
            elif _PLAIN_ALTERNATIVES.match(part):
                pieces.append("(" + " | ".join(gbnf_literal(w) for w in part.split("|")) + ")")
            else:
                pieces.append(slot)
        forms.append(" ".join(pieces))
    return "motor ::= " + " | ".join(forms)


def subtask_rule(patterns: Sequence[str]) -> str:
    """`subtask`: a family's task pattern, each of its variables an `arg` or a kind as a task
    names it ("find a/an knife": `named`, defined with the kinds)."""
    forms = []
    for pattern in patterns:
        parts = _VARIABLE.split(pattern)
        pieces = [gbnf_literal(p) if i % 2 == 0 else "named" for i, p in enumerate(parts) if p or i % 2]
        forms.append("(" + " ".join(pieces) + ")")
    return "subtask ::= " + (" | ".join(forms) or gbnf_literal("<task>"))


def effect_rules(patterns: Sequence[str], option: str = "", slot: str = "arg") -> list[str]:
    """`effect` and what it uses: language.py's four kinds of effect; with `option` (the choice
    the rule is made for: its replay must give it), that option's kind and verb only, its
    arguments still variables (measured: free to choose, the model wrote "put <x> in
    <receptacle>" for a decision whose choice was "move to StoveBurner|…"). `slot`: what a motor
    action's argument may be (a rule's: a variable, as the choice names an instance a kind never
    replays to; measured: "move to StoveBurner" for "move to StoveBurner|-00.47|…")."""
    chosen = normalize_effect(option) if option else ""
    motor = chosen[len(MOTOR):] if chosen.startswith(MOTOR) else ""
    subtask = subtask_rule(patterns)  # also what previous("…") names
    if chosen in (DONE, QUIT):
        return [f"effect ::= {gbnf_literal(chosen)}", subtask]
    if chosen.startswith(SUBTASK):
        return [f"effect ::= {gbnf_literal(SUBTASK)} subtask", subtask]
    if motor and motor_rule(motor) != "motor ::= ":
        return [f"effect ::= {gbnf_literal(MOTOR)} motor", motor_rule(motor, slot), subtask]
    return [f"effect ::= {gbnf_literal(MOTOR)} motor | {gbnf_literal(SUBTASK)} subtask | "
            f"{gbnf_literal(DONE)} | {gbnf_literal(QUIT)}",
            motor_rule("", slot), subtask]


def predicate_form(predicate: Predicate) -> str:
    """One predicate as the JSON string's text the model writes: `name(arg, ...)`; a quoted
    argument is `\\"...\\"` inside the JSON string."""
    if predicate.arity == 0:
        return gbnf_literal(f"{predicate.name}()")
    if predicate.name in QUOTED:
        return f'{gbnf_literal(predicate.name + "(" + chr(92) + chr(34))} {QUOTED[predicate.name]} ' \
               f'{gbnf_literal(chr(92) + chr(34) + ")")}'
    args = ' ", " '.join("boundkind" if BOUND_KIND.get(predicate.name) == i else "arg"
                         for i in range(predicate.arity))
    return f'{gbnf_literal(predicate.name + "(")} {args} {gbnf_literal(")")}'


def rule_language(patterns: Sequence[str], env: EnvKnowledge | None = None,
                  subtasks: Sequence[str] | None = None, option: str = "") -> str:
    """The GBNF of a production's JSON object after its cue ('{"name": "'), generated from the
    rule language's definition and the robot's knowledge (module docstring): the rule's task one
    of `patterns` (the decision's family), a subtask effect one of `subtasks` (every family;
    `patterns` when not given), the effect of `option`'s kind and verb when given. What a rule
    made for a decision is decoded in is `replayable.rule_grammar` (`structured_rule`)."""
    subtasks = list(patterns if subtasks is None else subtasks)
    task_variables = sorted({v for p in patterns for v in _VARIABLE.findall(p)})
    effect_variables = variables([*patterns, *subtasks])
    q = '\\"'  # a quote inside the JSON text, as GBNF reads it
    return "\n".join([
        f'root ::= name "{q}, {q}task{q}: {q}" task "{q}, {q}conditions{q}: [" conditions '
        f'"], {q}effect{q}: {q}" effect "{q}}}"',
        "name ::= [a-z0-9] [a-z0-9-]{0,39}",
        f"task ::= {_alternatives(patterns, '<task>')}",
        f'conditions ::= (condition (", " condition){{0,{MAX_CONDITIONS - 1}}})?',
        f'condition ::= "{q}" ("not ")? predicate "{q}"',
        "predicate ::= " + " | ".join(predicate_form(p) for p in PREDICATES.values()),
        "arg ::= variable | kind",
        "boundkind ::= kind" + "".join(f" | {gbnf_literal(f'<{v}>')}" for v in task_variables),
        variable_rule([*patterns, *subtasks]),
        f"kind ::= {_alternatives(kinds(env), 'Object')}",
        f"named ::= arg | {_alternatives([k.lower() for k in kinds(env)], 'object')}",
        'statement ::= ([a-zA-Z/ ] | variable){1,80}',
        "effectvariable ::= " + " | ".join(gbnf_literal(f"<{n}>") for n in effect_variables),
        *effect_rules(subtasks, option, "effectvariable"),
    ]) + "\n"


def english_rule(patterns: Sequence[str], subtasks: Sequence[str] | None = None, option: str = "") -> Constraint:
    """The generalized rule's one line after "IF the current task is": a family's pattern, its
    conditions in words, and one of the rule language's effects (its arguments a variable or a
    word: an id's dots are the instructions' dots' room)."""
    grammar = "\n".join([
        'root ::= " " task (" AND " words){0,3} " THEN choose " effect',
        f"task ::= {_alternatives(patterns, '<task>')}",
        f'words ::= {WORD} (" " {WORD}){{0,7}}',
        f"arg ::= {WORD}",
        "named ::= arg",
        variable_rule([*patterns, *(subtasks or ())]),
        *effect_rules(patterns if subtasks is None else subtasks, option),
    ]) + "\n"
    return Constraint(grammar=grammar)


def structured_rule(patterns: Sequence[str], env: EnvKnowledge | None = None,
                    subtasks: Sequence[str] | None = None, option: str = "", task: str = "") -> Constraint | None:
    """The rule's grammar: for a decision (its `task`, state `env` and chosen `option` given),
    only the rules that replay on that state (`replayable`; None when no rule of the language
    gives the option there); otherwise the language's generic grammar (`rule_language`)."""
    subtasks = list(patterns if subtasks is None else subtasks)
    own = [p for p in patterns if task_binding(p, task) is not None] if task else []
    if env is not None and option and own:
        grammar = replayable.rule_grammar(replayable.Choice(own[0], task, env, option), subtasks)
        return None if grammar is None else Constraint(grammar=grammar)
    return Constraint(grammar=rule_language(patterns, env, subtasks, option))
