"""Algorithm 1 of the LLM-State paper (LLM-State) and the baselines and ablations it is compared with.

Loop (Algorithm 1): until done, (1) attention adds key objects from the current observation,
(2) the estimator rebuilds the state from the whole history since step 0, (3) the policy returns a
plan of fewer than 20 primitives, executed in order; the first failed action breaks the plan and
the loop re-plans. The state is thus rebuilt after a failure and after a fully executed plan.

Where the paper is silent (documented choices):
* done: the run ends when the policy returns an empty plan (it believes the goal holds), when
  the step cap is reached (every executed action counts, failed ones too), or when an answer holds
  no parseable call (the clear reason is recorded); success is the task's goal check on the
  world's true state at the end;
* the estimator is not called while the history is empty (there is nothing to estimate yet);
* a plan longer than 20 calls is cut to 20; the rest counts as dropped (plan_too_long);
* a call on an object never observed (the appendix's "move(lightswitch3)") is executed and fails
  in the world, then the loop re-plans; such calls are counted (unknown_object_calls).

Methods: ours; no_summary and no_objects (Table II's ablations: the state without the summary /
without the object entries); no_states (Table I's "w/o States": observation and history straight
to the policy); inner_monologue (InnerMonologue-W: one action per call over a window of the last
INNER_MONOLOGUE_WINDOW actions); progprompt (the task as a program over the primitives and the
objects seen; after a failure it is continued from the steps run so far, each marked ok or FAILED).
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from task_learning.llm.answer_bounds import bound_for
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.constraints import Constraint
from task_learning.llm.prompt_templates import check_wording
from task_learning.llm_state import grounded
from task_learning.llm_state.calls import Call, ParsedAnswer, parse_attention, parse_estimator, parse_plan
from task_learning.llm_state.household import (
    Household,
    HouseholdWorld,
    Observation,
    StepResult,
    TaskSpec,
    load_household,
)
from task_learning.llm_state.prompts import (
    ATTENTION,
    ESTIMATOR,
    PLAN_LIMIT,
    POLICY,
    HistoryEntry,
    attention_prompt,
    estimator_prompt,
    policy_prompt,
    progprompt_prompt,
)
from task_learning.llm_state.state import OpenState

log = logging.getLogger(__name__)

METHODS = ("ours", "no_states", "inner_monologue", "progprompt", "no_summary", "no_objects")
STATEFUL_METHODS = ("ours", "no_summary", "no_objects")  # the methods that keep an open state
INNER_MONOLOGUE_WINDOW = 10  # the paper gives no size; ten actions, fixed before any run
MAX_ANSWER_TOKENS = 1500
TRANSCRIPT_KEPT = 12  # the first answers of a run, kept to show what the model wrote


class Completer(Protocol):
    """What the loop needs of an LLM client (task_learning.llm.client.LLMClient fits)."""

    def complete(self, request: LLMRequest) -> LLMResponse:
        ...


class EpisodeWorld(Protocol):
    """What the loop acts in: the household (HouseholdWorld) or an AI2-THOR-speaking backend
    seen through thor_world.ThorWorld."""

    hands: int
    map_name: str

    def observe(self) -> Observation:
        ...

    def execute(self, call: Call) -> StepResult:
        ...

    def check(self, task: TaskSpec) -> bool:
        ...


@dataclass
class TrialResult:
    """One run of one method on one task and map."""

    task: str
    map: str
    method: str
    success: bool = False
    steps: int = 0
    llm_calls: int = 0
    tokens: int = 0
    replans: int = 0
    dropped_calls: int = 0
    dropped: Counter[str] = field(default_factory=Counter)  # by kind
    unknown_object_calls: int = 0
    end_reason: str = ""
    llm_errors: int = 0
    action_log: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    runtime_s: float = 0.0
    prompt_tokens_last: dict[str, int] = field(default_factory=dict)
    transcript: list[dict[str, Any]] = field(default_factory=list)  # the run's first answers

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success, "steps": self.steps, "llm_calls": self.llm_calls,
                "tokens": self.tokens, "replans": self.replans, "dropped_calls": self.dropped_calls,
                "dropped_by_kind": dict(sorted(self.dropped.items())),
                "unknown_object_calls": self.unknown_object_calls, "end_reason": self.end_reason,
                "task": self.task, "map": self.map, "method": self.method,
                "llm_errors": self.llm_errors, "action_log": list(self.action_log),
                "final_state": self.state, "runtime_s": round(self.runtime_s, 4)}


class LLMStateAgent:
    """Runs one method's loop in one world; every model call goes through `client`."""

    def __init__(self, client: Completer, method: str = "ours", *, max_tokens: int = MAX_ANSWER_TOKENS,
                 on_state: Callable[[OpenState], None] | None = None, history_window: int | None = None,
                 temperature: float = 0.0, wording: str = "own", answers: str = "paper",
                 decoding: str = "free") -> None:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
        if not 0.0 <= temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {temperature}")
        self.client = client
        self.method = method
        self.max_tokens = max_tokens
        # The paper does not state its temperature; 0 (the default) makes a real model's runs as
        # repeatable as its server allows. Above 0 each run is its own draw (the request's context
        # carries the run, so the client's cache does not hand one run's answers to the next).
        self.temperature = temperature
        # own (default): the project's wording (prompts.py); paper: the appendix's (paper_prompts.py)
        self.wording = check_wording(wording)
        self.on_state = on_state  # e.g. a ROS node publishing the state topic
        # None: the paper's mode (the estimator reads the whole history at every rebuild). N: this
        # project's extension for long runs: the estimator reads the last state and the last N
        # actions, and the policy sees the last N actions (bench/bench_llm_state.py).
        if history_window is not None and history_window < 1:
            raise ValueError(f"history_window must be >= 1, got {history_window}")
        if history_window is not None and self.wording == "paper":
            raise ValueError("the paper's prompts read the whole history: history_window is this project's extension")
        self.history_window = history_window
        # paper: each call as the protocol has it (the prompt as is, max_tokens, no stop); bounded: a
        # base model's answers, with a cue, stops and the tokens the parser reads (llm/answer_bounds.py)
        self.answers = answers
        self.grounded = decoding == "grounded"  # bounded answers inside grammars (llm_state/grounded.py)
        bound_for("llm_state_policy", answers)  # refuses an unresolved or unknown choice now
        self.state = OpenState()

    # ------------------------------------------------------------------ model calls
    def _ask(self, kind: str, prompt: str, context: dict[str, Any], result: TrialResult, scope: str,
             trial: int = 0, constraint: Constraint | None = None) -> str:
        if self.temperature > 0:
            context = context | {"run": trial}
        protocol = "llm_state_progprompt" if kind == POLICY and self.method == "progprompt" else kind
        bound = bound_for(protocol, self.answers)
        goal = str(context.get("goal", ""))
        request = LLMRequest(prompt_type=kind, prompt=bound.prompt(prompt, goal) if bound else prompt,
                             max_tokens=bound.max_tokens if bound else self.max_tokens,
                             stop=bound.stop if bound else (), temperature=self.temperature, context=context,
                             scope=scope, constraint=constraint if bound and self.grounded and protocol == kind else None)
        response = self.client.complete(request)
        result.llm_calls += 1
        result.tokens += response.prompt_tokens + response.completion_tokens
        result.prompt_tokens_last[kind] = response.prompt_tokens
        if not response.ok:
            result.llm_errors += 1
            log.warning("%s call failed: %s", kind, response.error)
            return ""
        text = bound.answer(response.text, goal) if bound else response.text
        if len(result.transcript) < TRANSCRIPT_KEPT:
            result.transcript.append({"call": kind, "answer": text[:400],
                                      "completion_tokens": response.completion_tokens})
        return text

    @staticmethod
    def _count(result: TrialResult, kind: str, parsed: ParsedAnswer | None = None, rejected: int = 0) -> None:
        n = (len(parsed.dropped) if parsed else 0) + rejected
        if n:
            result.dropped[kind] += n
            result.dropped_calls += n

    # ------------------------------------------------------------------ the loop
    def run(self, world: EpisodeWorld, task: TaskSpec, *, cap: int | None = None, trial: int = 0) -> TrialResult:
        """One episode. `llm_calls` and `tokens` count every request the method made (a cache
        hit included: they measure what the method asks for); `trial` keeps the client's
        per-scope request cap per run."""
        started = time.perf_counter()
        result = TrialResult(task=task.name, map=world.map_name, method=self.method)
        limit = int(cap or task.cap)
        history: list[HistoryEntry] = []
        state = self.state = OpenState()
        scope = f"{task.name}@{world.map_name}/{self.method}#{trial}"
        first = True
        while result.steps < limit:
            obs = world.observe()
            recent = history[-self.history_window:] if self.history_window else history
            if self.method in STATEFUL_METHODS:
                self._estimate(state, obs, history, recent, world, task, result, scope, trial)
            text, ctx = self._policy_prompt(state, obs, history, recent, world, task)
            errors_before = result.llm_errors
            parsed = parse_plan(self._ask(POLICY, text, ctx, result, scope, trial, grounded.policy(obs.known)))
            self._count(result, "policy", parsed)
            calls = parsed.calls
            if not calls:
                if result.llm_errors > errors_before:
                    result.end_reason = "llm_error: the policy call failed"
                elif parsed.dropped:
                    result.end_reason = "no_parseable_plan: the policy's answer held no parseable call"
                else:
                    result.end_reason = "policy_done: the policy returned an empty plan"
                break
            if len(calls) > PLAN_LIMIT:
                self._count(result, "plan_too_long", rejected=len(calls) - PLAN_LIMIT)
                calls = calls[:PLAN_LIMIT]
            if not first:
                result.replans += 1
            first = False
            self._execute(calls, obs, world, history, result, limit)
        if not result.end_reason:
            result.end_reason = f"step_cap: {limit} steps"
        result.success = world.check(task)
        result.state = state.to_dict() if self.method in STATEFUL_METHODS else {}
        result.runtime_s = time.perf_counter() - started
        return result

    def _estimate(self, state: OpenState, obs: Observation, history: list[HistoryEntry], recent: list[HistoryEntry],
                  world: EpisodeWorld, task: TaskSpec, result: TrialResult, scope: str, trial: int) -> None:
        """The methods with a state: attention picks the key objects (unless the method has none),
        then the state estimator rewrites the state from the latest actions."""
        with_summary = self.method != "no_summary"
        with_objects = self.method != "no_objects"
        if with_objects:
            text, ctx = attention_prompt(state, obs, task.goal, wording=self.wording)
            parsed = parse_attention(self._ask(ATTENTION, text, ctx, result, scope, trial, grounded.attention(obs.known)))
            report = state.add_key_objects(parsed.calls, obs.known)
            self._count(result, "attention", parsed, len(report.rejected))
        if history:
            window = self.history_window
            previous = None
            if window and len(history) > window:
                previous = OpenState(list(state.key_objects), {k: list(v) for k, v in state.entries.items()},
                                     state.summary)
            text, ctx = estimator_prompt(state, recent, obs, task.goal, with_summary=with_summary,
                                         with_objects=with_objects, previous=previous, hands=world.hands,
                                         wording=self.wording)
            parsed = parse_estimator(self._ask(ESTIMATOR, text, ctx, result, scope, trial, grounded.estimator(obs.known)))
            report = state.rebuild(parsed.calls, obs.known, with_summary=with_summary, with_objects=with_objects)
            self._count(result, "estimator", parsed, len(report.rejected))
        if self.on_state is not None:
            self.on_state(state)

    def _policy_prompt(self, state: OpenState, obs: Observation, history: list[HistoryEntry],
                       recent: list[HistoryEntry], world: EpisodeWorld, task: TaskSpec) -> tuple[str, dict[str, Any]]:
        """The policy's request: the method's own prompt (the baselines' or ours, with what of the
        state the ablation keeps)."""
        if self.method == "progprompt":
            return progprompt_prompt(task.goal, obs, history, hands=world.hands)
        if self.method == "inner_monologue":
            return policy_prompt(task.goal, obs, history[-INNER_MONOLOGUE_WINDOW:], None, single_step=True,
                                 hands=world.hands)
        return policy_prompt(task.goal, obs, recent, state if self.method in STATEFUL_METHODS else None,
                             with_summary=self.method != "no_summary", with_objects=self.method != "no_objects",
                             hands=world.hands, wording=self.wording)

    @staticmethod
    def _execute(calls: list[Call], obs: Observation, world: EpisodeWorld, history: list[HistoryEntry],
                 result: TrialResult, limit: int) -> None:
        """Carry out a plan's calls until the step cap or the first failure (then re-plan)."""
        known = obs.known
        for call in calls:
            if result.steps >= limit:
                break
            if any(arg not in known for arg in call.args):
                result.unknown_object_calls += 1
            outcome = world.execute(call)
            result.steps += 1
            entry = HistoryEntry(call, outcome.success)
            history.append(entry)
            result.action_log.append(entry.render() + ("" if outcome.success else f" [{outcome.reason}]"))
            known = world.observe().known
            if not outcome.success:
                break  # re-plan on the first failure


def run_trial(task_name: str, map_name: str, method: str, client: Completer, *, hands: int = 2,
              household: Household | None = None, cap: int | None = None, trial: int = 0,
              temperature: float = 0.0, wording: str = "own", answers: str = "paper",
              decoding: str = "free") -> TrialResult:
    """One fresh world, one run (`trial`: the run's number, which keeps runs at a temperature
    above 0 apart)."""
    house = household or load_household()
    task = house.task(task_name)
    world = HouseholdWorld(house, map_name, task, hands=hands)
    return LLMStateAgent(client, method, temperature=temperature, wording=wording,
                         answers=answers, decoding=decoding).run(world, task, cap=cap, trial=trial)
