"""The robot's vocabulary (config/grounding/lexicon.yaml), validated on load.

The lexicon is data so that the line between "unknown word" and "uninterpretable" is visible and
editable: a word is known if it is listed anywhere here (or names a perceived object type), and the
grammar decides whether a known word can be used where it stands.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from task_learning.config import check_keys, config_path, expect_type, join_key, load_yaml
from task_learning.errors import ConfigError
from task_learning.names import normalize_name

GOAL_PREDICATES = ("inside", "on", "open", "switched_on", "holding", "near", "visible", "sliced",
                   "dirty", "cooked", "filled")
_TYPE_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_WORD = re.compile(r"^[a-z0-9']+$")
_IRREGULAR_PLURALS = {"knife": "knives", "shelf": "shelves", "leaf": "leaves", "loaf": "loaves",
                      "potato": "potatoes", "tomato": "tomatoes", "glass": "glasses"}


def split_words(text: str) -> tuple[str, ...]:
    """Surface form -> word tuple the way the tokenizer sees it ('pop-tart box' -> pop tart box)."""
    return tuple(re.sub(r"[-_\s]+", " ", text.strip().lower()).split(" ")) if text.strip() else ()


def pluralize_word(word: str) -> str:
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def head_index(words: tuple[str, ...]) -> int:
    """The head of a noun phrase: the word before 'of' ('box of aluminum foil'), else the last."""
    if "of" in words[1:]:
        return words.index("of") - 1
    return len(words) - 1


def pluralize(words: tuple[str, ...]) -> tuple[str, ...]:
    i = head_index(words)
    return words[:i] + (pluralize_word(words[i]),) + words[i + 1:]


def default_head(words: tuple[str, ...]) -> str:
    return words[head_index(words)]


@dataclass(frozen=True)
class NounEntry:
    """One concept the robot can name; `types` are the objectTypes it grounds to, preferred first."""

    name: str  # canonical spoken name ("dish rack")
    types: tuple[str, ...]
    head: str  # the short word used in feedback ("rack")
    perceived: bool = False  # built from a perceived objectType rather than lexicon.yaml


@dataclass(frozen=True)
class NounForm:
    """A surface form of a noun: the words, the entry, and whether the form is plural."""

    words: tuple[str, ...]
    entry: NounEntry
    plural: bool


@dataclass(frozen=True)
class StateWord:
    word: str
    predicate: str
    truth: bool
    needs: str  # the affordance the object must have


@dataclass
class Lexicon:
    articles: frozenset[str]
    copulas: dict[str, str]  # word -> singular|plural
    conjunctions: frozenset[str]
    negations: frozenset[str]
    prepositions: dict[tuple[str, ...], str | None]  # words -> goal predicate (None: unusable)
    states: dict[str, StateWord]
    liquids: frozenset[str]
    location_verbs: frozenset[str]
    other_words: frozenset[str]
    nouns: list[NounEntry]
    forms: dict[str, list[NounForm]] = field(default_factory=dict)  # first word -> forms, longest first
    known_words: frozenset[str] = frozenset()
    source: str = ""

    def max_preposition_len(self) -> int:
        return max((len(w) for w in self.prepositions), default=1)


def noun_forms_for_type(object_type: str) -> list[NounForm]:
    """Forms for a perceived objectType the lexicon does not list: its spoken name and plural."""
    words = split_words(normalize_name(object_type))
    entry = NounEntry(name=" ".join(words), types=(object_type,), head=default_head(words),
                      perceived=True)
    return [NounForm(words, entry, False), NounForm(pluralize(words), entry, True)]


def index_forms(forms: Iterable[NounForm]) -> dict[str, list[NounForm]]:
    """First word -> forms sorted longest first, so matching at a position is a short scan."""
    index: dict[str, list[NounForm]] = {}
    for form in forms:
        index.setdefault(form.words[0], []).append(form)
    for bucket in index.values():
        bucket.sort(key=lambda f: (-len(f.words), f.plural))  # names before generated plurals
    return index


_YAML_BOOL_HINT = " (YAML reads unquoted on/off/yes/no as booleans: quote the word)"


def _string_keys(mapping: Mapping, *, file: Path, key: str) -> None:
    for name in mapping:
        if not isinstance(name, str):
            raise ConfigError(file, join_key(key, str(name)),
                              f"key must be a word, got {type(name).__name__}{_YAML_BOOL_HINT}")


def _word_list(value: Any, *, file: Path, key: str) -> list[str]:
    expect_type(value, list, file=file, key=key)
    words = []
    for i, item in enumerate(value):
        if isinstance(item, bool):
            raise ConfigError(file, join_key(key, i), f"expected a word, got {item!r}{_YAML_BOOL_HINT}")
        expect_type(item, str, file=file, key=join_key(key, i))
        word = item.strip().lower()
        if not _WORD.match(word):
            raise ConfigError(file, join_key(key, i), f"not a single lower-case word: {item!r}")
        words.append(word)
    return words


def _phrase(value: Any, *, file: Path, key: str) -> tuple[str, ...]:
    expect_type(value, str, file=file, key=key)
    words = split_words(value)
    if not words or not all(_WORD.match(w) for w in words):
        raise ConfigError(file, key, f"not a phrase of lower-case words: {value!r}")
    return words


def load_lexicon(path: str | Path | None = None) -> Lexicon:
    """Read and validate lexicon.yaml; every error names the file and the key."""
    file = Path(path) if path is not None else config_path("grounding", "lexicon.yaml")
    data = load_yaml(file)
    check_keys(data, file=file, key="", required=(
        "articles", "copulas", "conjunctions", "negations", "prepositions", "states", "nouns"),
        optional=("liquids", "location_verbs", "other_words"))

    articles = frozenset(_word_list(data["articles"], file=file, key="articles"))
    copulas_raw = expect_type(data["copulas"], Mapping, file=file, key="copulas")
    _string_keys(copulas_raw, file=file, key="copulas")
    copulas: dict[str, str] = {}
    for word, number in copulas_raw.items():
        if number not in ("singular", "plural"):
            raise ConfigError(file, join_key("copulas", str(word)), "must be 'singular' or 'plural'")
        copulas[str(word).lower()] = number
    conjunctions = frozenset(_word_list(data["conjunctions"], file=file, key="conjunctions"))
    negations = frozenset(_word_list(data["negations"], file=file, key="negations"))

    prepositions: dict[tuple[str, ...], str | None] = {}
    preps_raw = expect_type(data["prepositions"], Mapping, file=file, key="prepositions")
    _string_keys(preps_raw, file=file, key="prepositions")
    for phrase, predicate in preps_raw.items():
        key = join_key("prepositions", str(phrase))
        words = _phrase(str(phrase), file=file, key=key)
        if predicate is not None and predicate not in ("inside", "on"):
            raise ConfigError(file, key, f"predicate must be inside, on or null, got {predicate!r}")
        prepositions[words] = predicate

    states: dict[str, StateWord] = {}
    states_raw = expect_type(data["states"], Mapping, file=file, key="states")
    _string_keys(states_raw, file=file, key="states")
    for word, spec in states_raw.items():
        key = join_key("states", str(word))
        check_keys(spec, file=file, key=key, required=("predicate", "needs"), optional=("truth",))
        if spec["predicate"] not in GOAL_PREDICATES:
            raise ConfigError(file, join_key(key, "predicate"),
                              f"unknown predicate {spec['predicate']!r} (agreed: {', '.join(GOAL_PREDICATES)})")
        expect_type(spec["needs"], str, file=file, key=join_key(key, "needs"))
        truth = expect_type(spec.get("truth", True), bool, file=file, key=join_key(key, "truth"))
        states[str(word).lower()] = StateWord(str(word).lower(), spec["predicate"], truth, spec["needs"])

    liquids = frozenset(_word_list(data.get("liquids") or [], file=file, key="liquids"))
    location_verbs = frozenset(_word_list(data.get("location_verbs") or [], file=file,
                                          key="location_verbs"))
    other: set[str] = set()
    other_raw = data.get("other_words") or {}
    expect_type(other_raw, Mapping, file=file, key="other_words")
    for group, words in other_raw.items():
        other.update(_word_list(words, file=file, key=join_key("other_words", str(group))))

    nouns: list[NounEntry] = []
    forms: list[NounForm] = []
    expect_type(data["nouns"], list, file=file, key="nouns")
    for i, spec in enumerate(data["nouns"]):
        key = join_key("nouns", i)
        check_keys(spec, file=file, key=key, required=("names", "types"),
                   optional=("plurals", "head", "plural_name"))
        names_raw = expect_type(spec["names"], list, file=file, key=join_key(key, "names"))
        if not names_raw:
            raise ConfigError(file, join_key(key, "names"), "needs at least one name")
        names = [_phrase(n, file=file, key=join_key(join_key(key, "names"), j))
                 for j, n in enumerate(names_raw)]
        types_raw = expect_type(spec["types"], list, file=file, key=join_key(key, "types"))
        if not types_raw:
            raise ConfigError(file, join_key(key, "types"), "needs at least one object type")
        for j, t in enumerate(types_raw):
            if not isinstance(t, str) or not _TYPE_NAME.match(t):
                raise ConfigError(file, join_key(join_key(key, "types"), j),
                                  f"not a CamelCase objectType: {t!r}")
        head = spec.get("head")
        if head is not None:
            head = " ".join(_phrase(head, file=file, key=join_key(key, "head")))
        plural_name = expect_type(spec.get("plural_name", False), bool, file=file,
                                  key=join_key(key, "plural_name"))
        entry = NounEntry(name=" ".join(names[0]), types=tuple(types_raw),
                          head=head or default_head(names[0]))
        nouns.append(entry)
        for words in names:
            forms.append(NounForm(words, entry, plural_name))
        if "plurals" in spec:
            plurals = [_phrase(p, file=file, key=join_key(join_key(key, "plurals"), j))
                       for j, p in enumerate(expect_type(spec["plurals"], list, file=file,
                                                         key=join_key(key, "plurals")))]
        elif plural_name:
            plurals = []
        else:
            plurals = [pluralize(words) for words in names]
        forms.extend(NounForm(words, entry, True) for words in plurals)

    known = set(articles) | set(copulas) | set(conjunctions) | set(negations) | set(states)
    known |= set(liquids) | set(location_verbs) | other
    for words in prepositions:
        known.update(words)
    for form in forms:
        known.update(form.words)
    return Lexicon(articles=articles, copulas=copulas, conjunctions=conjunctions, negations=negations,
                   prepositions=prepositions, states=states, liquids=liquids,
                   location_verbs=location_verbs,
                   other_words=frozenset(other), nouns=nouns, forms=index_forms(forms),
                   known_words=frozenset(known), source=str(file))
