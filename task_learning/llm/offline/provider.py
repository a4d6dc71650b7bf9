"""OfflineProvider: a deterministic stand-in for a language model, for demos and tests.

It is NOT a language model. It answers goal requests from hand-written household knowledge
(config/offline_model/) by decoding a sentence token by token with GPT-like tokens and top
alternatives, including plausible answers the robot cannot use (places the scene may lack, words
outside the robot's vocabulary, states it cannot check), so that every STARS stage has work to do.
It reads the request's structured context (task, object, place, prefix, repair feedback, user
context), never a scene's preferred destinations or any other ground truth.

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
from pathlib import Path
from typing import Any, Mapping

from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError, TokenLogprob
from task_learning.llm.offline.anticipation import anticipation_response, base8_response
from task_learning.llm.offline.bcr import respond as bcr_respond
from task_learning.llm.offline.llm_state import PROMPT_TYPES as LLM_STATE_TYPES
from task_learning.llm.offline.llm_state import respond as llm_state_respond
from task_learning.llm.offline.decoder import decode
from task_learning.llm.offline.feedback import parse_feedback
from task_learning.llm.offline.knowledge import Knowledge, load_knowledge
from task_learning.llm.offline.productions import PROMPT_TYPES as PRODUCTION_TYPES
from task_learning.llm.offline.productions import respond as productions_respond
from task_learning.llm.offline.selection import answer_tokens, rate_options
from task_learning.llm.offline.sentences import GoalQuery, Sentence, build_sentences
from task_learning.llm.tokens import count_chat_tokens, count_tokens

log = logging.getLogger(__name__)

LABEL = "offline (deterministic, not a language model)"
GOAL_TYPES = ("initial", "recurse", "repair", "repair_recurse")
SEED_002_TYPES = ("anticipation", "base8_action")
_AWARE = re.compile(r"Aware of (?:an? |the )?(.+?) (in|on) (?:the )?(.+?)\.", re.IGNORECASE)


def count_prompt_tokens(request: LLMRequest) -> int:
    """The request's prompt tokens as cl100k_base counts them (chat: with OpenAI's per-message
    overhead)."""
    if request.is_chat:
        return count_chat_tokens(request.messages)
    return count_tokens(request.prompt)


class OfflineProvider:
    """LLMProvider over the offline household-knowledge model (see module docstring).

    `name` is the provider spec ("offline"); `model` and `label` say honestly what it is.
    """

    name = "offline"
    model = LABEL
    label = LABEL

    def __init__(self, knowledge_dir: str | Path | None = None, knowledge: Knowledge | None = None,
                 sentence_cache_size: int = 512) -> None:
        self.knowledge = knowledge if knowledge is not None else load_knowledge(knowledge_dir)
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

    # ------------------------------------------------------------------ contract
    def complete(self, request: LLMRequest, timeout_s: float = 30.0) -> LLMResponse:
        """Answer one request; raises ProviderError for a request it cannot serve."""
        kind = request.prompt_type
        if kind in GOAL_TYPES:
            return self._goal(request)
        if kind == "selection":
            return self._selection(request)
        if kind == "bcr_selection":
            return self._bcr(request)
        if kind in LLM_STATE_TYPES:
            return llm_state_respond(request)  # seed 003's three prompts (offline/llm_state.py)
        if kind in SEED_002_TYPES:  # task anticipation (offline/anticipation.py)
            answer = anticipation_response if kind == "anticipation" else base8_response
            return answer(request, count_prompt_tokens(request))
        if kind in PRODUCTION_TYPES:
            return self._productions(request)  # seed 001's prompts (offline/productions.py)
        known = GOAL_TYPES + ("selection", "bcr_selection") + LLM_STATE_TYPES + SEED_002_TYPES + PRODUCTION_TYPES
        raise ProviderError(f"offline model: unsupported prompt_type {kind!r} (expected one of {', '.join(known)})")

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float = 30.0) -> list[LLMResponse]:
        """A list of requests in one "round trip" (what a list-prompt completions request is to a
        real server): each answered exactly as alone, so batching never changes an answer."""
        return [self.complete(request, timeout_s) for request in requests]

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

    def _goal(self, request: LLMRequest) -> LLMResponse:
        query = self.goal_query(request)
        sentences = self.sentences_for(query)
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
    def _selection(self, request: LLMRequest) -> LLMResponse:
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

    # ------------------------------------------------------------------ seed 001 productions
    def _productions(self, request: LLMRequest) -> LLMResponse:
        """Production-rule prompts (seed 001) live in offline/productions.py."""
        response = productions_respond(request)
        response.prompt_tokens = count_prompt_tokens(request)
        return response

    # ------------------------------------------------------------------ BCR
    def _bcr(self, request: LLMRequest) -> LLMResponse:
        """BCR action selection lives in offline/bcr.py."""
        response = bcr_respond(request)
        if not response.prompt_tokens:
            response.prompt_tokens = count_prompt_tokens(request)
        return response
