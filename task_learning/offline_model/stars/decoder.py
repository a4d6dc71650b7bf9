"""Decoding over the offline model's sentence set, with top alternatives.

At each position the next-token distribution is the probability mass of the sentences that
continue the text so far with that token (sentence ends split over the end tokens), plus a little
deterministic "filler" mass on generic tokens where the sentence is settled, so the alternative
lists look like a real model's. At temperature 0 the chosen token is the most probable one; ties
go to the lexicographically smaller token so that nothing depends on dict order. Above 0 the token
is drawn from the sentence tokens' probabilities raised to 1/temperature (the fillers only
decorate the alternative lists and are never drawn), with a generator the caller seeds; the
reported log probabilities stay the model's own, untempered, as an endpoint reports them.
"""
from __future__ import annotations

import math
import random
from bisect import bisect_right
from dataclasses import dataclass

from task_learning.llm.base import TokenLogprob
from task_learning.offline_model.hashing import unit_hash
from task_learning.offline_model.stars.knowledge import Language
from task_learning.offline_model.stars.sentences import Sentence


@dataclass
class Decoded:
    text: str
    tokens: list[TokenLogprob]
    finish_reason: str  # stop | length
    generated: int  # tokens produced, a stop token included (what a server bills)
    matched_prefix: bool


def _match(sentences: list[Sentence], prefix: str) -> tuple[list[Sentence], str, bool]:
    """Sentences whose text starts with the prefix: exactly, then with a leading space added,
    then ignoring case. Returns (matches, the prefix as it matched, ended) where `ended` says the
    prefix already contains a sentence end."""
    variants = [prefix]
    if prefix and not prefix.startswith(" "):
        variants.append(" " + prefix)
    for fold in (False, True):
        for variant in variants:
            key = variant.lower() if fold else variant
            hits = [s for s in sentences if (s.text.lower() if fold else s.text).startswith(key)]
            if hits:
                return hits, variant, False
            for s in sentences:
                text = s.text.lower() if fold else s.text
                if key.startswith(text) and key[len(text):len(text) + 1] in (".", "\n", "("):
                    return [], variant, True
    return [], prefix, False


def _next_piece(sentence: Sentence, offset: int) -> str:
    """The token of `sentence` starting at character `offset`, or the rest of the token the offset
    falls inside (a prefix may end mid-token, e.g. "... in the cupb")."""
    index = bisect_right(sentence.ends, offset)
    if index >= len(sentence.ends):
        return ""
    return sentence.text[offset:sentence.ends[index]]


def decode(
    sentences: list[Sentence],
    prefix: str,
    language: Language,
    *,
    max_tokens: int,
    stop: tuple[str, ...],
    top_k: int,
    salt: str,
    temperature: float = 0.0,
    rng: random.Random | None = None,
) -> Decoded:
    """Continue `prefix`: greedily at temperature 0, else sampled with `rng`. `salt` (the request's
    context) seeds the filler variation."""
    matches, matched_prefix, ended = _match(sentences, prefix)
    if ended or not matches:
        # Nothing of ours continues this prefix: end the sentence at once, like a model that
        # has nothing to add. The end token hits the stop sequence, so the text is empty.
        tokens = [] if ended else list(language.end_tokens)[:1]
        return _finish_with_end(tokens, stop, language, top_k, found=not ended and bool(sentences))
    offset = len(matched_prefix)
    text = ""
    out: list[TokenLogprob] = []
    generated = 0
    while generated < max_tokens:
        dist: dict[str, float] = {}
        for s in matches:
            if offset + len(text) >= len(s.text):
                for end_token, w in language.end_tokens.items():
                    dist[end_token] = dist.get(end_token, 0.0) + s.prob * w
            else:
                piece = _next_piece(s, offset + len(text))
                dist[piece] = dist.get(piece, 0.0) + s.prob
        total = sum(dist.values())
        if total <= 0:
            return Decoded(text, out, "stop", generated, True)
        dist = {t: p / total for t, p in dist.items()}
        sampled = _sample(dist, temperature, rng)
        dist = _with_fillers(dist, language, salt, matched_prefix + text)
        chosen = sampled if sampled is not None else min(dist, key=lambda t: (-dist[t], t))
        out.append(_token_logprob(chosen, dist, top_k))
        generated += 1
        new_text = text + chosen
        cut = _stop_index(new_text, len(text), stop)
        if cut is not None:
            out.pop()
            return Decoded(new_text[:cut], out, "stop", generated, True)
        text = new_text
        if chosen in language.end_tokens:
            return _after_end(text, out, generated, stop, language, top_k)
        matches = [s for s in matches if s.text.startswith(matched_prefix + text)
                   or s.text.lower().startswith((matched_prefix + text).lower())]
    return Decoded(text, out, "length", generated, True)


