"""The grammar of a production made for one decision (`--decoding grounded`): only rules that
replay on the state they are made for.

Measured (docs/llm.md, 2026-12-02): inside the rule language's generic grammar
(`grounded.rule_language`) every rule Gemma 3 270M wrote parsed, and every one was refused by its
replay: a condition the state does not satisfy (`openable(<receptacle>)` while exploring the
sink), contradictory ones (`not at_type(<t>)`, `at_type(<t>)`), an effect variable bound to
something else (`move to <object>`). The replay check asks two things of a rule on its decision's
state: it applies, and its first binding gives the chosen option. This grammar allows only such
rules. It is computed by the rule language's own solver on that state; nothing is written per task:

- the task: the decision's family's pattern, its variables bound by the task's text;
- the effect: the chosen option, each argument a variable: the task's variable bound to it, else a
  fresh one for an object or receptacle the robot knows (a word that names no instance stays a word);
- anchors: each fresh variable is introduced by a condition (or a condition and a filter) whose
  first solution on this state, tried as the rule's match tries it, is the chosen object;
- facts: then conditions up to `grounded.MAX_CONDITIONS` in all, each a literal of the predicate
  table over the bound variables and the kinds of what the rule names, offered only when it holds
  on this state (a negated one when its positive has no solution). Every variable bound by then,
  each holds under the anchors' binding, in any order and any number.

So every rule the grammar allows applies on its state with the anchors' binding first and gives the
chosen option (a unit test replays random rules of it). What such a rule is worth on other states
is still the paper's business: the agent's utilities and the critic. When no rule of the language
can give the choice (no anchor picks the chosen object first), there is no grammar (None) and the
learner asks for no rule. Statements (`knows`) and earlier tasks (`previous`) are not offered:
their truth is the world knowledge's (an oracle call), not the state's.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator, Sequence

from task_learning.errors import TaskLearningError
from task_learning.llm.constraints import gbnf_literal
from task_learning.productions.knowledge import EnvKnowledge, UnknownStatement, WorldKnowledge, name_equal
from task_learning.productions.language import (
    DONE,
    MOTOR,
    MOTOR_FORMS,
    PREDICATES,
    QUIT,
    SUBTASK,
    Binding,
    Condition,
    MatchContext,
    Term,
    first_solution,
    normalize_effect,
    task_binding,
)

MAX_CONDITIONS = 5  # the families' rules have 2-6; a 270M model's longer lists were copies (grounded.py)
# Fresh variables by what they name, in the predicate table's own parameter names first.
FRESH = {"receptacle": ("r", "s", "c"), "object": ("x", "y", "h")}
# Predicates whose argument is a quoted statement or task: true or false by the world knowledge.
NOT_OFFERED = {"knows", "previous"}
# The argument positions that take a kind (a type name, or a variable bound to one).
KIND_POSITIONS = {"is": {1}, "nearest": {1}, "at_type": {0}, "type_of": {1}, "kind": {1}}
Q = '\\"'  # a quote inside the JSON text, as GBNF reads it


@dataclass(frozen=True)
class Choice:
    """What a rule is made for: its family's pattern, the task, the state, the chosen option."""

    pattern: str
    task: str
    env: EnvKnowledge
    option: str


@dataclass
class Plan:
    """The variables of the rule to write and their values on the decision's state."""

    binding: Binding  # the task's variables and the fresh ones
    fresh: list[str]  # the fresh variables, in the order they appear in the effect
    effect: str = ""

    def named(self) -> list[str]:
        """The task's variables (what a kind position may name besides a kind)."""
        return sorted(v for v in self.binding if v not in self.fresh)

    def variable_for(self, value: str, env: EnvKnowledge) -> str | None:
        """`<var>` for a value of the option: the bound variable of that value, a new one for an
        instance the robot knows, the value itself for a word; None for an id it does not know."""
        for var, have in self.binding.items():
            if name_equal(have, value):
                return f"<{var}>"
        role = "receptacle" if value in env.receptacles else "object" if value in env.objects else ""
        if not role:
            return None if "|" in value else value
        name = next((n for n in FRESH[role] if n not in self.binding), None)
        if name is None:
            return None
        self.binding[name] = value
        self.fresh.append(name)
        return f"<{name}>"


