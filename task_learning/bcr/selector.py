"""Request/response action selection for callers that run the actions themselves (the action
selector node, the planner): one BCR session per goal set, kept across requests.

Each request carries the remaining goals, the world as it is now and the outcomes so far; the
newest outcome is booked against the action proposed last. A request whose goals are not part
of the current session's goals, or whose newest outcome is not for the proposed action, starts a
new session (the caller started over).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from task_learning.bcr.agent import MAX_ACTIONS, BCRAgent, SelectionEngine
from task_learning.bcr.domain import Domain
from task_learning.bcr.engines import LLMEngine
from task_learning.bcr.prompt import build_request, match_candidate, parse_answer
from task_learning.bcr.tasks import check_goals
from task_learning.errors import TaskLearningError
from task_learning.types import ActionCall, ActionOutcome, GoalLiteral, LLMUsage

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient

log = logging.getLogger(__name__)


@dataclass
class SelectorAnswer:
    success: bool
    message: str
    call: ActionCall | None = None
    action: str = ""  # the BCR action ("CookObject(BreadSliced|1, Toaster|1)")
    rationale: str = ""
    usage: LLMUsage = field(default_factory=LLMUsage)


class ActionSelector:
    """Keeps the current BCR session and answers select-next-action requests."""

    def __init__(self, domain: Domain, engine: SelectionEngine, client: LLMClient | None = None,
                 max_actions: int = MAX_ACTIONS, search_action: str = "VisualSearch") -> None:
        self.domain = domain
        self.engine = engine
        self.client = client
        self.max_actions = max_actions
        self.search_action = search_action
        self.agent: BCRAgent | None = None
        self._proposed: ActionCall | None = None
        self.sessions = 0

    def select(self, goals: Sequence[GoalLiteral], metadata: Mapping[str, Any],
               history: Sequence[ActionOutcome] = (), blocking_conditions: Sequence[str] = (),
               candidates: Sequence[ActionCall] = ()) -> SelectorAnswer:
        if not goals:
            return SelectorAnswer(False, "no goal literals given")
        before = self._usage()
        try:
            check_goals(list(goals), self.domain, metadata)
        except TaskLearningError as exc:
            return SelectorAnswer(False, str(exc))
        if candidates:
            return self._pick_given(goals, candidates, history, blocking_conditions, before)
        last = history[-1] if history else None
        if not self._same_session(goals, last):
            self._new_session(goals)
            last = None
        agent = self.agent
        assert agent is not None
        for text in blocking_conditions:
            if text and text not in agent.errors:
                agent.errors.append(text)
        proposal = agent.next_action(metadata, last)
        usage = self._usage_since(before)
        if proposal is None:
            self._proposed = None
            if agent.status == "success":
                return SelectorAnswer(False, "all goal literals hold: nothing left to do",
                                      usage=usage)
            return SelectorAnswer(False, f"BCR failed: {agent.failure}", usage=usage)
        action, call = proposal
        if call.action == "VisualSearch" and self.search_action != "VisualSearch":
            # the backend's own exploration macro ("Pass" in the plain symbolic world)
            keeps_target = self.search_action == "NavigateToObject"
            call = ActionCall(self.search_action, call.object_id if keeps_target else "")
        self._proposed = call
        record = agent.log[-1] if agent.log else None
        rationale = f"{action} (after {len(agent.log)} step(s))"
        if record is not None:
            rationale += f"; last: {record.action} -> {record.outcome}"
        return SelectorAnswer(True, "ok", call=call, action=str(action), rationale=rationale,
                              usage=usage)

    def tree_records(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, str]:
        """(nodes, edges, goal text, dot) of the current tree, for publishing."""
        if self.agent is None:
            return [], [], "", ""
        nodes, edges = self.agent.tree.to_records()
        goal = " & ".join(str(g) for g in self.agent.goals)
        return nodes, edges, goal, self.agent.to_dot()

    # ---- internals ---------------------------------------------------------------------------
    def _same_session(self, goals: Sequence[GoalLiteral], last: ActionOutcome | None) -> bool:
        agent = self.agent
        if agent is None or agent.status != "running":
            return False
        if not set(goals) <= set(agent.goals):
            return False
        if self._proposed is None:
            return True
        if last is None:
            return False
        return (last.call.action, last.call.object_id) == (self._proposed.action,
                                                            self._proposed.object_id)

    def _new_session(self, goals: Sequence[GoalLiteral]) -> None:
        self.agent = BCRAgent(self.domain, list(goals), self.engine, max_actions=self.max_actions)
        self._proposed = None
        self.sessions += 1
        log.info("BCR session %d for %s", self.sessions, ", ".join(map(str, goals)))

    def _pick_given(self, goals: Sequence[GoalLiteral], candidates: Sequence[ActionCall],
                    history: Sequence[ActionOutcome], errors: Sequence[str],
                    before: LLMUsage) -> SelectorAnswer:
        """The caller supplied the candidates: one is chosen as is (the heuristic, having no
        tree for them, takes the first; a single candidate is taken without asking)."""
        texts = [str(c) for c in candidates]
        if len(candidates) == 1 or not isinstance(self.engine, LLMEngine):
            return SelectorAnswer(True, "ok", call=candidates[0], action=texts[0],
                                  rationale="only candidate" if len(candidates) == 1 else
                                  "first candidate (heuristic)")
        notes = list(errors)
        client = self.client if self.client is not None else self.engine.client  # the llm engine's own
        for _ in range(self.engine.max_reasks + 1):
            request = build_request(list(goals), [], texts,
                                    [f"{o.call} -> {'ok' if o.success else 'failed'}"
                                     for o in history][-5:], notes, scope=self.engine.scope)
            response = client.complete(request)
            if not response.ok:
                return SelectorAnswer(False, f"LLM call failed: {response.error}",
                                      usage=self._usage_since(before))
            choice = match_candidate(parse_answer(response.text), texts)
            if choice is not None:
                return SelectorAnswer(True, "ok", call=candidates[texts.index(choice)],
                                      action=choice, rationale=response.text,
                                      usage=self._usage_since(before))
            notes.append(f"Your last choice '{parse_answer(response.text)}' was not in the list "
                         "of candidate actions.")
        return SelectorAnswer(False, "the LLM named no candidate after re-asking",
                              usage=self._usage_since(before))

    def _usage(self) -> LLMUsage:
        if self.client is None:
            return LLMUsage()
        return self.client.usage_snapshot()

    def _usage_since(self, before: LLMUsage) -> LLMUsage:
        if self.client is None:
            return LLMUsage()
        return self.client.usage_since(before)


def parse_goal_texts(texts: Sequence[str]) -> list[GoalLiteral]:
    """'inside(Mug|1, Sink|1)', 'not dirty(Mug|1)' -> GoalLiterals (TaskLearningError if bad)."""
    from task_learning.bcr.literals import LiteralSyntaxError, parse_literal

    out = []
    for text in texts:
        try:
            out.append(parse_literal(text))
        except LiteralSyntaxError as exc:
            raise TaskLearningError(str(exc)) from None
    return out


__all__ = ["ActionSelector", "SelectorAnswer", "parse_goal_texts"]
