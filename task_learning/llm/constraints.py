"""Constrained decoding: what a model's answer is allowed to be, and how each server is told.

`--decoding grounded` asks the model only for answers the robot can use: STARS goals the robot can
ground in the scene it sees, an option number of a list. Such a language is a finite set of texts
here (`Constraint.choices`, each the whole answer after the prompt); a server that takes a grammar
gets it as GBNF, built here, so it decodes inside the set and reports the log probabilities of
the tokens it chose. A prefix the prompt already ends with (a Search Tree branch) narrows the set
to the choices that continue it (`Constraint.after`).

Servers differ in how they are told (`ConstraintStyle`): llama.cpp's server takes `grammar` (GBNF)
and `json_schema`; vLLM takes `guided_grammar` and `guided_json`; Ollama `format` (a JSON schema
only); OpenAI's completions endpoint cannot constrain at all. What a provider cannot send is said
once, in one line (`notice`), and the protocol falls back to free decoding: never silently.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

from task_learning.errors import TaskLearningError


class Decoding(str, Enum):
    FREE = "free"  # the papers' protocols, unchanged
    GROUNDED = "grounded"  # answers constrained to what the robot can ground


DECODINGS = tuple(d.value for d in Decoding)


def parse_decoding(value: str | Decoding | None, llm_spec: str | None = None) -> Decoding:
    """'free' | 'grounded' | '' / 'auto' / None: grounded with `--llm local` (measured there:
    docs/llm.md), free with every other provider until measured there."""
    if isinstance(value, Decoding):
        return value
    text = (value or "auto").strip().lower()
    if text == "auto":
        kind = (llm_spec or "").strip().lower().partition(":")[0]
        return Decoding.GROUNDED if kind == "local" else Decoding.FREE
    for decoding in Decoding:
        if decoding.value == text:
            return decoding
    raise TaskLearningError(f"unknown decoding {value!r} (choose from free, grounded, auto)")


class ConstraintStyle(str, Enum):
    """How an endpoint is told the constraint (config/llm.yaml `openai.constraints`)."""

    NONE = "none"  # OpenAI's completions endpoint: no grammar, no schema
    LLAMA_CPP = "llama.cpp"  # `grammar` (GBNF) and `json_schema` in the request body
    VLLM = "vllm"  # `guided_grammar` (GBNF, xgrammar) and `guided_json`
    OLLAMA = "ollama"  # `format`: a JSON schema only


CONSTRAINT_STYLES = tuple(s.value for s in ConstraintStyle)


@dataclass(frozen=True)
class Constraint:
    """The answer must be one of `choices` (whole answers, each as the model would write it after
    the prompt without `after`), or, with `json_schema`, a JSON value of that schema. `after` is
    the part of a choice the prompt already ends with (a Search Tree branch's prefix): the model
    writes the rest."""

    choices: tuple[str, ...] = ()
    after: str = ""
    json_schema: str = ""
    grammar: str = ""  # a GBNF grammar of its own (a language that is not a finite list)
    # the server may stop where only one choice is left (at the end of that word): the rest is
    # known, and a CPU server generates a grammar's forced tokens one by one (measured: seconds each)
    stop_when_unique: bool = False
    # report the next token's alternatives under the grammar (every allowed token, renormalised)
    # rather than the raw top alternatives of the whole vocabulary, which llama.cpp reports with a
    # grammar (measured: an allowed token outside the raw top 20 got no share). llama.cpp only:
    # `post_sampling_probs` with the sampler left neutral (temperature 1, no top-k/p, fixed seed),
    # so the probabilities are the model's own under the grammar; meant for one-token requests
    constrained_probabilities: bool = False

    def remaining(self) -> tuple[str, ...]:
        """What the model may still write: the choices that continue `after`, without it."""
        n = len(self.after)
        choices = unique_cuts(self.choices) if self.stop_when_unique else self.choices
        return tuple(dict.fromkeys(c[n:] for c in choices if c.startswith(self.after) and len(c) > n))

    def allows_prefix(self, text: str) -> bool:
        """Some choice starts with `text` (a branch worth asking the model to continue)."""
        return any(c.startswith(text) for c in self.choices)

    def is_choice(self, text: str) -> bool:
        return text in self.choices

    def gbnf(self) -> str:
        """The constraint as a llama.cpp GBNF grammar (also vLLM's xgrammar): a trie of the
        remaining choices, so alternatives that share a beginning share a rule."""
        if self.grammar:
            return self.grammar
        remaining = self.remaining()
        if not remaining:
            return 'root ::= ""'
        return f"root ::= {_trie_rule(sorted(remaining))}\n"

    def key(self) -> tuple[Any, ...]:
        return (self.choices, self.after, self.json_schema, self.grammar, self.stop_when_unique,
                self.constrained_probabilities)


def unique_cuts(choices: tuple[str, ...]) -> tuple[str, ...]:
    """Each choice up to the end of the word where no other choice starts the same way (the whole
    choice when it is a beginning of another: "on the counter" and "on the counter top")."""
    out = []
    for choice in choices:
        others = [c for c in choices if c != choice]
        cut = len(choice)
        for i in range(1, len(choice) + 1):
            if not any(o.startswith(choice[:i]) for o in others):
                end = choice.find(" ", i)
                cut = len(choice) if end < 0 else end
                break
        out.append(choice[:cut])
    return tuple(out)


def _trie_rule(texts: list[str]) -> str:
    """A GBNF expression for `texts` (sorted): their common beginning, then a group of the
    alternatives that follow it (an empty alternative where one text ends)."""
    prefix = _common_prefix(texts)
    rest = [t[len(prefix):] for t in texts]
    if len(rest) == 1:
        return gbnf_literal(prefix + rest[0])
    groups: dict[str, list[str]] = {}
    ends = False
    for tail in rest:
        if not tail:
            ends = True
            continue
        groups.setdefault(tail[0], []).append(tail)
    alternatives = [_trie_rule(group) for group in groups.values()]
    body = " | ".join(alternatives)
    inner = f"({body})?" if ends else f"({body})"
    return f"{gbnf_literal(prefix)} {inner}" if prefix else inner


def _common_prefix(texts: list[str]) -> str:
    first, last = texts[0], texts[-1]
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def gbnf_literal(text: str) -> str:
    """A GBNF string literal (JSON escaping is GBNF's for quotes, backslashes and control chars)."""
    return json.dumps(text, ensure_ascii=False)


# llama.cpp's server: the probabilities after its sampler chain (the grammar applied), with every
# sampler that would reshape them left neutral; the seed makes the one token it writes repeatable
POST_GRAMMAR_PROBABILITIES: dict[str, Any] = {"post_sampling_probs": True, "temperature": 1.0, "top_k": 0,
                                              "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "seed": 0}


def request_body(constraint: Constraint | None, style: ConstraintStyle) -> dict[str, Any]:
    """The request fields that carry `constraint` for an endpoint of `style` ({}: none)."""
    if constraint is None or style is ConstraintStyle.NONE:
        return {}
    if constraint.json_schema:
        schema = json.loads(constraint.json_schema)
        if style is ConstraintStyle.LLAMA_CPP:
            return {"json_schema": schema}
        if style is ConstraintStyle.VLLM:
            return {"guided_json": schema}
        return {"format": schema}
    if style is ConstraintStyle.LLAMA_CPP:
        if constraint.constrained_probabilities:
            return {"grammar": constraint.gbnf(), **POST_GRAMMAR_PROBABILITIES}
        return {"grammar": constraint.gbnf()}
    if style is ConstraintStyle.VLLM:
        return {"guided_grammar": constraint.gbnf()}
    return {}  # Ollama takes no grammar: a choice is sent free (notice())


def can_send(constraint: Constraint, style: ConstraintStyle) -> bool:
    return bool(request_body(constraint, style))


def notice(provider: str, style: ConstraintStyle, kinds: Iterable[str] = ("grammar",)) -> str:
    """The one line a command prints when `--decoding grounded` meets an endpoint that cannot
    constrain some of what it asks ("" when it can)."""
    kinds = tuple(kinds)
    if style is ConstraintStyle.NONE:
        return (f"{provider}: this endpoint cannot constrain decoding (OpenAI's completions API takes no "
                f"grammar or schema; set openai.constraints in config/llm.yaml for a llama.cpp, vLLM or "
                f"Ollama server): --decoding grounded falls back to free decoding")
    if style is ConstraintStyle.OLLAMA and "grammar" in kinds:
        return (f"{provider}: Ollama's `format` takes a JSON schema, not a grammar: grounded goals and "
                f"choices fall back to free decoding")
    return ""


def effective_decoding(provider: object, decoding: Decoding) -> tuple[Decoding, str]:
    """The decoding a client's provider can serve, and the one line to say when it cannot:
    grounded with an endpoint that takes no grammar falls back to free decoding. A provider
    without a `constraints` style (the offline stand-in, a replayed cassette) reads the
    constraint itself."""
    if decoding is not Decoding.GROUNDED:
        return decoding, ""
    inner = getattr(provider, "inner", provider)  # an experiment's answer-sharing wrapper
    style = getattr(inner, "constraints", None)
    if not isinstance(style, ConstraintStyle):
        return decoding, ""
    line = notice(str(getattr(inner, "name", "the LLM")), style)
    return (Decoding.FREE, line) if line else (decoding, "")


def resolve_decoding(value: str | Decoding | None, llm_spec: str | None, provider: object, *,
                     supported: bool = True, what: str = "") -> tuple[Decoding, str]:
    """What a `decoding` setting (a node's parameter, a command's option: auto | free | grounded)
    means for a client of `llm_spec` on `provider`, and the one line to say when grounded was asked
    for and is not given: the protocol has no grounded form (`supported` False, `what` names it)
    or the endpoint cannot constrain. Never silently free."""
    decoding = parse_decoding(value, llm_spec)
    if decoding is Decoding.GROUNDED and not supported:
        return Decoding.FREE, f"decoding grounded: {what or 'this protocol'} has no grounded form yet; free decoding"
    return effective_decoding(provider, decoding)
