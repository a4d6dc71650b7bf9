"""The robot's vocabulary (config/grounding/lexicon.yaml), validated on load.

The lexicon is data so that the line between "unknown word" and "uninterpretable" is visible and
editable: a word is known if it is listed anywhere here (or names a perceived object type), and the
grammar decides whether a known word can be used where it stands.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal

from pydantic import AfterValidator, BeforeValidator

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, join_key
from task_learning.inputs.names import normalize_name
from task_learning.inputs.schema import Schema, invalid, load_model

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


def _key_word(value: Any) -> Any:
    if not isinstance(value, str):
        raise invalid(f"key must be a word, got {type(value).__name__}{_YAML_BOOL_HINT}")
    return value


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise invalid(f"expected a word, got {value!r}{_YAML_BOOL_HINT}")
    return value


def _word(value: str) -> str:
    word = value.strip().lower()
    if not _WORD.match(word):
        raise invalid(f"not a single lower-case word: {value!r}")
    return word


def _phrase(value: str) -> str:
    words = split_words(value)
    if not words or not all(_WORD.match(w) for w in words):
        raise invalid(f"not a phrase of lower-case words: {value!r}")
    return value


def _type_name(value: Any) -> Any:
    if not isinstance(value, str) or not _TYPE_NAME.match(value):
        raise invalid(f"not a CamelCase objectType: {value!r}")
    return value


def _preposition_predicate(value: Any) -> Any:
    if value is not None and value not in ("inside", "on"):
        raise invalid(f"predicate must be inside, on or null, got {value!r}")
    return value


def _goal_predicate(value: Any) -> Any:
    if value not in GOAL_PREDICATES:
        raise invalid(f"unknown predicate {value!r} (agreed: {', '.join(GOAL_PREDICATES)})")
    return value


KeyWord = Annotated[str, BeforeValidator(_key_word)]  # a mapping's key: on/off/yes/no unquoted are booleans
Word = Annotated[str, BeforeValidator(_not_a_bool), AfterValidator(_word)]  # stripped, lower case
Phrase = Annotated[str, AfterValidator(_phrase)]


class StateDoc(Schema):
    predicate: Annotated[str, BeforeValidator(_goal_predicate)]
    needs: str  # the affordance (affordances.yaml) the object must have
    truth: bool = True


class NounDoc(Schema):
    names: list[Phrase]  # the first is the canonical name
    types: list[Annotated[str, BeforeValidator(_type_name)]]  # preferred first
    plurals: list[Phrase] | None = None  # default: the names pluralized
    head: Phrase | None = None
    plural_name: bool = False


class LexiconDoc(Schema):
    """lexicon.yaml."""

    articles: list[Word]
    copulas: dict[KeyWord, Literal["singular", "plural"]]
    conjunctions: list[Word]
    negations: list[Word]
    prepositions: dict[Annotated[KeyWord, AfterValidator(_phrase)],
                       Annotated[str | None, BeforeValidator(_preposition_predicate)]]
    states: dict[KeyWord, StateDoc]
    nouns: list[NounDoc]
    liquids: list[Word] | None = None
    location_verbs: list[Word] | None = None
    other_words: dict[str, list[Word]] | None = None


def load_lexicon(path: str | Path | None = None) -> Lexicon:
    """Read and validate lexicon.yaml; every error names the file and the key."""
    file = Path(path) if path is not None else config_path("grounding", "lexicon.yaml")
    doc = load_model(LexiconDoc, file)
    articles = frozenset(doc.articles)
    copulas: dict[str, str] = {word.lower(): number for word, number in doc.copulas.items()}
    conjunctions = frozenset(doc.conjunctions)
    negations = frozenset(doc.negations)
    prepositions: dict[tuple[str, ...], str | None] = {split_words(phrase): predicate
                                                       for phrase, predicate in doc.prepositions.items()}
    states = {word.lower(): StateWord(word.lower(), spec.predicate, spec.truth, spec.needs)
              for word, spec in doc.states.items()}
    liquids = frozenset(doc.liquids or ())
    location_verbs = frozenset(doc.location_verbs or ())
    other = {word for words in (doc.other_words or {}).values() for word in words}

    nouns: list[NounEntry] = []
    forms: list[NounForm] = []
    for i, spec in enumerate(doc.nouns):
        key = join_key("nouns", i)
        if not spec.names:
            raise ConfigError(file, join_key(key, "names"), "needs at least one name")
        if not spec.types:
            raise ConfigError(file, join_key(key, "types"), "needs at least one object type")
        names = [split_words(n) for n in spec.names]
        head = " ".join(split_words(spec.head)) if spec.head is not None else None
        entry = NounEntry(name=" ".join(names[0]), types=tuple(spec.types), head=head or default_head(names[0]))
        nouns.append(entry)
        for words in names:
            forms.append(NounForm(words, entry, spec.plural_name))
        if spec.plurals is not None:
            plurals = [split_words(p) for p in spec.plurals]
        elif spec.plural_name:
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
