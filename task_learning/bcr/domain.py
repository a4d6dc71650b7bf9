"""The BCR domain as data: action schemas with effects, blocking conditions and resolutions.

Loaded from `config/domains/<name>.yaml` and validated at load time, so a typo in a predicate, a
resolution naming an action that does not exist, or a cycle of resolutions is reported with the
file and key instead of surfacing as a robot stuck mid-task.

Grounding happens against AI2-THOR metadata (a `StateView`): parameters are typed by *kinds*
(AI2-THOR flags, types and state), so the same schema puts any pickupable object into any
receptacle of any scene.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterable, Mapping

from pydantic import AfterValidator, BeforeValidator

from task_learning.bcr.literals import (
    KNOWN_PREDICATES,
    LiteralSyntaxError,
    StateView,
    evaluate,
    literal_text,
    parse_literal,
    positive,
)
from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.schema import Schema, bounded, invalid, load_model
from task_learning.types import ActionCall, GoalLiteral, Truth

HELD = "$held"
ANY = "*"
_ACTION_REF = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*(?:\([^()]*\))?[^()]*)\)\s*$")
_SPECIAL = re.compile(r"^\?([a-z_][a-z0-9_]*)(?:\((\w+)\))?$")
# AI2-THOR boolean keys usable in `when:` and in kinds.
KNOWN_FLAGS = frozenset({
    "pickupable", "receptacle", "openable", "toggleable", "sliceable", "cookable", "dirtyable",
    "canFillWithLiquid", "moveable", "breakable", "isOpen", "isToggled", "isSliced", "isDirty",
    "isCooked", "isFilledWithLiquid", "isPickedUp", "visible",
})
_CYCLE_DEPTH = 8


@dataclass(frozen=True)
class GroundAction:
    """A domain action applied to object ids: the unit the tree holds and the engines choose."""

    schema: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.schema}({', '.join(self.args)})"


@dataclass(frozen=True)
class ActionRef:
    """A resolution action as written in the domain: schema name and argument tokens."""

    schema: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.schema}({', '.join(self.args)})"


@dataclass(frozen=True)
class Kind:
    """A parameter type: objects with all `flags`, of one of `types` (if given), in `state`."""

    name: str
    flags: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    state: tuple[tuple[str, Any], ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if self.types and obj.get("objectType") not in self.types:
            return False
        if any(not obj.get(f) for f in self.flags):
            return False
        return all(bool(obj.get(k)) == bool(v) for k, v in self.state)


@dataclass(frozen=True)
class BlockingCondition:
    """Why an action may not succeed, the literals that resolve it and the actions that may."""

    name: str
    requires: GoalLiteral | None
    when: tuple[tuple[str, str, bool], ...]  # (flag, param, expected)
    on_error: tuple[str, ...]
    resolutions: tuple[GoalLiteral, ...]
    actions: tuple[ActionRef, ...]
    key: str = ""  # where it was defined, for messages


@dataclass(frozen=True)
class ActionSchema:
    name: str
    params: tuple[tuple[str, str], ...]  # (param, kind) in order
    call_action: str
    call_object: str  # the param whose object id the primitive targets, "" for none
    effects: tuple[GoalLiteral, ...]
    blocking: tuple[BlockingCondition, ...]
    doc: str = ""

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.params)


@dataclass
class Blocked:
    """A blocking condition met by a grounded action, with its grounded resolution actions."""

    condition: str
    description: str
    resolutions: list[GoalLiteral]
    actions: list[GroundAction]


@dataclass
class Domain:
    name: str
    file: str
    predicates: dict[str, int]
    kinds: dict[str, Kind]
    actions: dict[str, ActionSchema]
    # objects_of_kind's answers for one state at a time (`_cache_state`)
    _kind_cache: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)
    _cache_state: StateView | None = field(default=None, repr=False, compare=False)

    # ---- grounding -------------------------------------------------------------------------
    def objects_of_kind(self, kind: str, state: StateView) -> list[str]:
        """Ids of the objects of a kind in this state (cached per state view)."""
        if self._cache_state is not state:  # one state at a time
            self._kind_cache.clear()
            self._cache_state = state
        cached = self._kind_cache.get(kind)
        if cached is None:
            spec = self.kinds[kind]
            cached = sorted(oid for oid, obj in state.objects.items() if spec.matches(obj))
            self._kind_cache[kind] = cached
        return cached

    def is_kind(self, object_id: str, kind: str, state: StateView) -> bool:
        obj = state.get(object_id)
        return obj is not None and self.kinds[kind].matches(obj)

    def achievers(self, goal: GoalLiteral, state: StateView) -> list[GroundAction]:
        """Grounded actions with an effect that achieves the goal literal (the tree's roots).
        Definite effects are preferred; possibly_* effects are used when nothing is definite."""
        definite: list[GroundAction] = []
        possible: list[GroundAction] = []
        goal_pools = [state.expand(a) for a in goal.args]
        for schema in self.actions.values():
            for effect in schema.effects:
                if effect.predicate != goal.predicate or len(effect.args) != len(goal.args):
                    continue
                if positive(effect.truth) != positive(goal.truth):
                    continue
                target = definite if effect.truth in (Truth.TRUE, Truth.FALSE) else possible
                for combo in itertools.product(*goal_pools):
                    binding: dict[str, str] = {}
                    ok = True
                    for token, value in zip(effect.args, combo):
                        if token == ANY:
                            continue
                        if binding.get(token, value) != value:
                            ok = False
                            break
                        binding[token] = value
                    if ok:
                        target.extend(self._complete(schema, binding, state))
        chosen = definite or possible
        return list(dict.fromkeys(chosen))

    def _complete(self, schema: ActionSchema, binding: dict[str, str],
                  state: StateView) -> list[GroundAction]:
        """Every grounding of the schema extending `binding`, kinds respected."""
        pools: list[list[str]] = []
        for param, kind in schema.params:
            if param in binding:
                if not self.is_kind(binding[param], kind, state):
                    return []
                pools.append([binding[param]])
            else:
                pools.append(self.objects_of_kind(kind, state))
        out = []
        for combo in itertools.product(*pools):
            if len(set(combo)) == len(combo):  # an object never acts on itself
                out.append(GroundAction(schema.name, tuple(combo)))
        return out

    def call_for(self, action: GroundAction) -> ActionCall:
        """The primitive that runs a grounded action (CookObject runs ToggleObjectOn...)."""
        schema = self.actions[action.schema]
        binding = dict(zip(schema.param_names, action.args))
        return ActionCall(schema.call_action, binding.get(schema.call_object, ""))

    def check_blocking(self, action: GroundAction, state: StateView,
                       error_text: str = "") -> Blocked | None:
        """The first blocking condition met, in the domain's order (the resolver order), from the
        world state before trying, or from the simulator's error text after a failure."""
        schema = self.actions[action.schema]
        binding = dict(zip(schema.param_names, action.args))
        for cond in schema.blocking:
            if not self._applies(cond, binding, state):
                continue
            met = False
            description = ""
            if error_text and cond.on_error:
                hit = next((s for s in cond.on_error if s.lower() in error_text.lower()), None)
                if hit is not None:
                    met = True
                    description = error_text  # fed back verbatim
            if not met and not error_text and cond.requires is not None:
                if not self._requires_hold(cond.requires, binding, state):
                    met = True
                    description = (f"{action}: {cond.name.replace('_', ' ')} (needs "
                                   f"{literal_text(self._bind_literal(cond.requires, binding))})")
            if met:
                return Blocked(
                    condition=cond.name,
                    description=description,
                    resolutions=[self._bind_literal(r, binding) for r in cond.resolutions],
                    actions=self.ground_refs(cond.actions, binding, state, exclude=action),
                )
        return None

    def ground_refs(self, refs: Iterable[ActionRef], binding: Mapping[str, str],
                    state: StateView, exclude: GroundAction | None = None) -> list[GroundAction]:
        out: list[GroundAction] = []
        for ref in refs:
            schema = self.actions[ref.schema]
            pools: list[list[str]] = []
            for token, (_, kind) in zip(ref.args, schema.params):
                if token == HELD:
                    pool = list(state.held)
                elif token.startswith("?"):
                    pool = self._special_pool(token, binding, state)
                else:
                    pool = [binding[token]] if token in binding else []
                pools.append([o for o in pool if self.is_kind(o, kind, state)])
            for combo in itertools.product(*pools):
                if len(set(combo)) != len(combo):
                    continue
                grounded = GroundAction(ref.schema, tuple(combo))
                if grounded != exclude and grounded not in out:
                    out.append(grounded)
        return out

    def _special_pool(self, token: str, binding: Mapping[str, str], state: StateView) -> list[str]:
        match = _SPECIAL.match(token)
        assert match is not None  # validated at load
        name, arg = match.groups()
        if name == "contents":
            target = binding.get(arg or "", "")
            return [o for o in state.contents(target) if o not in state.held]
        bound = set(binding.values())
        return [o for o in self.objects_of_kind(name, state) if o not in bound]

    def _applies(self, cond: BlockingCondition, binding: Mapping[str, str],
                 state: StateView) -> bool:
        return all(state.flag(binding.get(param, ""), flag) == expected
                   for flag, param, expected in cond.when)

    def _requires_hold(self, literal: GoalLiteral, binding: Mapping[str, str],
                       state: StateView) -> bool:
        pools = []
        for token in literal.args:
            if token == HELD:
                pools.append(list(state.held))
            elif token.startswith("?"):
                pools.append(self._special_pool(token, binding, state))
            else:
                pools.append([binding.get(token, token)])
        want = positive(literal.truth)
        values = [evaluate(literal.predicate, combo, state) for combo in itertools.product(*pools)]
        if any(token.startswith("?") or token == HELD for token in literal.args):
            # existential: "holding(?knife)" holds when some knife is held
            return any(values) if want else not any(values)
        value = values[0] if values else False
        return value == want

    @staticmethod
    def _bind_literal(literal: GoalLiteral, binding: Mapping[str, str]) -> GoalLiteral:
        return GoalLiteral(literal.predicate, tuple(binding.get(a, a) for a in literal.args),
                           literal.truth)


# ---- loading ---------------------------------------------------------------------------------

def domain_path(name_or_path: str | Path) -> Path:
    """'household' -> config/domains/household.yaml; a path stays a path."""
    text = str(name_or_path)
    if text.endswith((".yaml", ".yml")) or "/" in text:
        return Path(text)
    return config_path("domains", f"{text}.yaml")


def _known_flag(flag: str) -> str:
    if flag not in KNOWN_FLAGS:
        raise invalid(f"unknown AI2-THOR flag '{flag}'")
    return flag


def _arity_alone(value: Any) -> Any:
    """`inside: 2` is short for `inside: {arity: 2}`."""
    return {"arity": value} if isinstance(value, int) and not isinstance(value, bool) else value


ThorFlag = Annotated[str, AfterValidator(_known_flag)]


class PredicateDoc(Schema):
    arity: Annotated[int, bounded(low=0, high=8, integer=True)]
    doc: str = ""


class KindDoc(Schema):
    flags: list[ThorFlag] | None = None
    types: list[str] | None = None
    state: dict[ThorFlag, bool] | None = None


class CallDoc(Schema):
    action: str  # the primitive (ActionCall) the action runs
    object: str | None = None  # the parameter whose object the primitive targets


class ConditionDoc(Schema):
    name: str
    requires: str | None = None  # a literal
    when: str | None = None  # '<AI2-THOR flag>(<param>)'
    on_error: list[str] | None = None
    resolutions: list[str]  # literals
    actions: list[str]  # 'Action(arg, ...)'


class ActionDoc(Schema):
    params: dict[str, str] | None  # parameter -> kind
    call: CallDoc
    effects: list[str]  # literals
    blocking: list[ConditionDoc] | None = None
    doc: str = ""


class DomainDoc(Schema):
    predicates: dict[str, Annotated[PredicateDoc, BeforeValidator(_arity_alone)]]
    kinds: dict[str, KindDoc | None] | None = None
    actions: dict[str, ActionDoc]
    doc: str = ""


def load_domain(name_or_path: str | Path = "household") -> Domain:
    """Load and validate a domain file; every problem is a ConfigError naming file and key."""
    path = domain_path(name_or_path)
    doc = load_model(DomainDoc, path)
    for name in doc.predicates:
        if name not in KNOWN_PREDICATES:
            raise ConfigError(path, join_key("predicates", name), f"no rule evaluates predicate '{name}' "
                              f"(known: {', '.join(sorted(KNOWN_PREDICATES))})")
    predicates = {name: spec.arity for name, spec in doc.predicates.items()}
    kinds = {"object": Kind("object")}
    for name, spec in (doc.kinds or {}).items():
        spec = spec or KindDoc()
        kinds[name] = Kind(name, tuple(spec.flags or ()), tuple(spec.types or ()),
                           tuple(sorted((spec.state or {}).items())))
    actions = {name: _load_action(name, spec, path, predicates, kinds) for name, spec in doc.actions.items()}
    _check_references(actions, path)
    _check_cycles(actions, path)
    return Domain(name=path.stem, file=str(path), predicates=predicates, kinds=kinds,
                  actions=actions)


def _literal(text: str, path: Path, key: str, predicates: Mapping[str, int],
             params: Iterable[str], kinds: Mapping[str, Kind],
             allow_any: bool = False) -> GoalLiteral:
    try:
        literal = parse_literal(text)
    except LiteralSyntaxError as exc:
        raise ConfigError(path, key, str(exc)) from None
    if literal.predicate not in predicates:
        raise ConfigError(path, key, f"unknown predicate '{literal.predicate}' "
                          f"(declared: {', '.join(sorted(predicates))})")
    if len(literal.args) != predicates[literal.predicate]:
        raise ConfigError(path, key, f"'{literal.predicate}' takes {predicates[literal.predicate]}"
                          f" argument(s), got {len(literal.args)}")
    for arg in literal.args:
        _check_token(arg, path, key, params, kinds, allow_any=allow_any)
    return literal


def _check_token(token: str, path: Path, key: str, params: Iterable[str],
                 kinds: Mapping[str, Kind], allow_any: bool = False) -> None:
    params = set(params)
    if token in params or token == HELD or (allow_any and token == ANY):
        return
    match = _SPECIAL.match(token)
    if match:
        name, arg = match.groups()
        if name == "contents" and arg in params:
            return
        if arg is None and name in kinds:
            return
        raise ConfigError(path, key, f"'{token}': unknown kind or form (use ?<kind> or "
                          f"?contents(<param>); kinds: {', '.join(sorted(kinds))})")
    raise ConfigError(path, key, f"'{token}' is not a parameter ({', '.join(sorted(params))}), "
                      f"$held or ?<kind>")


def _load_action(name: str, spec: ActionDoc, path: Path, predicates: Mapping[str, int],
                 kinds: Mapping[str, Kind]) -> ActionSchema:
    key = join_key("actions", name)
    params: list[tuple[str, str]] = []
    for pname, kind in (spec.params or {}).items():
        if kind not in kinds:
            raise ConfigError(path, join_key(join_key(key, "params"), pname),
                              f"unknown kind '{kind}' (kinds: {', '.join(sorted(kinds))})")
        params.append((pname, kind))
    names = [p for p, _ in params]
    call_object = spec.call.object or ""
    if call_object and call_object not in names:
        raise ConfigError(path, join_key(join_key(key, "call"), "object"),
                          f"'{call_object}' is not a parameter of {name}")
    effects = tuple(_literal(e, path, join_key(join_key(key, "effects"), i), predicates, names, kinds, allow_any=True)
                    for i, e in enumerate(spec.effects))
    blocking = tuple(_load_condition(raw, path, join_key(join_key(key, "blocking"), i), predicates, names, kinds)
                     for i, raw in enumerate(spec.blocking or []))
    return ActionSchema(name, tuple(params), spec.call.action, call_object, effects, blocking, spec.doc)


def _load_condition(spec: ConditionDoc, path: Path, key: str, predicates: Mapping[str, int],
                    params: list[str], kinds: Mapping[str, Kind]) -> BlockingCondition:
    requires = None
    if spec.requires is not None:
        requires = _literal(spec.requires, path, join_key(key, "requires"), predicates, params, kinds)
    on_error = tuple(spec.on_error or ())
    if requires is None and not on_error:
        raise ConfigError(path, key, "a blocking condition needs 'requires' or 'on_error'")
    when = []
    if spec.when:
        try:
            flag_lit = parse_literal(spec.when)
        except LiteralSyntaxError as exc:
            raise ConfigError(path, join_key(key, "when"), str(exc)) from None
        if flag_lit.predicate not in KNOWN_FLAGS or len(flag_lit.args) != 1 \
                or flag_lit.args[0] not in params:
            raise ConfigError(path, join_key(key, "when"),
                              "expected '<AI2-THOR flag>(<param>)', e.g. 'openable(r)'")
        when.append((flag_lit.predicate, flag_lit.args[0], positive(flag_lit.truth)))
    resolutions = tuple(_literal(r, path, join_key(join_key(key, "resolutions"), i), predicates, params, kinds)
                        for i, r in enumerate(spec.resolutions))
    actions = []
    for i, text in enumerate(spec.actions):
        akey = join_key(join_key(key, "actions"), i)
        match = _ACTION_REF.match(text)
        if not match:
            raise ConfigError(path, akey, f"not an action reference: {text!r} "
                              "(expected 'Action(arg, ...)')")
        args = tuple(a.strip() for a in _split_args(match.group(2)))
        for arg in args:
            _check_token(arg, path, akey, params, kinds)
        actions.append(ActionRef(match.group(1), args))
    if not actions:
        raise ConfigError(path, join_key(key, "actions"), "a blocking condition needs at least "
                          "one resolution action")
    return BlockingCondition(spec.name, requires, tuple(when), on_error, resolutions, tuple(actions), key)


def _split_args(body: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts]


def _check_references(actions: Mapping[str, ActionSchema], path: Path) -> None:
    for schema in actions.values():
        for cond in schema.blocking:
            for i, ref in enumerate(cond.actions):
                key = join_key(join_key(cond.key, "actions"), i)
                target = actions.get(ref.schema)
                if target is None:
                    raise ConfigError(path, key, f"resolution names unknown action "
                                      f"'{ref.schema}' (actions: {', '.join(sorted(actions))})")
                if len(ref.args) != len(target.params):
                    raise ConfigError(path, key, f"{ref.schema} takes {len(target.params)} "
                                      f"argument(s), got {len(ref.args)}")


def _check_cycles(actions: Mapping[str, ActionSchema], path: Path) -> None:
    """Reject resolution chains that lead back to the same action with the same arguments while
    every condition along the way can hold at once. No action succeeds along such a chain, so the
    world does not change: the tree would grow the same nodes forever."""
    for schema in actions.values():
        start = GroundAction(schema.name, schema.param_names)
        _walk(actions, start, [start], set(), [], path, counter=[0])


def _walk(actions: Mapping[str, ActionSchema], current: GroundAction, chain: list[GroundAction],
          facts: set[tuple[str, tuple[str, ...], bool]], keys: list[str], path: Path,
          counter: list[int]) -> None:
    if len(chain) > _CYCLE_DEPTH:
        return
    schema = actions[current.schema]
    binding = dict(zip(schema.param_names, current.args))
    for cond in schema.blocking:
        new_facts = set(facts)
        if cond.requires is not None:
            lit = cond.requires
            args = tuple(binding.get(a, a) for a in lit.args)
            fact = (lit.predicate, args, not positive(lit.truth))  # what is true when met
            if (fact[0], fact[1], not fact[2]) in new_facts or _contradicts_held(fact):
                continue
            new_facts.add(fact)
        for i, ref in enumerate(cond.actions):
            action_args: list[str] = []
            for token in ref.args:
                if token.startswith("?"):
                    counter[0] += 1
                    action_args.append(f"{token}#{counter[0]}")  # a fresh object
                else:
                    action_args.append(binding.get(token, token))
            nxt = GroundAction(ref.schema, tuple(action_args))
            key = join_key(join_key(cond.key, "actions"), i)
            if nxt in chain:
                loop = " -> ".join(str(a) for a in chain[chain.index(nxt):] + [nxt])
                raise ConfigError(path, key, f"cycle of resolutions: {loop}")
            _walk(actions, nxt, chain + [nxt], new_facts, keys + [key], path, counter)


def _contradicts_held(fact: tuple[str, tuple[str, ...], bool]) -> bool:
    """$held is held by definition: 'not holding($held)' can never be met."""
    predicate, args, value = fact
    return predicate == "holding" and args == (HELD,) and value is False
