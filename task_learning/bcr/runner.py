"""Running BCR trials (the BCR paper §V-B): one task, one engine, one seeded world per trial."""
from __future__ import annotations

import functools
import logging
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from task_learning.bcr.agent import MAX_ACTIONS, BCRAgent, SelectionEngine
from task_learning.bcr.domain import Domain, load_domain
from task_learning.bcr.engines import make_engine
from task_learning.bcr.tasks import check_goals, load_tasks
from task_learning.bcr.testbed import FailurePointWorld
from task_learning.types import ActionCall, ActionOutcome, GoalLiteral
from task_learning.world.backend import WorldBackend
from task_learning.world.outcome import run_action
from task_learning.world.scene import Scene, load_scene
from task_learning.world.symbolic import SymbolicWorld

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient

log = logging.getLogger(__name__)


@dataclass
class TrialResult:
    """One trial: did the goals hold within 100 actions, and what it took."""

    success: bool
    actions: int  # actions tried (blocked tries and caught loops included), the paper's count
    decisions: int
    candidates_per_decision: float  # mean, the paper's Table 3 measure
    runtime_s: float
    seed: int | None = None
    task: str = ""
    engine: str = ""
    failure: str | None = None  # loop | max_actions | no_candidates | llm_error | invalid_answer
    failure_detail: str = ""
    mode: str = "guarded"
    executed: int = 0  # actions actually run in the world
    llm_requests: int = 0
    reasks: int = 0
    loops_broken: int = 0
    candidate_counts: list[int] = field(default_factory=list)
    action_log: list[str] = field(default_factory=list)
    overhead_ms_median: float = 0.0
    dot: str = ""
    model_answers: list[dict[str, Any]] = field(default_factory=list)  # the llm engine's transcript

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "actions": self.actions,
            "decisions": self.decisions,
            "candidates_per_decision": round(self.candidates_per_decision, 3),
            "runtime_s": round(self.runtime_s, 4),
            "seed": self.seed,
            "task": self.task,
            "engine": self.engine,
            "mode": self.mode,
            "failure": self.failure,
            "failure_detail": self.failure_detail,
            "executed": self.executed,
            "llm_requests": self.llm_requests,
            "reasks": self.reasks,
            "loops_broken": self.loops_broken,
            "candidate_counts": list(self.candidate_counts),
            "action_log": list(self.action_log),
            **({"model_answers": list(self.model_answers)} if self.model_answers else {}),
        }


@functools.lru_cache(maxsize=8)
def _scene(name: str) -> Scene:
    """Scenes are read-only for the symbolic world (it deep-copies the objects): parse once."""
    return load_scene(name)


@functools.lru_cache(maxsize=8)
def _domain(name: str) -> Domain:
    return load_domain(name)


@functools.lru_cache(maxsize=2)
def _tasks() -> Any:
    return load_tasks()


def make_world(scene: Scene, seed: int | None) -> FailurePointWorld:
    """The BCR testbed: the symbolic world with the paper's failure points."""
    return FailurePointWorld(SymbolicWorld(scene, seed=seed), seed=seed)


def run_trial(scene: str | Scene = "bcr_kitchen", task: str = "make_coffee",
              engine: str | SelectionEngine = "heuristic", client: LLMClient | None = None, seed: int | None = 0, *,
              domain: Domain | None = None, max_actions: int = MAX_ACTIONS,
              world: WorldBackend | None = None, mode: str = "guarded", answers: str = "paper",
              decoding: str = "free") -> TrialResult:
    """Run one task to success or failure. `engine` is a name ('llm', 'heuristic') or an engine
    object; `client` an LLMClient for the llm engine; `world` overrides the seeded testbed;
    `mode` 'paper' (the BCR paper as published) or 'guarded' (loop breaking, heuristic fallback);
    `answers` 'paper' or 'bounded' (a base model's: llm/answer_bounds.py); `decoding` 'free' or
    'grounded' (the answer constrained to the candidates: llm/constraints.py)."""
    started = time.perf_counter()
    tasks = _tasks()
    spec = tasks.task(task)
    scene_obj = scene if isinstance(scene, Scene) else _scene(str(scene))
    domain = domain or _domain(tasks.domain)
    world = world if world is not None else make_world(scene_obj, seed)
    if isinstance(engine, str):
        engine_obj = make_engine(engine, client, **({"scope": f"bcr:{task}:{seed}", "mode": mode,
                                                      "answers": answers, "decoding": decoding}
                                                   if engine == "llm" else {}))
    else:
        engine_obj = engine
    result = run_goals(world, list(spec.goals), engine_obj, domain, max_actions=max_actions,
                       seed=seed, task=task, started=started, mode=mode)
    result.model_answers = list(getattr(engine_obj, "transcript", []))
    return result


