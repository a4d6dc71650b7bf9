"""The production rule language: rules as data, never as code (the bootstrapped-productions paper, made safe).

The paper loads LLM-written Python classes. A robot must not execute generated code, so a
production here is plain data: a target task pattern, a list of conditions over the robot's
knowledge and a single effect. An LLM writes it as JSON; it is parsed with `json.loads`,
validated against the predicate table below (unknown predicate, wrong arity, an effect variable
nothing binds: refused with the field named) and interpreted by `match`, which only calls the
fixed predicate functions of this module.

Syntax (SOAR style, variables in angle brackets):

    {"name": "slice-put-object-on-countertop",
     "task": "slice a/an <object>",
     "conditions": ["holding(<held>)", "is(<held>, <object>)",
                    "not at_type(CounterTop)", "nearest(<countertop>, CounterTop)"],
     "effect": "motor action: put <held> on <countertop>"}

A condition is `[not] predicate(arg, ...)`; an argument is a variable `<name>`, a bare constant
(`CounterTop`) or a quoted string (`"<object> is commonly stored in a/an <kind>"`, whose
variables are filled in before the statement is looked up). Conditions are tried in order; a
positive one may bind unbound variables (all solutions are enumerated nearest first, then by
name); a negated one holds when no way to satisfy it extends the bindings so far. The task
pattern binds its variables from the task text. The effect is one of
`motor action: <verb ...>`, `attend to subtask: <task>`, `special action: done` or `quit`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from task_learning.errors import TaskLearningError
from task_learning.productions.knowledge import EnvKnowledge, UnknownStatement, WorldKnowledge, name_equal

_VAR = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
_CONDITION = re.compile(r"^\s*(not\s+)?([a-z_]+)\s*\((.*)\)\s*$", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}$")
MAX_CONDITIONS = 16
MAX_TEXT = 400
MAX_TASK_VARIABLES = 4
# Bindings tried while matching one rule (each solution a predicate yields counts one): a rule of
# sixteen conditions over a kitchen's hundred objects could otherwise enumerate 100**16 of them.
# The families' rules stay below a few thousand; a rule that needs more is not applicable.
MAX_MATCH_STEPS = 50_000

# motor verbs and the argument slots of each (the robot's built-in actions, the bootstrapped-productions paper Figure 4)
MOTOR_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("move to", re.compile(r"^move to (?P<target>\S.*)$")),
    ("open", re.compile(r"^open (?P<target>\S.*)$")),
    ("close", re.compile(r"^close (?P<target>\S.*)$")),
    ("pick up", re.compile(r"^pick up (?P<object>\S.*)$")),
    ("put", re.compile(r"^put (?P<object>\S+) (?P<relation>in|on) (?P<target>\S.*)$")),
    ("slice", re.compile(r"^slice (?P<object>\S.*)$")),
)
MOTOR = "motor action: "
SUBTASK = "attend to subtask: "
SPECIAL = "special action: "
DONE = "special action: done"
QUIT = "special action: quit"


class RuleError(TaskLearningError):
    """A production is malformed: names the rule and the field."""


@dataclass(frozen=True)
class Term:
    """A variable (`var` True, `text` its name without brackets) or a constant text (which may
    hold `<var>` placeholders when it is a quoted statement)."""

    text: str
    var: bool = False

    def variables(self) -> set[str]:
        return {self.text} if self.var else set(_VAR.findall(self.text))

    def __str__(self) -> str:
        if self.var:
            return f"<{self.text}>"
        return json.dumps(self.text) if (" " in self.text or "<" in self.text) else self.text


@dataclass(frozen=True)
class Condition:
    """`[not] pred(args)`, or (pred "none") a group that holds when its conjunction has no
    solution extending the bindings so far."""

    pred: str
    args: tuple[Term, ...]
    negated: bool = False
    group: tuple["Condition", ...] = ()

    def __str__(self) -> str:
        if self.pred == "none":
            return "none(" + "; ".join(str(c) for c in self.group) + ")"
        return ("not " if self.negated else "") + f"{self.pred}({', '.join(str(a) for a in self.args)})"

    def to_data(self) -> Any:
        if self.pred == "none":
            return {"none": [c.to_data() for c in self.group]}
        return str(self)


Binding = dict[str, str]


@dataclass
class MatchContext:
    """What a precondition may read: the current task, the robot's environment knowledge, the
    world knowledge (statements), and nothing else."""

    task: str
    env: EnvKnowledge
    world: WorldKnowledge


Solver = Callable[[list[Term], Binding, MatchContext], Iterator[Binding]]


@dataclass(frozen=True)
class Predicate:
    """One predicate of the rule language. `params` names its arguments in the prompt's signature
    as its `doc` names them (a model reads "at(<r>): the robot is in front of receptacle <r>")."""

    name: str
    arity: int
    doc: str
    solve: Solver
    params: tuple[str, ...] = ()

    def signature(self) -> str:
        names = self.params or tuple("xyz"[:self.arity])
        return f"{self.name}({', '.join('<' + n + '>' for n in names)})"


def _value(term: Term, binding: Binding) -> str | None:
    if term.var:
        return binding.get(term.text)
    return _VAR.sub(lambda m: binding.get(m.group(1), m.group(0)), term.text)


def _bind(term: Term, value: str, binding: Binding) -> Binding | None:
    """The binding extended with term=value, or None when term already differs."""
    have = _value(term, binding)
    if have is None:
        out = dict(binding)
        out[term.text] = value
        return out
    return binding if have == value or name_equal(have, value) else None


def _unary(candidates: Callable[[MatchContext], list[str]]) -> Solver:
    def solve(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
        for name in candidates(ctx):
            extended = _bind(args[0], name, binding)
            if extended is not None:
                yield extended
    return solve


def _holding(ctx: MatchContext) -> list[str]:
    return list(ctx.env.held)


def _at(ctx: MatchContext) -> list[str]:
    return [ctx.env.location] if ctx.env.location else []


def _gripper_empty(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    if not ctx.env.held:
        yield binding


def _at_type(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    kind = _value(args[0], binding)
    place = ctx.env.receptacles.get(ctx.env.location)
    if kind is None:
        if place is not None:
            extended = _bind(args[0], place.type, binding)
            if extended is not None:
                yield extended
        return
    if place is not None and name_equal(place.type, kind):
        yield binding


def _is(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    """is(<x>, kind): x's type or its name equals kind; enumerates x when unbound."""
    kind = _value(args[1], binding)
    if kind is None:
        raise RuleError(f"is({args[0]}, {args[1]}): the kind must be bound before it is used")
    for name in ctx.env.entity_names():
        if ctx.env.kind_matches(name, kind):
            extended = _bind(args[0], name, binding)
            if extended is not None:
                yield extended


