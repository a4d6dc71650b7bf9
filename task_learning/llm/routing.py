"""Where a client sends each prompt type: which model, by chat or by completions.

A provider that routes (the openai provider: `openai.selection_prompt_types` in config/llm.yaml go
to `selection_model` by `selection_api`, the rest to `completion_model` by completions) says so
through `model_for` and `uses_chat`; commands print it so a user sees, before a run spends
anything, which model answers which prompt. A provider that does not route (the offline stand-in,
a replay) is reported as itself.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from task_learning.llm.base import LLMRequest


@runtime_checkable
class RoutingProvider(Protocol):
    def model_for(self, request: LLMRequest) -> str:
        ...

    def uses_chat(self, request: LLMRequest) -> bool:
        ...


class HasProvider(Protocol):
    @property
    def provider(self) -> object:
        ...


def routes(client: HasProvider, prompt_types: Sequence[str]) -> dict[str, dict[str, str]]:
    """prompt type -> {"model", "api"} (api: chat | completions), or {"provider"} when the
    provider does not route by prompt type."""
    provider = client.provider
    out: dict[str, dict[str, str]] = {}
    for kind in prompt_types:
        if isinstance(provider, RoutingProvider):
            request = LLMRequest(prompt_type=kind)
            out[kind] = {"model": provider.model_for(request),
                         "api": "chat" if provider.uses_chat(request) else "completions"}
        else:
            out[kind] = {"provider": str(getattr(provider, "name", type(provider).__name__))}
    return out


def describe_routes(client: HasProvider, prompt_types: Sequence[str]) -> str:
    """One line: "llm_state_attention, llm_state_estimator -> chat gpt-4o-mini; x -> completions m"."""
    groups: dict[str, list[str]] = {}
    for kind, where in routes(client, prompt_types).items():
        label = f"{where['api']} {where['model']}" if "model" in where else f"provider {where['provider']}"
        groups.setdefault(label, []).append(kind)
    return "; ".join(f"{', '.join(kinds)} -> {label}" for label, kinds in groups.items())
