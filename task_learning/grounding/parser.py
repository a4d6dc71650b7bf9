"""Goal-sentence parsing: text -> tokens -> clauses, with the robot's lexicon and grammar.

Two language checks, in the order a language processor meets them (the STARS paper §4.2):
1. every word must be known (`unknown_words`), else the sentence has unknown words;
2. the known words must form goal clauses under grammar.yaml (`parse`), else the sentence is
   uninterpretable, and `ParseError` says which word could not be used where it stands.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Sequence

from task_learning.grounding.grammar import Grammar
from task_learning.grounding.lexicon import Lexicon, NounForm, StateWord

# Typographic characters LLMs and keyboards produce, read as their ASCII counterparts.
_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u2013": "-", "\u2014": "-", "\u00a0": " ", "\u2026": "."})
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|\S", re.UNICODE)
_QUOTES = "\"'`"


class ParseError(Exception):
    """The sentence is not usable as goal clauses; `subject` is the word that could not be used."""

    def __init__(self, detail: str, subject: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.subject = subject


@dataclass(frozen=True)
class NounPhrase:
    form: NounForm
    plural: bool
    text: str  # the words as written, without the article ("dish rack")
    # other readings of the same words, tried in order when `form` grounds to nothing ("plastic
    # cups": the grocery pack PlasticCups, else the plural of "plastic cup")
    alternatives: tuple[NounForm, ...] = ()

    def readings(self) -> tuple[tuple[NounForm, bool], ...]:
        extra = self.plural and self.form.plural is False  # "all the mug" keeps its article plural
        return ((self.form, self.plural),) + tuple((f, f.plural or extra) for f in self.alternatives)


@dataclass
class ParsedClause:
    """One goal clause. kind 'location': subjects predicate destination; kind 'state':
    subjects have every (state, negated) in `states`."""

    kind: str
    subjects: list[NounPhrase]
    text: str
    modifier: tuple[str, NounPhrase] | None = None  # "the knife on the counter": ("on", counter)
    predicate: str = ""  # inside | on (location clauses)
    destination: NounPhrase | None = None
    states: list[tuple[StateWord, bool]] = field(default_factory=list)


def clean_text(sentence: str, grammar: Grammar) -> str:
    """Bound, normalise and strip the raw text; ParseError for input no grammar could read."""
    if len(sentence) > grammar.max_chars:
        raise ParseError(f"sentence too long ({len(sentence)} characters, limit {grammar.max_chars})")
    text = sentence.translate(_TYPOGRAPHIC)
    for ch in text:
        if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r":
            raise ParseError(f"control character U+{ord(ch):04X} in sentence", f"U+{ord(ch):04X}")
    text = " ".join(text.split()).strip(_QUOTES + " ").lower()
    while text.endswith(".") or text.endswith(" "):
        text = text[:-1]
    text = text.strip(_QUOTES + " ")
    if not text:
        raise ParseError("empty sentence")
    return text


def tokenize(text: str) -> list[str]:
    """Words (letters, digits, inner apostrophes) and single punctuation marks; '-' joins words
    like a space ('half-and-half')."""
    return [t for t in _TOKEN.findall(text) if t != "-"]


def is_word(token: str) -> bool:
    return token[0].isalnum()


def unknown_words(tokens: Sequence[str], is_known: Callable[[str], bool]) -> list[str]:
    """Distinct words outside the vocabulary, in order of appearance."""
    seen: list[str] = []
    for token in tokens:
        if is_word(token) and not is_known(token) and token not in seen:
            seen.append(token)
    return seen


class _Parser:
    """Recursive descent over the productions documented in grammar.yaml."""

    def __init__(self, tokens: list[str], lexicon: Lexicon, grammar: Grammar,
                 extra_forms: dict[str, list[NounForm]]) -> None:
        self.tokens = tokens
        self.lex = lexicon
        self.grammar = grammar
        self.extra_forms = extra_forms
        self.pos = 0

    # --- helpers
    def peek(self, offset: int = 0) -> str | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def where(self) -> str:
        before = " ".join(self.tokens[max(0, self.pos - 4):self.pos])
        return f"after '{before}'" if before else "at the start"

    def fail(self, expected: str) -> ParseError:
        token = self.peek()
        if token is None:
            return ParseError(f"sentence ends {self.where()}; expected {expected}", self.tokens[-1])
        return ParseError(f"cannot use '{token}' {self.where()}; expected {expected}", token)

    def match_noun(self, at: int) -> list[NounForm]:
        """The longest noun forms at `at` (several when one surface form has several readings)."""
        if at >= len(self.tokens):
            return []
        first = self.tokens[at]
        best: list[NounForm] = []
        for bucket in (self.lex.forms.get(first, ()), self.extra_forms.get(first, ())):
            for form in bucket:
                n = len(form.words)
                if best and n < len(best[0].words):
                    break  # buckets are sorted longest first
                if tuple(self.tokens[at:at + n]) == form.words:
                    if best and n > len(best[0].words):
                        best = []
                    best.append(form)
        return best

    def match_preposition(self, at: int) -> tuple[tuple[str, ...], str | None] | None:
        for n in range(self.lex.max_preposition_len(), 0, -1):
            words = tuple(self.tokens[at:at + n])
            if len(words) == n and words in self.lex.prepositions:
                return words, self.lex.prepositions[words]
        return None

    def state_at(self, at: int) -> bool:
        token = self.tokens[at] if at < len(self.tokens) else None
        if token in self.lex.negations and self.grammar.negated_states:
            token = self.tokens[at + 1] if at + 1 < len(self.tokens) else None
        return token in self.lex.states

    # --- productions
    def noun_phrase(self) -> NounPhrase:
        plural_article = False
        if self.peek() in self.lex.articles:
            plural_article = self.peek() in ("all", "both")
            self.pos += 1
            if self.peek() in self.lex.articles:  # "all the mugs"
                self.pos += 1
        forms = self.match_noun(self.pos)
        if not forms:
            raise self.fail("the name of an object")
        form = forms[0]
        self.pos += len(form.words)
        return NounPhrase(form, form.plural or plural_article, " ".join(form.words),
                          tuple(forms[1:]))

    def subject(self) -> tuple[list[NounPhrase], tuple[str, NounPhrase] | None]:
        subjects = [self.noun_phrase()]
        while (self.grammar.conjoined_subjects and self.peek() in self.lex.conjunctions
               and self.peek(1) not in self.lex.copulas):
            self.pos += 1
            subjects.append(self.noun_phrase())
        modifier = None
        prep = self.match_preposition(self.pos)
        if prep is not None and self.grammar.subject_modifiers:
            words, predicate = prep
            if predicate is None:
                raise ParseError(f"cannot use '{' '.join(words)}' {self.where()}: the robot has no "
                                 f"goal meaning for it", " ".join(words))
            self.pos += len(words)
            modifier = (predicate, self.noun_phrase())
        return subjects, modifier

    def clause(self) -> ParsedClause:
        start = self.pos
        subjects, modifier = self.subject()
        if self.peek() not in self.lex.copulas:
            raise self.fail("'is' or 'are'")
        self.pos += 1
        if self.peek() in self.lex.location_verbs:  # "is stored in the cupboard"
            self.pos += 1
            prep = self.match_preposition(self.pos)
            if prep is None:
                raise self.fail(f"in/on <object> after '{self.tokens[self.pos - 1]}'")
        prep = self.match_preposition(self.pos)
        if prep is not None:
            words, predicate = prep
            if "location" not in self.grammar.clauses:
                raise self.fail("a state")
            if predicate is None:
                raise ParseError(f"cannot use '{' '.join(words)}' {self.where()}: the robot has no "
                                 f"goal meaning for it", " ".join(words))
            self.pos += len(words)
            if not self.match_noun(self.pos) and self.peek() not in self.lex.articles:
                raise self.fail(f"an object after '{' '.join(words)}'")
            destination = self.noun_phrase()
            return ParsedClause("location", subjects, " ".join(self.tokens[start:self.pos]),
                                modifier, predicate, destination)
        if "state" in self.grammar.clauses and self.state_at(self.pos):
            states = [self.state()]
            while self.peek() in self.lex.conjunctions and self.state_at(self.pos + 1):
                self.pos += 1
                states.append(self.state())
            return ParsedClause("state", subjects, " ".join(self.tokens[start:self.pos]), modifier,
                                states=states)
        if self.peek() in self.lex.negations:
            raise self.fail("a state the robot can check after 'not'" if self.grammar.negated_states
                            else "a location or a state")
        raise self.fail("a location (in/on <object>) or a state the robot can check")

    def state(self) -> tuple[StateWord, bool]:
        negated = False
        if self.peek() in self.lex.negations:
            negated = True
            self.pos += 1
        word = self.lex.states[self.tokens[self.pos]]
        self.pos += 1
        if self.peek() == "of" and self.peek(1) in self.lex.liquids:  # "full of water"
            self.pos += 2
        return word, negated

    def sentence(self) -> list[ParsedClause]:
        for frame in self.grammar.frames:
            if tuple(self.tokens[:len(frame)]) == frame:
                self.pos = len(frame)
                break
        else:
            if self.grammar.frame_required:
                raise ParseError("the sentence does not start with '"
                                 + " ".join(self.grammar.frames[-1]) + "'", self.peek() or "")
        if self.peek() is None:
            raise ParseError("no goal clause after '" + " ".join(self.tokens) + "'")
        clauses = [self.clause()]
        while self.peek() is not None:
            if self.peek() == "," and self.peek(1) in self.lex.conjunctions:
                self.pos += 1
            if self.peek() in self.lex.conjunctions or self.peek() == ",":
                self.pos += 1
            else:
                raise self.fail("'and' or the end of the sentence")
            if len(clauses) >= self.grammar.max_clauses:
                raise ParseError(f"more than {self.grammar.max_clauses} goal clauses")
            clauses.append(self.clause())
        return clauses


def parse(tokens: list[str], lexicon: Lexicon, grammar: Grammar,
          extra_forms: dict[str, list[NounForm]] | None = None) -> list[ParsedClause]:
    """Tokens of a sentence with only known words -> goal clauses, or ParseError."""
    for token in tokens:
        if not is_word(token) and token != ",":
            raise ParseError(f"unexpected '{token}' in the sentence", token)
    return _Parser(tokens, lexicon, grammar, extra_forms or {}).sentence()