def _sample(dist: dict[str, float], temperature: float, rng: random.Random | None) -> str | None:
    """A token drawn from dist ** (1 / temperature), or None for greedy decoding."""
    if temperature <= 0 or rng is None or len(dist) == 1:
        return None
    tokens = sorted(dist)  # a fixed order: the draw depends on the seed only
    top = max(dist.values())
    weights = [(dist[t] / top) ** (1.0 / temperature) for t in tokens]
    return rng.choices(tokens, weights=weights, k=1)[0]


def _after_end(text, out, generated, stop, language, top_k) -> Decoded:
    """The sentence ended and no stop sequence caught it: emit the end-of-result marker."""
    for token in language.after_end:
        new_text = text + token
        generated += 1
        cut = _stop_index(new_text, len(text), stop)
        if cut is not None:
            return Decoded(new_text[:cut], out, "stop", generated, True)
        out.append(TokenLogprob(token, math.log(0.98), ((token, math.log(0.98)),) if top_k else ()))
        text = new_text
    return Decoded(text, out, "stop", generated, True)


def _finish_with_end(tokens, stop, language, top_k, found: bool) -> Decoded:
    if not tokens:
        return Decoded("", [], "stop", 0, found)
    token = tokens[0]
    cut = _stop_index(token, 0, stop)
    if cut is not None:
        return Decoded(token[:cut], [], "stop", 1, found)
    tl = TokenLogprob(token, math.log(0.9), ((token, math.log(0.9)),) if top_k else ())
    return Decoded(token, [tl], "stop", 1, found)


def _stop_index(text: str, old_len: int, stop: tuple[str, ...]) -> int | None:
    """Earliest index of a stop sequence that ends inside the newly added characters."""
    best = None
    for s in stop:
        if not s:
            continue
        start = max(0, old_len - len(s) + 1)
        idx = text.find(s, start)
        if idx != -1 and (best is None or idx < best):
            best = idx
    return best


def _with_fillers(dist: dict[str, float], language: Language, salt: str, position: str) -> dict[str, float]:
    """Move a small deterministic mass to one or two generic tokens not already in `dist`."""
    low, high = language.filler_mass
    eps = low + (high - low) * unit_hash("fill", salt, position)
    pool = [t for t in language.filler_tokens if t not in dist]
    if eps <= 0 or not pool:
        return dist
    first = pool[int(unit_hash("f1", salt, position) * len(pool))]
    rest = [t for t in pool if t != first]
    scaled = {t: p * (1.0 - eps) for t, p in dist.items()}
    if rest:
        second = rest[int(unit_hash("f2", salt, position) * len(rest))]
        scaled[first] = eps * 0.7
        scaled[second] = eps * 0.3
    else:
        scaled[first] = eps
    return scaled


def _token_logprob(chosen: str, dist: dict[str, float], top_k: int) -> TokenLogprob:
    ranked = sorted(dist.items(), key=lambda kv: (-kv[1], kv[0]))[: max(0, top_k)]
    top = tuple((t, math.log(p)) for t, p in ranked if p > 0)
    if top_k and chosen not in {t for t, _ in top}:
        top = ((chosen, math.log(dist[chosen])),) + top[: top_k - 1]
    return TokenLogprob(chosen, math.log(dist[chosen]), top)
