"""Shared pieces for the production-rule tests (the bootstrapped-productions paper): a scripted provider that answers with
given texts per prompt type and records every request, the appendix's lettuce state, and a tiny
world whose states are places."""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Iterable

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import LLMClient
from task_learning.productions.knowledge import GRIPPER, EnvKnowledge, Receptacle, Thing
from task_learning.productions.language import motor_form


class ScriptedProvider:
    """Answers each prompt type from its own queue of texts (the last one repeats)."""

    name = "scripted"
    model = "scripted answers (test)"

    def __init__(self, answers: dict[str, Iterable[str]]) -> None:
        self.queues = {kind: deque(texts) for kind, texts in answers.items()}
        self.requests: list[LLMRequest] = []
        self.counts: dict[str, int] = defaultdict(int)

    def complete(self, request: LLMRequest, timeout_s: float = 30.0) -> LLMResponse:
        self.requests.append(request)
        self.counts[request.prompt_type] += 1
        queue = self.queues.get(request.prompt_type)
        if not queue:
            return LLMResponse(text="", error=f"no scripted answer for {request.prompt_type}")
        text = queue.popleft() if len(queue) > 1 else queue[0]
        return LLMResponse(text=text, prompt_tokens=10, completion_tokens=5, finish_reason="stop")


def scripted_client(provider: ScriptedProvider) -> LLMClient:
    return LLMClient(provider, cache=None, max_retries=0, timeout_s=5.0)


def lettuce_state() -> EnvKnowledge:
    """The appendix's action-selection state (slice a/an lettuce, at the sink, lettuce in hand)."""
    return EnvKnowledge(
        location="SinkBasin_28084e25",
        receptacles={
            "SinkBasin_28084e25": Receptacle("SinkBasin_28084e25", "SinkBasin", 0.0, explored=True),
            "CounterTop4": Receptacle("CounterTop4", "CounterTop", 0.9, explored=True),
            "Fridge_683c888d": Receptacle("Fridge_683c888d", "Fridge", 2.1, openable=True, is_open=True, explored=True),
            "Cabinet_2fee59ce": Receptacle("Cabinet_2fee59ce", "Cabinet", 1.7, openable=True, is_open=True),
        },
        objects={
            "Lettuce_895e9ec5": Thing("Lettuce_895e9ec5", "Lettuce", GRIPPER, sliceable=True),
            "Cup_26e78d79": Thing("Cup_26e78d79", "Cup", "SinkBasin_28084e25"),
            "Egg_113844f2": Thing("Egg_113844f2", "Egg", "SinkBasin_28084e25", sliceable=True),
            "Apple_969aaa5d": Thing("Apple_969aaa5d", "Apple", "Fridge_683c888d", sliceable=True),
        },
        previous_tasks={"go to explore a/an sinkbasin_28084e25": True, "find a/an lettuce": True},
    )


class PlacesWorld:
    """A world whose state is where the robot stands: `move to X` goes there (if X is a place)."""

    def __init__(self, places: list[str], start: str) -> None:
        self.places = places
        self.location = start
        self.moves: list[str] = []

    def knowledge(self) -> EnvKnowledge:
        return EnvKnowledge(location=self.location,
                            receptacles={p: Receptacle(p, "Place", 0.0 if p == self.location else 1.0)
                                         for p in self.places})

    def motor_options(self) -> list[str]:
        return [f"move to {p}" for p in self.places]

    def execute(self, action: str) -> str:
        form = motor_form(action)
        if form is None or form[0] != "move to" or form[1]["target"] not in self.places:
            return f"cannot {action}"
        self.location = form[1]["target"]
        self.moves.append(self.location)
        return ""
