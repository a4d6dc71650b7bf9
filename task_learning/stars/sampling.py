"""Template-based prompting (TBP) as the STARS paper describes it: several responses to one prompt,
sampled at varying temperatures, deduplicated and ranked by the mean probability of their tokens.

The temperatures come from `config/prompts/goal.yaml` (`tbp_sampling`). Every sample is its own
request (temperature and sample index in the request, so neither the cache nor single-flight
merges two samples); an OpenAI-compatible endpoint samples them itself, the offline model with
a sampler seeded from the request. Responses go through the Search Tree's `TreeState`, so
deduplication, scores and counts are the same as in the tree.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.stars.prompts import SamplingSettings
from task_learning.stars.tree import Steps, TreeRoot, TreeState
from task_learning.types import GoalCandidate

log = logging.getLogger(__name__)


def sample_request(request: LLMRequest, temperature: float, sample: int) -> LLMRequest:
    """`request` at `temperature`, tagged with its sample index (part of the cache key)."""
    context = dict(request.context or {})
    context["sample"] = sample
    return replace(request, temperature=float(temperature), context=context)


def sample_steps(root: TreeRoot, sampling: SamplingSettings, state: TreeState
                 ) -> Steps[list[GoalCandidate]]:
    """Yield one request per planned (temperature, sample) (one level: they are independent),
    receive the responses in the same order and record each response's text with the
    probabilities of its tokens. Returns the new distinct candidates, in sending order (the
    first occurrence of a text keeps its score)."""
    planned = sampling.plan()
    plan = planned[: state.remaining_requests]
    state.counts["capped"] += len(planned) - len(plan)
    base = root.build_request(root.root_type, root.start)
    requests = [sample_request(base, t, i) for t, i in plan]
    state.counts["requests"] += len(requests)
    responses = (yield requests) if requests else []
    if len(responses) != len(requests):  # a broken sender must not shift answers between samples
        responses = [LLMResponse(text="", error=f"{len(responses)} answers for {len(requests)} requests")
                     for _ in requests]
    first_new = len(state.candidates)
    for response in responses:
        if not response.ok:
            state.counts["failed_requests"] += 1
            state.errors.append(response.error)
            continue
        text = response.text if response.text else "".join(t.token for t in response.tokens)
        if not response.tokens and text.strip():
            state.counts["no_logprobs"] += 1
        state.add_response(root.start + text, [t.prob for t in response.tokens], root, root.root_source,
                           root.parent_id, 0, True)
    return state.candidates[first_new:]