def _motor_effect(text: str, plan: Plan, env: EnvKnowledge) -> str | None:
    for _, pattern in MOTOR_FORMS:
        found = pattern.match(text)
        if not found:
            continue
        out, last = [], 0
        for group in found.groupdict():
            if group == "relation":
                continue
            var = plan.variable_for(found.group(group), env)
            if var is None:
                return None
            out += [text[last:found.start(group)], var]
            last = found.end(group)
        return MOTOR + "".join(out) + text[last:]
    return None


def _subtask_effect(text: str, subtasks: Sequence[str], plan: Plan, env: EnvKnowledge) -> str | None:
    for pattern in subtasks:
        values = task_binding(pattern, text)
        if values is None:
            continue
        out = pattern
        for name, value in values.items():
            var = plan.variable_for(value, env)
            if var is None:
                return None
            out = out.replace(f"<{name}>", var, 1)
        return SUBTASK + out
    return None


def plan_for(decision: Choice, subtasks: Sequence[str]) -> Plan | None:
    """The rule's variables and effect, or None when the option cannot be written with them."""
    task_values = task_binding(decision.pattern, decision.task)
    if task_values is None:
        return None
    plan = Plan(dict(task_values), [])
    chosen = normalize_effect(decision.option)
    if chosen in (DONE, QUIT):
        plan.effect = chosen
    elif chosen.startswith(MOTOR):
        plan.effect = _motor_effect(chosen[len(MOTOR):], plan, decision.env) or ""
    elif chosen.startswith(SUBTASK):
        plan.effect = _subtask_effect(chosen[len(SUBTASK):].strip(), subtasks, plan, decision.env) or ""
    return plan if plan.effect else None


def _is_instance(value: str, env: EnvKnowledge) -> bool:
    return value in env.receptacles or value in env.objects


def _kinds(plan: Plan, env: EnvKnowledge) -> list[str]:
    """The kinds a rule may name: those of the instances it names, where the robot stands, what it holds."""
    named = [v for v in plan.binding.values() if _is_instance(v, env)] + [env.location, *env.held]
    return sorted({env.type_of(n) for n in named if env.type_of(n)})


def _literals(named: Sequence[str], instances: Sequence[str], kinds: Sequence[str],
              must: str = "") -> Iterator[Condition]:
    """Every positive literal of the predicate table with `instances` (variables bound to an
    instance) in instance positions and, in kind positions, `kinds` or a task variable of `named`
    (is's and nearest's compare names too: any task variable; the others types: one bound to a
    kind word), never the literal's own instance; with `must`, only those naming that variable in
    an instance position (those that can bind it)."""
    for predicate in PREDICATES.values():
        if predicate.name in NOT_OFFERED:
            continue
        kind_at = KIND_POSITIONS.get(predicate.name, set())
        by_name = [v for v in named if predicate.name in ("is", "nearest") or v not in instances]
        domains = [[Term(v, var=True) for v in by_name] + [Term(k) for k in kinds] if i in kind_at
                   else [Term(v, var=True) for v in instances] for i in range(predicate.arity)]
        for args in itertools.product(*domains):
            own = {a.text for i, a in enumerate(args) if i not in kind_at}
            if len(own) < predicate.arity - len(kind_at):  # the same instance twice: located(<r>, <r>)
                continue
            if any(a.var and a.text in own for i, a in enumerate(args) if i in kind_at):
                continue
            if must and must not in own:
                continue
            yield Condition(predicate.name, tuple(args))


