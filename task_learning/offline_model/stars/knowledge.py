"""The offline model's household knowledge, loaded from config/offline_model/ and validated.

The data is common convention (where people keep a mug, a can of beans, a stapler). The offline
model never reads scenes or ground truth at run time, but the data was written with the STARS paper's
tables at hand, so it agrees with the paper scenes' answers for most objects: results on those
scenes are no evidence of knowledge (docs/stars.md, "Results measured here"). See config/offline_model/*.yaml for the
meaning of keys.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import BeforeValidator, Field

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.names import normalize_name
from task_learning.inputs.schema import Schema, bounded, invalid, known_key, load_model
from task_learning.offline_model.hashing import unit_hash

PLACE_KINDS = ("openable", "receptacle", "surface")
CLAUSE_KINDS = ("dest_state", "start_state", "start_moved")

Weights = dict[str, float]


@dataclass(frozen=True)
class Place:
    name: str
    kind: str
    relation: str
    states: Weights
    conjunction: float | None = None  # None: the language's default for the kind


@dataclass(frozen=True)
class Category:
    name: str
    tags: tuple[str, ...]
    completion: Mapping[str, Weights]  # start place (or "default") -> destination weights
    judgement: Mapping[str, Weights]
    verbs: Weights | None = None


@dataclass(frozen=True)
class ContextRule:
    name: str
    all_words: tuple[str, ...]
    any_words: tuple[str, ...]
    tags: tuple[str, ...]
    places: tuple[str, ...]
    factors: Weights

    def matches_sentence(self, sentence: str) -> bool:
        words = set(re.findall(r"[a-z][a-z\-]*", sentence.lower()))
        if not all(w in words for w in self.all_words):
            return False
        return not self.any_words or any(w in words for w in self.any_words)

    def applies_to(self, category: Category, start_place: str) -> bool:
        if not set(self.tags) & set(category.tags):
            return False
        return not self.places or start_place in self.places


@dataclass(frozen=True)
class ObjectProfile:
    """What the model believes about one object in one starting place."""

    name: str
    category: Category
    completion: Weights  # destination -> probability (normalised, jittered, context applied)
    judgement: Weights  # destination -> rating for Selection (context applied)
    verbs: Weights
    plural: bool
    known: bool  # False: an unknown object type answered from the generic category


@dataclass(frozen=True)
class Language:
    opening: str
    end_tokens: Weights
    after_end: tuple[str, ...]
    conjunction: Weights
    second_clause: Mapping[str, Weights]
    verbs: Weights
    default_start_states: Weights
    jitter_destination: float
    jitter_conjunction: float
    jitter_judgement: float
    repair_sharpness: float
    repair_flatten: float
    repair_rejected_factor: float
    filler_tokens: tuple[str, ...]
    filler_mass: tuple[float, float]
    singular_words: frozenset[str]
    plural_words: frozenset[str]
    context_rules: tuple[ContextRule, ...]
    start_place_aliases: Mapping[str, str] = field(default_factory=dict)

    def canonical_place(self, place: str) -> str:
        key = normalize_name(place)
        return self.start_place_aliases.get(key, key)


@dataclass
class Knowledge:
    places: dict[str, Place]
    categories: dict[str, Category]
    objects: dict[str, tuple[str, dict[str, Weights], dict[str, Weights], Weights | None]]
    aliases: dict[str, str]
    language: Language
    source: str = ""
    _profiles: dict[tuple, ObjectProfile] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- places
    def place(self, name: str) -> Place:
        """A place by spoken name; unknown places are treated as plain receptacles."""
        key = normalize_name(name)
        found = self.places.get(key)
        if found is not None:
            return found
        return Place(key, "receptacle", "in", {"empty": 0.4, "full": 0.3, "tidy": 0.3})

    def start_states(self, start_place: str) -> Weights:
        place = self.places.get(normalize_name(start_place)) or self.places.get(self.language.canonical_place(start_place))
        if place is None:
            return dict(self.language.default_start_states)
        return dict(place.states)

    # ---------------------------------------------------------------- objects
    def resolve_object(self, name: str) -> tuple[str, bool]:
        """(known object name, known?) for a spoken name: exact, alias, then shorter tails
        ("rusty steak knife" -> "steak knife" -> "knife"), then a plural's singular."""
        key = normalize_name(name)
        candidates = [key]
        words = key.split()
        candidates += [" ".join(words[i:]) for i in range(1, len(words))]
        for cand in list(candidates):
            if cand.endswith("s") and len(cand) > 3:
                candidates.append(cand[:-1])
        for cand in candidates:
            if cand in self.objects:
                return cand, True
            if cand in self.aliases:
                return self.aliases[cand], True
        return key, False

    def is_plural(self, name: str) -> bool:
        key = normalize_name(name)
        lang = self.language
        if key in lang.plural_words:
            return True
        head = key.split(" of ")[0].split()[-1] if key else ""
        if head in lang.singular_words or key in lang.singular_words:
            return False
        return head.endswith("s") and not head.endswith(("ss", "us", "is"))

    def profile(self, name: str, start_place: str, system_context: tuple[str, ...] = ()) -> ObjectProfile:
        """The object's destination beliefs in this starting place under this user context."""
        cache_key = (normalize_name(name), normalize_name(start_place), system_context)
        cached = self._profiles.get(cache_key)
        if cached is not None:
            return cached
        obj_key, known = self.resolve_object(name)
        if known:
            cat_name, comp_override, judge_override, verbs_override = self.objects[obj_key]
        else:
            cat_name, comp_override, judge_override, verbs_override = "generic", {}, {}, None
        category = self.categories[cat_name]
        start = self.language.canonical_place(start_place)
        completion = _by_place(comp_override, start) or _by_place(category.completion, start) or {}
        judgement = _by_place(judge_override, start) or _by_place(category.judgement, start) or {}
        completion = dict(completion)
        judgement = dict(judgement)
        for rule in self.language.context_rules:
            if not rule.applies_to(category, start):
                continue
            if not any(rule.matches_sentence(s) for s in system_context):
                continue
            for dest, factor in rule.factors.items():
                if dest in completion:
                    completion[dest] *= factor
                if dest in judgement:
                    judgement[dest] *= factor * factor
        spoken = normalize_name(name)
        jit = self.language.jitter_destination
        for dest in completion:
            u = 2.0 * unit_hash("dest", spoken, start, dest) - 1.0
            completion[dest] *= math.exp(jit * u)
        completion = _normalised(completion)
        jit = self.language.jitter_judgement
        for dest in judgement:
            u = 2.0 * unit_hash("judge", spoken, start, dest) - 1.0
            judgement[dest] *= math.exp(jit * u)
        verbs = verbs_override or category.verbs or self.language.verbs
        profile = ObjectProfile(
            name=spoken, category=category, completion=completion, judgement=judgement,
            verbs=_normalised(dict(verbs)), plural=self.is_plural(spoken), known=known,
        )
        self._profiles[cache_key] = profile
        return profile


