"""The offline model's household knowledge, loaded from config/offline_model/ and validated.

The data is common convention (where people keep a mug, a can of beans, a stapler). The offline
model never reads scenes or ground truth at run time, but the data was written with seed 000's
tables at hand, so it agrees with the paper scenes' answers for most objects: results on those
scenes are no evidence of knowledge (docs/stars.md, "Results measured here"). See config/offline_model/*.yaml for the
meaning of keys.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from task_learning.config import check_keys, config_path, expect_number, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.llm.offline.hashing import unit_hash
from task_learning.names import normalize_name

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


def _weights(value: Any, file: Path, key: str, raw: bool = False) -> Weights:
    """A name -> weight mapping; names are spoken names unless `raw` (token strings)."""
    expect_type(value, dict, file=file, key=key)
    out: Weights = {}
    for name, weight in value.items():
        sub = join_key(key, str(name))
        expect_number(weight, file=file, key=sub, low=0.0, high=1e6)
        out[str(name) if raw else normalize_name(str(name))] = float(weight)
    return out


def _by_place_table(value: Any, file: Path, key: str) -> dict[str, Weights]:
    expect_type(value, dict, file=file, key=key)
    return {normalize_name(str(p)): _weights(w, file, join_key(key, str(p))) for p, w in value.items()}


def _load_places(file: Path) -> dict[str, Place]:
    data = check_keys(load_yaml(file), file=file, key="", required=["places"])
    expect_type(data["places"], dict, file=file, key="places")
    places: dict[str, Place] = {}
    for name, spec in data["places"].items():
        key = join_key("places", str(name))
        check_keys(spec, file=file, key=key, required=["kind", "relation", "states"], optional=["conjunction"])
        if spec["kind"] not in PLACE_KINDS:
            raise ConfigError(file, join_key(key, "kind"), f"must be one of {', '.join(PLACE_KINDS)}")
        if spec["relation"] not in ("in", "on"):
            raise ConfigError(file, join_key(key, "relation"), "must be 'in' or 'on'")
        states = _weights(spec["states"], file, join_key(key, "states"))
        conj = spec.get("conjunction")
        if conj is not None and (not isinstance(conj, (int, float)) or not 0.0 <= conj <= 1.0):
            raise ConfigError(file, join_key(key, "conjunction"), f"expected a probability in [0, 1], got {conj!r}")
        places[normalize_name(str(name))] = Place(normalize_name(str(name)), spec["kind"], spec["relation"],
                                                  states, None if conj is None else float(conj))
    return places


def _load_objects(file: Path):
    data = check_keys(load_yaml(file), file=file, key="", required=["categories", "objects"],
                      optional=["aliases"])
    expect_type(data["categories"], dict, file=file, key="categories")
    categories: dict[str, Category] = {}
    for name, spec in data["categories"].items():
        key = join_key("categories", str(name))
        check_keys(spec, file=file, key=key, required=["tags", "completion", "judgement"], optional=["verbs"])
        tags = expect_type(spec["tags"], list, file=file, key=join_key(key, "tags"))
        completion = _by_place_table(spec["completion"], file, join_key(key, "completion"))
        if "default" not in completion:
            raise ConfigError(file, join_key(key, "completion.default"), "missing required key")
        judgement = _by_place_table(spec["judgement"], file, join_key(key, "judgement"))
        verbs = _weights(spec["verbs"], file, join_key(key, "verbs"), raw=True) if "verbs" in spec else None
        categories[str(name)] = Category(str(name), tuple(str(t).lower() for t in tags), completion, judgement, verbs)
    if "generic" not in categories:
        raise ConfigError(file, "categories.generic", "missing required key (the answer for unknown objects)")
    expect_type(data["objects"], dict, file=file, key="objects")
    objects = {}
    for name, spec in data["objects"].items():
        key = join_key("objects", str(name))
        if isinstance(spec, str):
            spec = {"category": spec}
        check_keys(spec, file=file, key=key, required=["category"], optional=["completion", "judgement", "verbs"])
        if spec["category"] not in categories:
            raise ConfigError(file, join_key(key, "category"), f"unknown category {spec['category']!r}")
        comp = _by_place_table(spec.get("completion", {}), file, join_key(key, "completion"))
        judge = _by_place_table(spec.get("judgement", {}), file, join_key(key, "judgement"))
        verbs = _weights(spec["verbs"], file, join_key(key, "verbs"), raw=True) if "verbs" in spec else None
        objects[normalize_name(str(name))] = (spec["category"], comp, judge, verbs)
    aliases = {}
    for alias, target in (data.get("aliases") or {}).items():
        key = join_key("aliases", str(alias))
        target_key = normalize_name(str(target))
        if target_key not in objects:
            raise ConfigError(file, key, f"alias of unknown object {target!r}")
        aliases[normalize_name(str(alias))] = target_key
    return categories, objects, aliases


def _load_language(file: Path) -> Language:
    required = ["opening", "end_tokens", "after_end", "conjunction", "second_clause",
                "verbs", "default_start_states", "jitter", "filler_tokens", "filler_mass",
                "singular_words", "plural_words", "context_rules", "repair_sharpness",
                "repair_flatten", "repair_rejected_factor"]
    data = check_keys(load_yaml(file), file=file, key="", required=required, optional=["start_place_aliases"])
    conjunction = _weights(data["conjunction"], file, "conjunction")
    second = {}
    expect_type(data["second_clause"], dict, file=file, key="second_clause")
    for kind in PLACE_KINDS:
        if kind not in conjunction:
            raise ConfigError(file, join_key("conjunction", kind), "missing required key")
        if kind not in data["second_clause"]:
            raise ConfigError(file, join_key("second_clause", kind), "missing required key")
        spec = check_keys(data["second_clause"][kind], file=file, key=join_key("second_clause", kind),
                          optional=CLAUSE_KINDS)
        second[kind] = _weights(dict(spec), file, join_key("second_clause", kind), raw=True)
    jitter = check_keys(data["jitter"], file=file, key="jitter", required=["destination", "conjunction", "judgement"])
    for name in ("destination", "conjunction", "judgement"):
        expect_number(jitter[name], file=file, key=join_key("jitter", name), low=0.0, high=5.0)
    mass = expect_type(data["filler_mass"], list, file=file, key="filler_mass")
    if len(mass) != 2 or not all(isinstance(m, (int, float)) and 0 <= m < 0.05 for m in mass):
        raise ConfigError(file, "filler_mass", "expected [low, high] with 0 <= low <= high < 0.05")
    rules = []
    expect_type(data["context_rules"], list, file=file, key="context_rules")
    for i, spec in enumerate(data["context_rules"]):
        key = join_key("context_rules", i)
        check_keys(spec, file=file, key=key, required=["name", "all", "any", "tags", "places", "factors"])
        rules.append(ContextRule(
            name=str(spec["name"]),
            all_words=tuple(str(w).lower() for w in expect_type(spec["all"], list, file=file, key=join_key(key, "all"))),
            any_words=tuple(str(w).lower() for w in expect_type(spec["any"], list, file=file, key=join_key(key, "any"))),
            tags=tuple(str(w).lower() for w in expect_type(spec["tags"], list, file=file, key=join_key(key, "tags"))),
            places=tuple(normalize_name(str(w)) for w in expect_type(spec["places"], list, file=file, key=join_key(key, "places"))),
            factors=_weights(spec["factors"], file, join_key(key, "factors")),
        ))
    return Language(
        opening=str(expect_type(data["opening"], str, file=file, key="opening")),
        end_tokens=_weights(data["end_tokens"], file, "end_tokens", raw=True),
        after_end=tuple(str(t) for t in expect_type(data["after_end"], list, file=file, key="after_end")),
        conjunction=conjunction,
        second_clause=second,
        verbs=_weights(data["verbs"], file, "verbs", raw=True),
        default_start_states=_weights(data["default_start_states"], file, "default_start_states"),
        jitter_destination=float(jitter["destination"]),
        jitter_conjunction=float(jitter["conjunction"]),
        jitter_judgement=float(jitter["judgement"]),
        repair_sharpness=float(expect_number(data["repair_sharpness"], file=file, key="repair_sharpness", low=0.0,
                                             high=100.0)),
        repair_flatten=float(expect_number(data["repair_flatten"], file=file, key="repair_flatten", low=0.0,
                                           high=100.0)),
        repair_rejected_factor=float(expect_number(data["repair_rejected_factor"], file=file,
                                                   key="repair_rejected_factor", low=0.0, high=100.0)),
        filler_tokens=tuple(str(t) for t in expect_type(data["filler_tokens"], list, file=file, key="filler_tokens")),
        filler_mass=(float(mass[0]), float(mass[1])),
        singular_words=frozenset(str(w) for w in data["singular_words"]),
        plural_words=frozenset(normalize_name(str(w)) for w in data["plural_words"]),
        context_rules=tuple(rules),
        start_place_aliases={normalize_name(str(k)): normalize_name(str(v)) for k, v in
                             expect_type(data.get("start_place_aliases") or {}, dict, file=file,
                                         key="start_place_aliases").items()},
    )
