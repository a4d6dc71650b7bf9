"""LLM-State as a way to reach goal literals, beside BCR (the planner's `strategy` parameter).

BCR (the BCR paper) picks one action at a time from a tree of blocking conditions; this strategy runs
the LLM-State paper's Algorithm 1 instead: the goal literals become the goal text (thor_world.goal_text),
the world is any AI2-THOR-speaking backend seen through `ThorWorld`, and success is the literals
holding in the world's metadata, not the policy's belief. Every state the loop builds goes to
`on_state` (the planner publishes it on its state topic).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from task_learning.bcr.literals import StateView, holds
from task_learning.llm_state.agent import METHODS, Completer, LLMStateAgent, TrialResult
from task_learning.llm_state.household import TaskSpec
from task_learning.llm_state.state import OpenState
from task_learning.llm_state.thor_world import ThorWorld, goal_text
from task_learning.types import ActionOutcome, GoalLiteral
from task_learning.world.backend import WorldBackend

log = logging.getLogger(__name__)

STRATEGIES = ("bcr", "llm_state")


@dataclass
class Reached:
    success: bool
    message: str = ""
    trial: TrialResult | None = None


class LLMStateStrategy:
    """Reaches goal literals with the LLM-State loop; one fresh state per reach."""

    def __init__(self, client: Completer, *, method: str = "ours", room: str = "",
                 on_state: Callable[[OpenState, str], None] | None = None) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown LLM-State method {method!r} (known: {', '.join(METHODS)})")
        self.client = client
        self.method = method
        self.room = room
        self.on_state = on_state  # (state, goal text)
        self.last: TrialResult | None = None

    def reach(self, world: WorldBackend, literals: list[GoalLiteral], *, max_actions: int,
              on_outcome: Callable[[ActionOutcome], None] | None = None) -> Reached:
        def check(metadata: object) -> bool:
            view = StateView(metadata)  # type: ignore[arg-type]
            return all(holds(lit, view) for lit in literals)

        thor = ThorWorld(world, check, room=self.room, on_outcome=on_outcome)
        goal = goal_text(literals, thor.name_of)
        task = TaskSpec(name=goal, goal=goal, level="simple", cap=max_actions, check=())
        on_state = None
        if self.on_state is not None:
            publish = self.on_state

            def on_state(state: OpenState) -> None:
                publish(state, goal)

        agent = LLMStateAgent(self.client, self.method, on_state=on_state)
        trial = self.last = agent.run(thor, task)
        if self.on_state is not None:
            self.on_state(agent.state, goal)  # the final state, after the last actions
        log.info("llm_state %r: %s after %d step(s) (%s)", goal, "reached" if trial.success else "not reached",
                 trial.steps, trial.end_reason)
        message = "" if trial.success else f"LLM-State did not reach the goal: {trial.end_reason}"
        return Reached(trial.success, message, trial)