def _by_place(table: Mapping[str, Weights], start: str) -> Weights | None:
    if start in table:
        return table[start]
    return table.get("default")


def _normalised(weights: Mapping[str, float]) -> Weights:
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0:
        return {}
    return {k: w / total for k, w in weights.items() if w > 0}


# -------------------------------------------------------------------- loading

def load_knowledge(folder: str | Path | None = None) -> Knowledge:
    """Load and validate places.yaml, objects.yaml and language.yaml; errors name file and key."""
    base = Path(folder) if folder is not None else config_path("offline_model")
    places = _load_places(base / "places.yaml")
    categories, objects, aliases = _load_objects(base / "objects.yaml")
    language = _load_language(base / "language.yaml")
    return Knowledge(places, categories, objects, aliases, language, source=str(base))


Weight = Annotated[float, bounded(low=0.0, high=1e6)]
WeightsDoc = dict[str, Weight]
ByPlaceDoc = dict[str, WeightsDoc]  # start place (or "default") -> weights


def _weights(value: Mapping[str, float], raw: bool = False) -> Weights:
    """Names are spoken names unless `raw` (token strings)."""
    return {name if raw else normalize_name(name): float(weight) for name, weight in value.items()}


def _by_start(table: Mapping[str, Mapping[str, float]]) -> dict[str, Weights]:
    return {normalize_name(place): _weights(weights) for place, weights in table.items()}


class PlaceDoc(Schema):
    kind: Literal["openable", "receptacle", "surface"]
    relation: Literal["in", "on"]
    states: WeightsDoc
    conjunction: Annotated[float, bounded(low=0.0, high=1.0)] | None = None


class PlacesDoc(Schema):
    """places.yaml."""

    places: dict[str, PlaceDoc]


class CategoryDoc(Schema):
    tags: list[str]
    completion: ByPlaceDoc
    judgement: ByPlaceDoc
    verbs: WeightsDoc | None = None


def _category_alone(value: Any) -> Any:
    """`mug: kitchenware` is short for `mug: {category: kitchenware}`."""
    return {"category": value} if isinstance(value, str) else value


class ObjectDoc(Schema):
    category: str
    completion: ByPlaceDoc = Field(default_factory=dict)
    judgement: ByPlaceDoc = Field(default_factory=dict)
    verbs: WeightsDoc | None = None


class ObjectsDoc(Schema):
    """objects.yaml."""

    categories: dict[str, CategoryDoc]
    objects: dict[str, Annotated[ObjectDoc, BeforeValidator(_category_alone)]]
    aliases: dict[str, str] | None = None


class JitterDoc(Schema):
    destination: Annotated[float, bounded(low=0.0, high=5.0)]
    conjunction: Annotated[float, bounded(low=0.0, high=5.0)]
    judgement: Annotated[float, bounded(low=0.0, high=5.0)]