def _first(conditions: Sequence[Condition], binding: Binding, ctx: MatchContext) -> Binding | None:
    try:
        return first_solution(conditions, binding, ctx)
    except (TaskLearningError, UnknownStatement):
        return None


def _negated(condition: Condition) -> Condition:
    return Condition(condition.pred, condition.args, not condition.negated)


def facts(plan: Plan, ctx: MatchContext) -> list[Condition]:
    """The literals over the plan's variables that hold on the state under its binding."""
    variables = sorted(plan.binding)
    instances = [v for v in variables if _is_instance(plan.binding[v], ctx.env)]
    out = []
    for literal in _literals(plan.named(), instances, _kinds(plan, ctx.env)):
        holds = _first([literal], plan.binding, ctx) is not None
        out.append(literal if holds else _negated(literal))
    return out


def anchors(plan: Plan, ctx: MatchContext, var: str, bound: Binding) -> list[tuple[Condition, ...]]:
    """The conditions (one, else a condition and a filter) whose first solution from `bound` binds
    `var` to its value in the plan: what introduces a fresh variable so the replay gives the choice."""
    value = plan.binding[var]
    variables = sorted([*bound, var])
    instances = [v for v in variables if _is_instance(plan.binding[v], ctx.env)]
    kinds = _kinds(plan, ctx.env)

    def picks(conditions: tuple[Condition, ...]) -> bool:
        found = _first(conditions, bound, ctx)
        return found is not None and found.get(var) == value

    single: list[tuple[Condition, ...]] = [(c,) for c in _literals(plan.named(), instances, kinds, must=var) if picks((c,))]
    if single:
        return single
    whole = bound | {var: value}
    binders = [c for c in _literals(plan.named(), instances, kinds, must=var) if _first([c], whole, ctx) is not None]
    filters = [c if _first([c], whole, ctx) is not None else _negated(c)
               for c in _literals(plan.named(), instances, kinds) if var in {a.text for a in c.args if a.var}]
    return [(b, f) for b in binders for f in filters if f != b and picks((b, f))]


def _condition_text(conditions: Sequence[Condition]) -> str:
    return gbnf_literal(", ".join(f'"{c}"' for c in conditions))


def rule_grammar(decision: Choice, subtasks: Sequence[str]) -> str | None:
    """The GBNF of the production's JSON object after its cue ('{"name": "'): the module's
    docstring. None when no rule of the language replays to the decision's option."""
    plan = plan_for(decision, subtasks)
    if plan is None:
        return None
    ctx = MatchContext(decision.task, decision.env, WorldKnowledge())  # no oracle: `knows` is not offered
    bound = {k: v for k, v in plan.binding.items() if k not in plan.fresh}
    anchor_rules, width = [], 0
    for i, var in enumerate(plan.fresh):
        options = anchors(plan, ctx, var, bound)
        if not options:
            return None
        anchor_rules.append(f"anchor{i} ::= " + " | ".join(_condition_text(o) for o in options))
        width += max(len(o) for o in options)
        bound[var] = plan.binding[var]
    room = max(0, MAX_CONDITIONS - width)
    fact = "fact ::= " + " | ".join(sorted({_condition_text([c]) for c in facts(plan, ctx)}))
    if plan.fresh:
        head = ' ", " '.join(f"anchor{i}" for i in range(len(plan.fresh)))
        conditions = f'conditions ::= {head} (", " fact){{0,{room}}}'
    else:
        conditions = f'conditions ::= (fact (", " fact){{0,{room - 1}}})?'
    return "\n".join([
        f'root ::= name "{Q}, {Q}task{Q}: {Q}" {gbnf_literal(decision.pattern)} "{Q}, {Q}conditions{Q}: [" '
        f'conditions "], {Q}effect{Q}: {Q}" {gbnf_literal(plan.effect)} "{Q}}}"',
        "name ::= [a-z0-9] [a-z0-9-]{0,39}",
        conditions, *anchor_rules, fact,
    ]) + "\n"