def run_goals(world: WorldBackend, goals: list[GoalLiteral], engine: SelectionEngine, domain: Domain | None = None,
              *, max_actions: int = MAX_ACTIONS, seed: int | None = None, task: str = "",
              started: float | None = None,
              on_outcome: Callable[[ActionOutcome], None] | None = None,
              mode: str = "guarded",
              on_decision: Callable[[BCRAgent, ActionCall], None] | None = None) -> TrialResult:
    """BCR on any world backend and goal literals (e.g. a planner's inside(Mug|1, Cupboard|1)
    and not open(Cupboard|1) in the tidy kitchen). `on_outcome` sees every executed action's
    outcome, in order (the planner learns policies from them); `on_decision` sees the agent (its
    candidate tree) and the action chosen, before it runs (episodes, the live view)."""
    started = time.perf_counter() if started is None else started
    domain = domain or _domain("household")
    # VisualSearch (look around) is a capability of every backend (world/look.py); BCR's test-bed
    # failure points are added only by make_world, for the BCR experiments.
    check_goals(goals, domain, world.metadata)
    agent = BCRAgent(domain, goals, engine, max_actions=max_actions, mode=mode)
    last: ActionOutcome | None = None
    executed: list[str] = []
    while True:
        proposal = agent.next_action(world.metadata, last)
        if proposal is None:
            break
        action, call = proposal
        if on_decision is not None:
            on_decision(agent, call)
        last = run_action(world, call)
        if on_outcome is not None:
            on_outcome(last)
        executed.append(str(action) + ("" if last.success else " [failed]"))
    stats = agent.stats
    counts = stats.candidates_per_decision
    return TrialResult(
        success=agent.status == "success",
        actions=stats.actions,
        decisions=stats.decisions,
        candidates_per_decision=statistics.fmean(counts) if counts else 0.0,
        runtime_s=time.perf_counter() - started,
        seed=seed, task=task, engine=getattr(engine, "name", str(engine)),
        failure=agent.failure_kind or None, failure_detail=agent.failure, mode=mode,
        executed=len(executed), llm_requests=stats.llm_requests,
        reasks=stats.reasks, loops_broken=stats.loops_broken, candidate_counts=list(counts),
        action_log=[f"{r.action} -> {r.outcome}" + (f" ({r.detail})" if r.detail else "")
                    for r in agent.log],
        overhead_ms_median=(statistics.median(stats.overhead_s) * 1000
                            if stats.overhead_s else 0.0),
        dot=agent.to_dot(peak=True),
    )


def summarize(results: list[TrialResult]) -> dict[str, Any]:
    """Success count and means over trials (the paper's three measures)."""
    n = len(results)
    if not n:
        return {"trials": 0}
    ok = sum(r.success for r in results)
    return {
        "trials": n,
        "successes": ok,
        "success_rate": ok / n,
        "mean_actions": statistics.fmean(r.actions for r in results),
        "mean_decisions": statistics.fmean(r.decisions for r in results),
        "mean_candidates_per_decision": statistics.fmean(r.candidates_per_decision
                                                         for r in results),
        "mean_runtime_s": statistics.fmean(r.runtime_s for r in results),
        "llm_requests": sum(r.llm_requests for r in results),
        "reasks": sum(r.reasks for r in results),
        "loops_broken": sum(r.loops_broken for r in results),
        "failures": dict(Counter(r.failure for r in results if r.failure)),
    }
