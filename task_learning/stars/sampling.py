"""Template-based prompting (TBP) as seed 000 describes it: several responses to one prompt,
sampled at varying temperatures, deduplicated and ranked by the mean probability of their tokens.

The temperatures come from `config/prompts/goal.yaml` (`tbp_sampling`). Every sample is its own
request (temperature and sample index in the request, so neither the cache nor single-flight
merges two samples); an OpenAI-compatible endpoint samples them itself, the offline model with
a sampler seeded from the request. Responses go through the Search Tree's `TreeState`, so
deduplication, scores and counts are the same as in the tree.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.stars.prompts import SamplingSettings
from task_learning.stars.tree import CompletionClient, TreeRoot, TreeState
from task_learning.types import GoalCandidate

log = logging.getLogger(__name__)


def _send(client: CompletionClient, request: LLMRequest) -> LLMResponse:
    """The client never raises for provider failures; a bug below it becomes a failed sample."""
    try:
        return client.complete(request)
    except Exception as exc:  # noqa: BLE001 (a bug below us becomes a failed sample)
        log.error("LLM request failed unexpectedly: %s", exc)
        return LLMResponse(text="", error=f"client raised {type(exc).__name__}: {exc}")


def sample_request(request: LLMRequest, temperature: float, sample: int) -> LLMRequest:
    """`request` at `temperature`, tagged with its sample index (part of the cache key)."""
    context = dict(request.context or {})
    context["sample"] = sample
    return replace(request, temperature=float(temperature), context=context)


def sample_responses(client: CompletionClient, root: TreeRoot, sampling: SamplingSettings,
                     state: TreeState, executor: ThreadPoolExecutor | None = None
                     ) -> list[GoalCandidate]:
    """Send the root prompt once per planned (temperature, sample); record each response's text
    with the probabilities of its tokens. Returns the new distinct candidates, in sending order
    (the first occurrence of a text keeps its score)."""
    plan = sampling.plan()[: state.remaining_requests]
    state.counts["capped"] += max(0, len(sampling.plan()) - len(plan))
    base = root.build_request(root.root_type, "")
    requests = [sample_request(base, t, i) for t, i in plan]
    state.counts["requests"] += len(requests)
    if executor is not None and len(requests) > 1:
        futures = [executor.submit(_send, client, r) for r in requests]
        responses = [f.result() for f in futures]  # in sending order, whatever finished first
    else:
        responses = [_send(client, r) for r in requests]
    first_new = len(state.candidates)
    for response in responses:
        if not response.ok:
            state.counts["failed_requests"] += 1
            state.errors.append(response.error)
            continue
        text = response.text if response.text else "".join(t.token for t in response.tokens)
        if not response.tokens and text.strip():
            state.counts["no_logprobs"] += 1
        state.add_response(text, [t.prob for t in response.tokens], root, root.root_source,
                           root.parent_id, 0, True)
    return state.candidates[first_new:]
