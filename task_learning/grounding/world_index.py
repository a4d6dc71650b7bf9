"""An index of one WorldState for grounding: objects by type, perceived names, affordances.

Built once per state (a state is a snapshot: it is never mutated after publication), so analysing
many candidate sentences against the same state costs dictionary look-ups, not scans.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from task_learning.grounding.affordances import AffordanceKB
from task_learning.grounding.lexicon import Lexicon, NounForm, head_index, index_forms, noun_forms_for_type, split_words
from task_learning.inputs.names import normalize_name
from task_learning.types import WorldObject, WorldState

_TRAILING_NUMBER = re.compile(r"(\d+)$")


def object_order(obj: WorldObject) -> tuple[bool, float, str, int, str]:
    """Deterministic preference among equals: visible first, then nearest, then id ('Mug|2' before
    'Mug|10')."""
    match = _TRAILING_NUMBER.search(obj.object_id)
    number = int(match.group(1)) if match else 0
    return (not obj.visible, obj.distance, obj.object_id.split("|")[0], number, obj.object_id)


@dataclass
class StateIndex:
    state: WorldState
    by_id: dict[str, WorldObject]
    by_type: dict[str, list[WorldObject]]  # each list in object_order
    extra_forms: dict[str, list[NounForm]]  # perceived types the lexicon has no name for
    extra_words: frozenset[str]
    suffix_types: dict[tuple[str, ...], list[str]]  # name ending or head -> perceived types
    kb: AffordanceKB
    _affordances: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, state: WorldState, lexicon: Lexicon, kb: AffordanceKB) -> "StateIndex":
        by_id: dict[str, WorldObject] = {}
        by_type: dict[str, list[WorldObject]] = {}
        for obj in state.objects:
            by_id[obj.object_id] = obj
            by_type.setdefault(obj.object_type, []).append(obj)
        for objs in by_type.values():
            objs.sort(key=object_order)
        listed = {form.words for bucket in lexicon.forms.values() for form in bucket}
        extra: list[NounForm] = []
        suffixes: dict[tuple[str, ...], list[str]] = {}
        for object_type in by_type:
            words = split_words(normalize_name(object_type))
            if not words:
                continue
            if words not in listed:  # "shelving unit": perception names what the lexicon does not
                extra.extend(noun_forms_for_type(object_type))
            keys = {words[-k:] for k in range(1, len(words) + 1)}
            keys.add((words[head_index(words)],))
            for key in keys:
                suffixes.setdefault(key, []).append(object_type)
        return cls(state=state, by_id=by_id, by_type=by_type, extra_forms=index_forms(extra),
                   extra_words=frozenset(w for f in extra for w in f.words), suffix_types=suffixes,
                   kb=kb)

    def affordances(self, obj: WorldObject) -> frozenset[str]:
        cached = self._affordances.get(obj.object_id)
        if cached is None:
            cached = self.kb.of_object(obj)
            self._affordances[obj.object_id] = cached
        return cached

    def objects_for(self, types: tuple[str, ...], name: str) -> list[WorldObject]:
        """Objects a noun can refer to: its own types in preference order; when none is perceived,
        objects whose spoken name ends in the noun ('knife' -> the steak knife)."""
        found: list[WorldObject] = []
        for object_type in types:
            found.extend(self.by_type.get(object_type, ()))
        if found:
            return found
        for object_type in self.suffix_types.get(split_words(name), ()):
            found.extend(self.by_type.get(object_type, ()))
        return found
