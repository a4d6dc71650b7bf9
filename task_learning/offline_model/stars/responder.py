"""The STARS prompts answered by the offline stand-in: goal requests (initial, recurse, repair,
repair_recurse) decoded from the finite sentence set of the request's object, and Selection
requests rated from the same household knowledge.

At temperature 0 (what the Search Tree asks for) decoding is greedy. Above 0 (TBP's several
samples) each token is drawn from the model's probabilities raised to 1/temperature, with a
generator seeded from the request (its context, prefix, temperature and sample index): the same
request always gets the same answer, in any process, and different samples differ.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import threading
from collections import OrderedDict
from typing import Any, Mapping

from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError, TokenLogprob
from task_learning.offline_model.counting import count_prompt_tokens
from task_learning.offline_model.stars.decoder import decode
from task_learning.offline_model.stars.feedback import parse_feedback
from task_learning.offline_model.stars.goals import ParsedGoal
from task_learning.offline_model.stars.knowledge import Knowledge
from task_learning.offline_model.stars.selection import answer_tokens, rate_options
from task_learning.offline_model.stars.sentences import GoalQuery, Sentence, build_sentences, tokenize

log = logging.getLogger(__name__)

GOAL_TYPES = ("initial", "recurse", "repair", "repair_recurse")
SELECTION_TYPES = ("selection",)
_AWARE = re.compile(r"Aware of (?:an? |the )?(.+?) (in|on) (?:the )?(.+?)\.", re.IGNORECASE)


class StarsResponder:
    """Goal and Selection answers over one Knowledge, with a small LRU of sentence sets."""

    def __init__(self, knowledge: Knowledge, sentence_cache_size: int = 512) -> None:
        self.knowledge = knowledge
        # The sentence set of a query does not depend on its prefix, so the many requests of one
        # search tree share it; a small LRU keeps repeated trees cheap (threads share it).
        self._sentences: OrderedDict[tuple, list[Sentence]] = OrderedDict()
        self._cache_size = max(0, int(sentence_cache_size))
        self._lock = threading.Lock()

    def sentences_for(self, query: GoalQuery) -> list[Sentence]:
        """Every sentence this query may be answered with, with probabilities (prefix ignored)."""
        key = (query.object, query.object_place, query.object_relation, query.system_context,
               query.feedback, query.repair_of)
        with self._lock:
            hit = self._sentences.get(key)
            if hit is not None:
                self._sentences.move_to_end(key)
                return hit
        avoid = parse_feedback(query.feedback, query.repair_of, query.object) if (query.feedback or query.repair_of) else None
        sentences = build_sentences(query, self.knowledge, avoid)
        with self._lock:
            self._sentences[key] = sentences
            while len(self._sentences) > self._cache_size:
                self._sentences.popitem(last=False)
        return sentences

    # ------------------------------------------------------------------ goals
    def goal_query(self, request: LLMRequest) -> GoalQuery:
        """The request's context as a GoalQuery; a missing object falls back to the prompt's last
        "Aware of <object> in|on <place>." line, a missing prefix to the text after "(RESULT)"."""
        ctx: Mapping[str, Any] = request.context or {}
        obj = str(ctx.get("object") or "").strip()
        place = str(ctx.get("object_place") or "").strip()
        relation = str(ctx.get("object_relation") or "").strip()
        text = request.prompt or "\n".join(c for _, c in request.messages)
        if not obj:
            found = _AWARE.findall(text)
            if found:
                obj, relation, place = found[-1]
        prefix = ctx.get("prefix")
        if prefix is None:
            prefix = text.rsplit("(RESULT)", 1)[1] if "(RESULT)" in text else ""
        system = ctx.get("system_context") or ()
        if isinstance(system, str):
            system = (system,)
        return GoalQuery(
            task=str(ctx.get("task") or ""), location=str(ctx.get("location") or ""),
            object=obj, object_place=place, object_relation=relation, prefix=str(prefix),
            repair_of=str(ctx.get("repair_of") or ""), feedback=str(ctx.get("feedback") or ""),
            system_context=tuple(str(s) for s in system),
        )

    def goal(self, request: LLMRequest) -> LLMResponse:
        query = self.goal_query(request)
        sentences = self.sentences_for(query)
        if request.constraint is not None and request.constraint.choices:
            sentences = constrained_sentences(sentences, request.constraint.choices)
        salt = json.dumps([query.object, query.object_place, query.feedback, query.repair_of,
                           list(query.system_context)])
        top_k = max(0, int(request.logprobs or 0))
        temperature = max(0.0, float(request.temperature or 0.0))
        rng = None
        if temperature > 0:
            sample = (request.context or {}).get("sample", 0)
            seed = hashlib.sha256(json.dumps([salt, query.prefix, temperature, str(sample)])
                                  .encode("utf-8")).digest()
            rng = random.Random(int.from_bytes(seed[:8], "big"))
        decoded = decode(sentences, query.prefix, self.knowledge.language,
                         max_tokens=max(0, int(request.max_tokens)), stop=tuple(request.stop),
                         top_k=top_k, salt=salt, temperature=temperature, rng=rng)
        if not decoded.matched_prefix and query.prefix:
            log.debug("offline model: nothing continues prefix %r for %s", query.prefix, query.object)
        tokens = decoded.tokens if top_k else [TokenLogprob(t.token, t.logprob, ()) for t in decoded.tokens]
        return LLMResponse(
            text=decoded.text, tokens=tokens, prompt_tokens=count_prompt_tokens(request),
            completion_tokens=decoded.generated, finish_reason=decoded.finish_reason,
        )

    # ------------------------------------------------------------------ selection
    def selection(self, request: LLMRequest) -> LLMResponse:
        ctx = request.context or {}
        options = ctx.get("options")
        if not isinstance(options, (list, tuple)) or not options:
            raise ProviderError("offline model: a selection request needs context['options'] "
                                "(a non-empty list of goal texts)")
        system = ctx.get("system_context") or ()
        if isinstance(system, str):
            system = (system,)
        answer = rate_options([str(o) for o in options], str(ctx.get("object") or ""),
                              str(ctx.get("object_place") or ""), tuple(str(s) for s in system),
                              self.knowledge)
        tokens = answer_tokens(answer, leading_space=not request.is_chat,
                               top_k=max(0, int(request.logprobs or 0)))
        return LLMResponse(
            text=tokens[0].token, tokens=tokens, prompt_tokens=count_prompt_tokens(request),
            completion_tokens=1, finish_reason="stop",
        )


def constrained_sentences(sentences: list[Sentence], choices: tuple[str, ...]) -> list[Sentence]:
    """What a grammar does to a model's distribution: the sentences outside the allowed choices
    are masked and the rest renormalised. When none of the stand-in's own sentences is allowed,
    every choice gets the same probability: it knows nothing about them (it is not a language
    model, and is not tuned toward any answer here)."""
    allowed = {" ".join(c.split()).lower(): c for c in choices}
    kept = [s for s in sentences if " ".join(s.text.split()).lower() in allowed]
    total = sum(s.prob for s in kept)
    if kept and total > 0:
        return [Sentence(s.tokens, s.prob / total, s.parts) for s in kept]
    return [Sentence(tuple(tokenize(c)), 1.0 / len(choices), ParsedGoal("", "", "")) for c in choices]