def _type_of(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    for name in ctx.env.entity_names():
        extended = _bind(args[0], name, binding)
        if extended is None:
            continue
        extended2 = _bind(args[1], ctx.env.type_of(name), extended)
        if extended2 is not None:
            yield extended2


def _located(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    """located(<x>, <r>): x is known to be in/on receptacle r."""
    for name in ctx.env.object_names():
        where = ctx.env.objects[name].location
        if not where or where not in ctx.env.receptacles:
            continue
        extended = _bind(args[0], name, binding)
        if extended is None:
            continue
        extended2 = _bind(args[1], where, extended)
        if extended2 is not None:
            yield extended2


def _nearest(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    """nearest(<r>, kind): r is the nearest receptacle of that kind (none: no solution)."""
    kind = _value(args[1], binding)
    if kind is None:
        raise RuleError(f"nearest({args[0]}, {args[1]}): the kind must be bound before it is used")
    found = [n for n in ctx.env.receptacle_names() if ctx.env.kind_matches(n, kind)]
    if found:
        extended = _bind(args[0], found[0], binding)
        if extended is not None:
            yield extended


def _knows(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    """knows("statement"): the world knowledge holds it true (unknown: asks the oracle once)."""
    statement = _value(args[0], binding) or ""
    if _VAR.search(statement):
        raise RuleError(f"knows({args[0]}): variables {', '.join(_VAR.findall(statement))} are not bound")
    if ctx.world.truth(statement, ctx.env):
        yield binding


def _kind(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    """kind(<x>, <k>): the kind a task's object names (a type name as it is; an AI2-THOR id
    'Apple|+00.1|...' names its type), so a statement can be about kinds only."""
    named = _value(args[0], binding)
    if named is None:
        raise RuleError(f"kind({args[0]}, {args[1]}): the first argument must be bound before it is used")
    kind = named.split("|", 1)[0].strip() if "|" in named else named.strip()
    extended = _bind(args[1], kind, binding)
    if extended is not None:
        yield extended


def _previous(args: list[Term], binding: Binding, ctx: MatchContext) -> Iterator[Binding]:
    """previous("task"): that task was finished with done earlier."""
    task = _value(args[0], binding) or ""
    if any(name_equal(t, task) and ok for t, ok in ctx.env.previous_tasks.items()):
        yield binding


def _flag(test: Callable[[EnvKnowledge, str], bool], pool: Callable[[EnvKnowledge], list[str]]) -> Solver:
    return _unary(lambda ctx: [n for n in pool(ctx.env) if test(ctx.env, n)])


PREDICATES: dict[str, Predicate] = {p.name: p for p in (
    Predicate("holding", 1, "the gripper holds <x>", _unary(_holding)),
    Predicate("gripper_empty", 0, "the gripper holds nothing", _gripper_empty),
    Predicate("at", 1, "the robot is in front of receptacle <r>", _unary(_at), ("r",)),
    Predicate("at_type", 1, "the robot is in front of a receptacle of type <t>", _at_type, ("t",)),
    Predicate("is", 2, "<x>'s type or name is the kind <k> (e.g. is(<x>, Knife), is(<x>, <object>))", _is, ("x", "k")),
    Predicate("type_of", 2, "binds <t> to <x>'s type", _type_of, ("x", "t")),
    Predicate("located", 2, "object <x> is known to be in/on receptacle <r>", _located, ("x", "r")),
    Predicate("receptacle", 1, "<r> is a receptacle the robot knows", _unary(lambda c: c.env.receptacle_names()), ("r",)),
    Predicate("object", 1, "<x> is an object the robot has seen", _unary(lambda c: c.env.object_names())),
    Predicate("explored", 1, "receptacle <r> has been explored",
              _flag(lambda e, n: e.receptacles[n].explored, EnvKnowledge.receptacle_names), ("r",)),
    Predicate("empty", 1, "receptacle <r> has been explored and holds nothing",
              _flag(lambda e, n: e.receptacles[n].explored and not e.contents(n), EnvKnowledge.receptacle_names), ("r",)),
    Predicate("openable", 1, "receptacle <r> can be opened",
              _flag(lambda e, n: e.receptacles[n].openable, EnvKnowledge.receptacle_names), ("r",)),
    Predicate("closed", 1, "receptacle <r> can be opened and is closed",
              _flag(lambda e, n: e.receptacles[n].openable and not e.receptacles[n].is_open,
                    EnvKnowledge.receptacle_names), ("r",)),
    Predicate("pickupable", 1, "object <x> can be picked up",
              _flag(lambda e, n: e.objects[n].pickupable, EnvKnowledge.object_names)),
    Predicate("sliceable", 1, "object <x> can be sliced",
              _flag(lambda e, n: e.objects[n].sliceable, EnvKnowledge.object_names)),
    Predicate("sliced", 1, "object <x> is sliced",
              _flag(lambda e, n: e.objects[n].sliced, EnvKnowledge.object_names)),
    Predicate("nearest", 2, "<r> is the nearest receptacle of the kind <k>", _nearest, ("r", "k")),
    Predicate("knows", 1, 'the world knowledge says the statement <s> is true (e.g. "<object> is commonly '
                          'stored in a/an <kind>"); statements about types only, never about one object', _knows,
              ("s",)),
    Predicate("kind", 2, "binds <k> to the kind <x> names (a type, or an object id's type)", _kind, ("x", "k")),
    Predicate("previous", 1, "the task <task> was done earlier in this episode", _previous, ("task",)),
)}


@dataclass
class Production:
    """One rule with its learned utility U and application count N (the bootstrapped-productions paper, Eq. 1)."""

    name: str
    task: str
    conditions: tuple[Condition, ...]
    effect: str
    english: str = ""
    utility: float = 0.0
    count: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task,
                "conditions": [c.to_data() for c in self.conditions], "effect": self.effect}

    def describe(self) -> str:
        conds = " AND ".join(str(c) for c in self.conditions) or "true"
        return f"IF task is {self.task!r} AND {conds} THEN {self.effect}"


def variables_in(text: str) -> list[str]:
    """The variables of a task pattern or an effect, in order ("pick and place a/an <object>
    in/on a/an <receptacle>" -> ["object", "receptacle"])."""
    return _VAR.findall(text)


def _fold(text: str) -> str:
    """Case-folded with one character per character (the positions of `text` stay valid)."""
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def task_binding(pattern: str, task: str) -> Binding | None:
    """The task pattern's variables as the task text binds them, or None when it does not match.

    Each variable takes one or more characters (case-insensitive literals between them), the
    earlier variables as few as still let the rest match: what a lazy regular expression
    would give, computed without backtracking, so the time grows with the pattern's size times
    the task's length, never exponentially (a hostile pattern of nine variables kept a regular
    expression matching for minutes)."""
    parts = _VAR.split(pattern)
    names, literals = parts[1::2], [_fold(p) for p in parts[0::2]]
    text = task.strip()
    if "\n" in text or "\r" in text:
        return None
    folded = _fold(text)
    n = len(folded)
    if not folded.startswith(literals[0]):
        return None
    if not names:
        return {} if n == len(literals[0]) else None
    # ends[i][q]: variable i may end at q (its literal follows there and the rest matches);
    # filled from the last variable back, each with a running "some end at or after q" flag.
    k = len(names)
    can_start = [False] * (n + 2)  # the rest after variable i+1 can start here (for i = k-1: the end)
    can_start[n] = True
    ends: list[list[bool]] = [[]] * k
    for i in range(k - 1, -1, -1):
        literal = literals[i + 1]
        end_here = [False] * (n + 1)
        for q in range(n + 1):
            after = q + len(literal)
            end_here[q] = after <= n and can_start[after] and folded.startswith(literal, q)
        ends[i] = end_here
        later = [False] * (n + 2)  # some q > p with end_here[q]
        for p in range(n - 1, -1, -1):
            later[p] = later[p + 1] or end_here[p + 1]
        can_start = later
    if not can_start[len(literals[0])]:
        return None
    binding: Binding = {}
    start = len(literals[0])
    for i, name in enumerate(names):
        q = next(q for q in range(start + 1, n + 1) if ends[i][q])
        binding[name] = text[start:q].strip()
        start = q + len(literals[i + 1])
    return binding


# ------------------------------------------------------------------------------------ parsing

def parse_condition(text: Any, where: str, *, nested: bool = False) -> Condition:
    if isinstance(text, Mapping) and not nested:
        if set(text) != {"none"} or not isinstance(text["none"], list) or not text["none"]:
            raise RuleError(f"{where}: a condition object must be {{\"none\": [conditions...]}}")
        if len(text["none"]) > MAX_CONDITIONS:
            raise RuleError(f"{where}.none: at most {MAX_CONDITIONS} conditions")
        group = tuple(parse_condition(c, f"{where}.none[{i}]", nested=True) for i, c in enumerate(text["none"]))
        return Condition("none", (), False, group)
    if not isinstance(text, str):
        also = "" if nested else ' or {"none": [...]}'
        raise RuleError(f"{where}: a condition is a string like 'holding(<x>)'{also}, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise RuleError(f"{where}: condition longer than {MAX_TEXT} characters")
    found = _CONDITION.match(text)
    if not found:
        raise RuleError(f"{where}: cannot read condition {text!r} (expected '[not] predicate(arg, ...)')")
    negated, pred, raw_args = bool(found.group(1)), found.group(2), found.group(3)
    if pred not in PREDICATES:
        raise RuleError(f"{where}: unknown predicate {pred!r} (known: {', '.join(sorted(PREDICATES))})")
    args = _split_args(raw_args, where)
    if len(args) != PREDICATES[pred].arity:
        raise RuleError(f"{where}: {pred} takes {PREDICATES[pred].arity} argument(s), got {len(args)}")
    return Condition(pred, tuple(args), negated)


def _split_args(raw: str, where: str) -> list[Term]:
    args: list[Term] = []
    rest = raw.strip()
    while rest:
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                raise RuleError(f"{where}: unterminated quoted argument")
            args.append(Term(rest[1:end]))
            rest = rest[end + 1:].strip()
        else:
            token, _, _ = rest.partition(",")
            token = token.strip()
            rest = rest[len(rest.partition(",")[0]):]
            var = re.fullmatch(r"<([A-Za-z_][A-Za-z0-9_]*)>", token)
            if var:
                args.append(Term(var.group(1), var=True))
            elif re.fullmatch(r"[A-Za-z0-9_.|+\-]+", token):
                args.append(Term(token))
            else:
                raise RuleError(f"{where}: bad argument {token!r} (a <variable>, a word or a \"quoted text\")")
            rest = rest.strip()
        if rest.startswith(","):
            rest = rest[1:].strip()
            if not rest:
                raise RuleError(f"{where}: trailing comma")
        elif rest:
            raise RuleError(f"{where}: expected ',' between arguments near {rest[:20]!r}")
    return args


def validate_effect(effect: Any, where: str) -> str:
    if not isinstance(effect, str) or not effect.strip():
        raise RuleError(f"{where}: the effect must be a non-empty string")
    text = normalize_effect(effect)
    if len(text) > MAX_TEXT:
        raise RuleError(f"{where}: effect longer than {MAX_TEXT} characters")
    if text in (DONE, QUIT):
        return text
    if text.startswith(SUBTASK):
        if not text[len(SUBTASK):].strip():
            raise RuleError(f"{where}: 'attend to subtask:' needs a task")
        return text
    if text.startswith(MOTOR):
        if motor_form(text[len(MOTOR):]) is None:
            raise RuleError(f"{where}: unknown motor action {text[len(MOTOR):]!r} (known: "
                            f"{', '.join(v for v, _ in MOTOR_FORMS)})")
        return text
    raise RuleError(f"{where}: the effect must start with 'motor action:', 'attend to subtask:' or be "
                    f"'special action: done' / 'special action: quit', got {text!r}")


def normalize_effect(effect: str) -> str:
    """'special action: 'done'' and spacing variants -> canonical text."""
    text = " ".join(effect.strip().strip('"').split())
    low = text.lower()
    for kind in (MOTOR, SUBTASK, SPECIAL):
        if low.startswith(kind):
            text = kind + text[len(kind):].strip()
            break
    if text.lower().startswith(SPECIAL):
        word = text[len(SPECIAL):].strip().strip("'\"").lower()
        return SPECIAL + word
    return text


def option_key(option: str) -> str:
    """The comparable form of an option: canonical, case-folded, `put X in Y` == `put X on Y`."""
    text = normalize_effect(option).lower()
    return re.sub(r"^(motor action: put \S+) (?:in|on) ", r"\1 in/on ", text)


def same_option(a: str, b: str) -> bool:
    return option_key(a) == option_key(b)


def motor_form(text: str) -> tuple[str, dict[str, str]] | None:
    for verb, pattern in MOTOR_FORMS:
        found = pattern.match(text.strip())
        if found:
            return verb, found.groupdict()
    return None


def production_from_dict(data: Any, *, where: str = "rule") -> Production:
    """Validate and build a production from its data form (what an LLM's JSON, a knowledge base
    row or an import holds). Raises RuleError naming the field."""
    if not isinstance(data, Mapping):
        raise RuleError(f"{where}: expected an object with name, task, conditions, effect")
    unknown = sorted(set(data) - {"name", "task", "conditions", "effect"})
    if unknown:
        raise RuleError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")
    for key in ("name", "task", "conditions", "effect"):
        if key not in data:
            raise RuleError(f"{where}: missing field {key!r}")
    name = data["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise RuleError(f"{where}.name: expected a short identifier (letters, digits, - _ .), got {name!r}")
    task = data["task"]
    if not isinstance(task, str) or not task.strip() or len(task) > MAX_TEXT:
        raise RuleError(f"{where}.task: expected a task pattern like 'slice a/an <object>'")
    names = _VAR.findall(task)
    if len(names) != len(set(names)):
        raise RuleError(f"{where}.task: a variable appears twice in {task!r}")
    if len(names) > MAX_TASK_VARIABLES:
        raise RuleError(f"{where}.task: {len(names)} variables in {task!r}, at most {MAX_TASK_VARIABLES} "
                        "(the task families have two at most)")
    conditions_raw = data["conditions"]
    if not isinstance(conditions_raw, list) or len(conditions_raw) > MAX_CONDITIONS:
        raise RuleError(f"{where}.conditions: expected a list of at most {MAX_CONDITIONS} conditions")
    conditions = tuple(parse_condition(c, f"{where}.conditions[{i}]") for i, c in enumerate(conditions_raw))
    effect = validate_effect(data["effect"], f"{where}.effect")
    _check_variables(task, conditions, effect, where)
    return Production(name=name, task=" ".join(task.split()), conditions=conditions, effect=effect)


def _check_variables(task: str, conditions: tuple[Condition, ...], effect: str, where: str) -> None:
    """Every variable a condition reads must be bound by then (kinds, statements), and every
    variable of the effect must be bound by the task or a positive condition."""
    bound = set(_VAR.findall(task))
    for i, cond in enumerate(conditions):
        if cond.pred == "none":
            _check_group(cond.group, set(bound), f"{where}.conditions[{i}]")
            continue
        missing = sorted(_needs(cond) - bound)
        if missing and not cond.negated:
            raise RuleError(f"{where}.conditions[{i}]: {cond} uses <{'>, <'.join(missing)}> before any "
                            "condition binds it")
        if not cond.negated:
            for arg in cond.args:
                bound |= arg.variables()
    unbound = sorted(set(_VAR.findall(effect)) - bound)
    if unbound:
        raise RuleError(f"{where}.effect: <{'>, <'.join(unbound)}> is not bound by the task or a positive condition")


def _needs(cond: Condition) -> set[str]:
    """The variables a condition reads and cannot bind itself (the thing `is`/`nearest` compare
    against; what `knows`/`previous`/`kind` are about): a rule must bind them earlier."""
    if cond.pred in ("is", "nearest"):
        return cond.args[1].variables()
    if cond.pred in ("knows", "previous", "kind"):
        return cond.args[0].variables()
    return set()


def _check_group(group: tuple[Condition, ...], bound: set[str], where: str) -> None:
    for j, cond in enumerate(group):
        missing = sorted(_needs(cond) - bound)
        if missing:
            raise RuleError(f"{where}.none[{j}]: {cond} uses <{'>, <'.join(missing)}> before any condition binds it")
        if not cond.negated:
            for arg in cond.args:
                bound |= arg.variables()


def parse_rule_text(text: str, *, where: str = "rule") -> Production:
    """A rule from an answer's JSON text (a ```json block or a bare object). JSON only: the first
    JSON object of the block is read and anything after it ignored (a base model goes on writing
    after its object; measured with Gemma 3 270M), so the error fed back is about that object."""
    block = re.search(r"```(?:json)?\s*\n(.*?)```", text, re.DOTALL)
    body = block.group(1) if block else text
    start = body.find("{")
    if start < 0 or "}" not in body[start:]:
        raise RuleError(f"{where}: no JSON object found in the answer")
    try:
        data, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as exc:
        raise RuleError(f"{where}: malformed JSON: {exc.msg} (line {exc.lineno})") from None
    return production_from_dict(data, where=where)


# ----------------------------------------------------------------------------------- matching

class _Budget:
    """Bindings one match may still try (MAX_MATCH_STEPS); RuleError once spent."""

    def __init__(self, rule: str, steps: int = MAX_MATCH_STEPS) -> None:
        self.rule = rule
        self.left = steps

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise RuleError(f"rule {self.rule!r}: matching tried more than {MAX_MATCH_STEPS} bindings; "
                            "not applicable")


def matches(rule: Production, ctx: MatchContext) -> Iterator[Binding]:
    """Every binding under which the rule applies, in a deterministic order. A rule whose
    matching would try more than MAX_MATCH_STEPS bindings raises RuleError (not applicable)."""
    start = task_binding(rule.task, ctx.task)
    if start is None:
        return
    yield from _solve(list(rule.conditions), start, ctx, _Budget(rule.name))


def _solve(conditions: list[Condition], binding: Binding, ctx: MatchContext,
           budget: _Budget) -> Iterator[Binding]:
    if not conditions:
        yield binding
        return
    head, rest = conditions[0], conditions[1:]
    budget.spend()
    if head.pred == "none":
        if next(_solve(list(head.group), binding, ctx, budget), None) is None:
            yield from _solve(rest, binding, ctx, budget)
        return
    solutions = PREDICATES[head.pred].solve(list(head.args), binding, ctx)
    if head.negated:
        if next(iter(solutions), None) is None:
            yield from _solve(rest, binding, ctx, budget)
        return
    for extended in solutions:
        budget.spend()
        yield from _solve(rest, extended, ctx, budget)


def first_solution(conditions: Sequence[Condition], binding: Binding, ctx: MatchContext) -> Binding | None:
    """The first binding extending `binding` under which `conditions` hold, in the order a rule's
    match tries them (what a rule with these conditions would bind on this state), or None.
    RuleError / UnknownStatement propagate, as in `first_match`."""
    return next(_solve(list(conditions), dict(binding), ctx, _Budget("probe")), None)


def first_match(rule: Production, ctx: MatchContext) -> Binding | None:
    """The first binding, or None. UnknownStatement / RuleError propagate (the replay check
    reports them; the agent treats such a rule as not applicable)."""
    return next(matches(rule, ctx), None)


def apply(rule: Production, binding: Binding) -> str:
    """The effect with its variables filled in."""
    return _VAR.sub(lambda m: binding.get(m.group(1), m.group(0)), rule.effect)


def check_replay(rule: Production, ctx: MatchContext, expected_effect: str) -> str:
    """The replay check: on the state it was made in, the rule must apply and give the chosen
    option. '' when it does; otherwise what happened, as fed back to the LLM."""
    try:
        binding = first_match(rule, ctx)
    except UnknownStatement as exc:
        return f"ValueError: {exc}"
    except RuleError as exc:
        return f"RuleError: {exc}"
    if binding is None:
        failed = _first_failing(rule, ctx)
        return f"(False, {failed!r})"
    got = apply(rule, binding)
    if not same_option(got, expected_effect):
        return f"(True, '') but the effect is {got!r}, not the chosen {normalize_effect(expected_effect)!r}"
    return ""


def _first_failing(rule: Production, ctx: MatchContext) -> str:
    """Which condition stops the rule on this state (for the revision prompt)."""
    start = task_binding(rule.task, ctx.task)
    if start is None:
        return f"the current task {ctx.task!r} does not match {rule.task!r}"
    for i in range(len(rule.conditions)):
        if next(_solve(list(rule.conditions[: i + 1]), start, ctx, _Budget(rule.name)), None) is None:
            return f"condition {i + 1} does not hold: {rule.conditions[i]}"
    return "no binding satisfies all conditions"


def describe_language() -> str:
    """The rule language for the code-generation system prompt."""
    lines = [f"- {p.signature()}: {p.doc}" for p in PREDICATES.values()]
    lines.append('- {"none": [condition, ...]}: holds when no way to satisfy all of them together exists')
    return "\n".join(lines)
