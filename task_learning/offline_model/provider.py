"""OfflineProvider: a deterministic stand-in for a language model, for demos and tests.

It is NOT a language model. It answers each method's prompts with one responder per method:
STARS goal and Selection requests from hand-written household knowledge (stars/, over
config/offline_model/), decoding a sentence token by token with GPT-like tokens and top
alternatives, including plausible answers the robot cannot use (places the scene may lack, words
outside the robot's vocabulary, states it cannot check), so that every STARS stage has work to do;
BCR action choices (bcr.py); bootstrapped productions (productions.py); task anticipation
(anticipation.py); LLM-State (llm_state.py). It reads the request's structured context (task,
object, place, prefix, repair feedback, user context), never a scene's preferred destinations or
any other ground truth. The same request always gets the same answer, in any process.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError
from task_learning.offline_model import anticipation, bcr, llm_state, productions
from task_learning.offline_model.counting import count_prompt_tokens
from task_learning.offline_model.stars.knowledge import Knowledge, load_knowledge
from task_learning.offline_model.stars.responder import GOAL_TYPES, SELECTION_TYPES, StarsResponder

LABEL = "offline (deterministic, not a language model)"
ANTICIPATION_TYPES = ("anticipation", "base8_action")
BCR_TYPES = ("bcr_selection",)

Responder = Callable[[LLMRequest], LLMResponse]


class OfflineProvider:
    """LLMProvider over the offline responders (see module docstring).

    `name` is the provider spec ("offline"); `model` and `label` say honestly what it is.
    """

    name = "offline"
    model = LABEL
    label = LABEL

    def __init__(self, knowledge_dir: str | Path | None = None, knowledge: Knowledge | None = None,
                 sentence_cache_size: int = 512) -> None:
        self.knowledge = knowledge if knowledge is not None else load_knowledge(knowledge_dir)
        self.stars = StarsResponder(self.knowledge, sentence_cache_size)
        self._responders: dict[str, Responder] = {}
        for kinds, responder in (
            (GOAL_TYPES, self.stars.goal),
            (SELECTION_TYPES, self.stars.selection),
            (BCR_TYPES, _bcr),
            (productions.PROMPT_TYPES, _productions),
            (ANTICIPATION_TYPES, _anticipation),
            (llm_state.PROMPT_TYPES, llm_state.respond),
        ):
            self._responders.update(dict.fromkeys(kinds, responder))

    # ------------------------------------------------------------------ contract
    def complete(self, request: LLMRequest, timeout_s: float = 30.0) -> LLMResponse:
        """Answer one request; raises ProviderError for a request it cannot serve."""
        responder = self._responders.get(request.prompt_type)
        if responder is None:
            raise ProviderError(f"offline model: unsupported prompt_type {request.prompt_type!r} "
                                f"(expected one of {', '.join(self._responders)})")
        return responder(request)

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float = 30.0) -> list[LLMResponse]:
        """A list of requests in one "round trip" (what a list-prompt completions request is to a
        real server): each answered exactly as alone, so batching never changes an answer."""
        return [self.complete(request, timeout_s) for request in requests]


def _productions(request: LLMRequest) -> LLMResponse:
    response = productions.respond(request)
    response.prompt_tokens = count_prompt_tokens(request)
    return response


def _bcr(request: LLMRequest) -> LLMResponse:
    response = bcr.respond(request)
    if not response.prompt_tokens:
        response.prompt_tokens = count_prompt_tokens(request)
    return response


def _anticipation(request: LLMRequest) -> LLMResponse:
    answer = anticipation.anticipation_response if request.prompt_type == "anticipation" else anticipation.base8_response
    return answer(request, count_prompt_tokens(request))