class ContextRuleDoc(Schema):
    name: str
    all: list[str]
    any: list[str]
    tags: list[str]
    places: list[str]
    factors: WeightsDoc


def _filler_mass(value: Any) -> Any:
    if not (isinstance(value, list) and len(value) == 2
            and all(isinstance(m, (int, float)) and not isinstance(m, bool) and 0 <= m < 0.05 for m in value)):
        raise invalid("expected [low, high] with 0 <= low <= high < 0.05")
    return value


Factor = Annotated[float, bounded(low=0.0, high=100.0)]


class LanguageDoc(Schema):
    """language.yaml."""

    opening: str
    end_tokens: WeightsDoc
    after_end: list[str]
    conjunction: WeightsDoc
    second_clause: dict[Annotated[str, known_key(PLACE_KINDS)], dict[Annotated[str, known_key(CLAUSE_KINDS)], Weight]]
    verbs: WeightsDoc
    default_start_states: WeightsDoc
    jitter: JitterDoc
    filler_tokens: list[str]
    filler_mass: Annotated[list[float], BeforeValidator(_filler_mass)]
    singular_words: list[str]
    plural_words: list[str]
    context_rules: list[ContextRuleDoc]
    repair_sharpness: Factor
    repair_flatten: Factor
    repair_rejected_factor: Factor
    start_place_aliases: dict[str, str] | None = None


def _load_places(file: Path) -> dict[str, Place]:
    doc = load_model(PlacesDoc, file)
    return {normalize_name(name): Place(normalize_name(name), spec.kind, spec.relation, _weights(spec.states),
                                        spec.conjunction)
            for name, spec in doc.places.items()}


def _load_objects(file: Path):
    doc = load_model(ObjectsDoc, file)
    categories: dict[str, Category] = {}
    for name, spec in doc.categories.items():
        completion = _by_start(spec.completion)
        if "default" not in completion:
            raise ConfigError(file, join_key(join_key("categories", name), "completion.default"),
                              "missing required key")
        categories[name] = Category(name, tuple(t.lower() for t in spec.tags), completion, _by_start(spec.judgement),
                                    None if spec.verbs is None else _weights(spec.verbs, raw=True))
    if "generic" not in categories:
        raise ConfigError(file, "categories.generic", "missing required key (the answer for unknown objects)")
    objects = {}
    for name, entry in doc.objects.items():
        if entry.category not in categories:
            raise ConfigError(file, join_key(join_key("objects", name), "category"),
                              f"unknown category {entry.category!r}")
        objects[normalize_name(name)] = (entry.category, _by_start(entry.completion), _by_start(entry.judgement),
                                         None if entry.verbs is None else _weights(entry.verbs, raw=True))
    aliases = {}
    for alias, target in (doc.aliases or {}).items():
        target_key = normalize_name(target)
        if target_key not in objects:
            raise ConfigError(file, join_key("aliases", alias), f"alias of unknown object {target!r}")
        aliases[normalize_name(alias)] = target_key
    return categories, objects, aliases


def _load_language(file: Path) -> Language:
    doc = load_model(LanguageDoc, file)
    for kind in PLACE_KINDS:
        if kind not in doc.conjunction:
            raise ConfigError(file, join_key("conjunction", kind), "missing required key")
        if kind not in doc.second_clause:
            raise ConfigError(file, join_key("second_clause", kind), "missing required key")
    return Language(
        opening=doc.opening,
        end_tokens=_weights(doc.end_tokens, raw=True),
        after_end=tuple(doc.after_end),
        conjunction=_weights(doc.conjunction),
        second_clause={kind: _weights(doc.second_clause[kind], raw=True) for kind in PLACE_KINDS},
        verbs=_weights(doc.verbs, raw=True),
        default_start_states=_weights(doc.default_start_states),
        jitter_destination=doc.jitter.destination,
        jitter_conjunction=doc.jitter.conjunction,
        jitter_judgement=doc.jitter.judgement,
        repair_sharpness=doc.repair_sharpness,
        repair_flatten=doc.repair_flatten,
        repair_rejected_factor=doc.repair_rejected_factor,
        filler_tokens=tuple(doc.filler_tokens),
        filler_mass=(doc.filler_mass[0], doc.filler_mass[1]),
        singular_words=frozenset(doc.singular_words),
        plural_words=frozenset(normalize_name(w) for w in doc.plural_words),
        context_rules=tuple(ContextRule(
            name=rule.name, all_words=tuple(w.lower() for w in rule.all), any_words=tuple(w.lower() for w in rule.any),
            tags=tuple(w.lower() for w in rule.tags), places=tuple(normalize_name(w) for w in rule.places),
            factors=_weights(rule.factors)) for rule in doc.context_rules),
        start_place_aliases={normalize_name(k): normalize_name(v) for k, v in (doc.start_place_aliases or {}).items()},
    )
