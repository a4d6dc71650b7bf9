"""World knowledge asked ahead while bootstrapping (the bootstrapped-productions paper): an extension, not the paper's mechanism.

The paper asks world knowledge lazily: "when a production rule is conditioned on a statement not
previously known to the agent, the LLM is used to evaluate whether the statement is true" (World
Knowledge Base). That is the default here (`lazy`), in training and at test time alike.

The extension (`catalogue`): a family's productions consult world knowledge with statement
patterns, e.g. `knows("<k> is commonly stored in a/an <kind>")` with `<kind>` bound to a
receptacle's type. Asked only as the training instances need them, these statements cover only
the combinations those instances met. So after each family each pattern is asked, once per
statement, for every kind met in training x every receptacle type of the robot's type catalogue
(`config/scenes/object_types.yaml`) that the training kitchen has, through the same world knowledge
(the LLM, cached in the knowledge base with the source `PREFETCH_SOURCE`). The catalogue is cut to
the training kitchen's types on purpose: it then holds no type that only a held-out kitchen has,
whatever the held-out kitchens are, so the extension can never ask in training what only the test
kitchens would need. A kind or a type never met in training is still asked at test time.

The patterns are read from the stored productions' parsed conditions, never from a sentence
written here: a `knows` statement with a variable that a `type_of(<r>, <var>)` binds for some
`receptacle(<r>)` of the same conjunction (top level, or a `none` group with the top level).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from task_learning.productions.knowledge import UnknownStatement, WorldKnowledge
from task_learning.productions.language import Condition, Production, variables_in
from task_learning.world.catalog import load_object_types

log = logging.getLogger(__name__)

# how bootstrapping asks world knowledge: lazily, as a production first needs a statement (the
# paper), or also ahead over the catalogue's types the training kitchen has (the extension)
WORLD_KNOWLEDGE_MODES = ("lazy", "catalogue")
MODE_ALIASES = {"met": "lazy"}  # the earlier name of `lazy`
PREFETCH_SOURCE = "llm:catalogue-prefetch"  # the knowledge base's source of a statement asked ahead


def world_knowledge_mode(name: str) -> str:
    """The mode `name` means (an alias resolved); ValueError for an unknown one."""
    mode = MODE_ALIASES.get(name, name)
    if mode not in WORLD_KNOWLEDGE_MODES:
        raise ValueError(f"world_knowledge: expected one of {', '.join(WORLD_KNOWLEDGE_MODES)}, got {name!r}")
    return mode
_VAR = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")


@dataclass(frozen=True)
class StatementPattern:
    """A `knows` statement of one production; `type_slots` range over receptacle types, and
    `task_slots` maps each other slot that `kind(<task variable>, <slot>)` binds to that variable."""

    text: str
    task: str
    type_slots: frozenset[str]
    task_slots: tuple[tuple[str, str], ...] = ()

    @property
    def kind_slots(self) -> list[str]:
        return [v for v in dict.fromkeys(_VAR.findall(self.text)) if v not in self.type_slots]

    def regex(self) -> re.Pattern[str]:
        """Matches a cached statement (lower case, single spaces) made from this pattern."""
        out, seen, last = [], set(), 0
        text = _key(self.text)
        for m in _VAR.finditer(text):
            out.append(re.escape(text[last:m.start()]))
            name = m.group(1)
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
            seen.add(name)
            last = m.end()
        out.append(re.escape(text[last:]))
        return re.compile("^" + "".join(out) + "$")

    def fill(self, values: Mapping[str, str]) -> str:
        return _VAR.sub(lambda m: values.get(m.group(1), m.group(0)), self.text)


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _conjunctions(conditions: Sequence[Condition]) -> Iterable[list[Condition]]:
    top = [c for c in conditions if c.pred != "none"]
    yield top
    for group in (c for c in conditions if c.pred == "none"):
        for inner in _conjunctions(group.group):
            yield top + inner


def statement_patterns(productions: Iterable[Production]) -> list[StatementPattern]:
    """Every `knows` pattern of the productions with a slot bound to a receptacle's type."""
    found: dict[tuple[str, str], StatementPattern] = {}
    for rule in productions:
        task_vars = set(variables_in(rule.task))
        for conj in _conjunctions(rule.conditions):
            plain = [c for c in conj if not c.negated]
            receptacles = {c.args[0].text for c in plain if c.pred == "receptacle" and c.args[0].var}
            type_vars = {c.args[1].text for c in plain if c.pred == "type_of" and c.args[0].var
                         and c.args[0].text in receptacles and c.args[1].var}
            kind_of = {c.args[1].text: c.args[0].text for c in plain if c.pred == "kind" and c.args[0].var
                       and c.args[0].text in task_vars and c.args[1].var}
            for cond in conj:
                if cond.pred != "knows" or cond.args[0].var:
                    continue
                slots = type_vars & cond.args[0].variables()
                if slots:
                    task_slots = tuple(sorted((s, kind_of[s]) for s in cond.args[0].variables() - slots
                                              if s in kind_of))
                    pattern = StatementPattern(cond.args[0].text, rule.task, frozenset(slots), task_slots)
                    found.setdefault((pattern.text, pattern.task), pattern)
    return list(found.values())


def catalogue_receptacle_types(ignored: Iterable[str] = (), within: Iterable[str] | None = None) -> list[str]:
    """The catalogue's types a robot treats as places to store things: receptacles that are not
    carried themselves (as the world adapter's receptacles), minus `ignored`; with `within` (the
    training kitchen's types), only those."""
    skip = set(ignored)
    keep = None if within is None else set(within)
    return sorted(t.name for t in load_object_types().values()
                  if t.flag("receptacle") and not t.flag("pickupable") and t.name not in skip
                  and (keep is None or t.name in keep))


def kinds_met(pattern: StatementPattern, statements: Iterable[str],
              drawn: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """The values the pattern's non-type slots took in training: from the statements already
    answered that it matches, and from the kinds drawn for its family's task variable (`drawn`:
    task pattern -> values)."""
    slots = pattern.kind_slots
    regex = pattern.regex()
    met: dict[tuple[str, ...], dict[str, str]] = {}
    for statement in statements:
        m = regex.match(_key(statement))
        if m:
            values = {s: m.group(s) for s in slots}
            met.setdefault(tuple(values[s] for s in slots), values)
    if len(slots) == 1 and pattern.task_slots and pattern.task_slots[0][0] == slots[0]:
        for value in drawn.get(pattern.task, ()):
            if value:
                met.setdefault((_key(value),), {slots[0]: _key(value)})
    return [met[k] for k in sorted(met)]


def prefetch(productions: Iterable[Production], world: WorldKnowledge, receptacle_types: Sequence[str],
             drawn: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Ask every pattern for every kind met x every receptacle type through `world` (cached ones
    are not asked again; new answers are kept with the source PREFETCH_SOURCE); returns the
    statements settled."""
    settled = []
    source, world.source = world.source, PREFETCH_SOURCE
    try:
        for pattern in statement_patterns(productions):
            for values in kinds_met(pattern, list(world.statements), drawn or {}):
                for rtype in receptacle_types:
                    statement = pattern.fill(values | {slot: rtype for slot in pattern.type_slots})
                    try:
                        world.truth(statement)
                    except UnknownStatement as exc:
                        log.warning("world knowledge left unknown: %s", exc)
                        continue
                    settled.append(statement)
    finally:
        world.source = source
    return settled
