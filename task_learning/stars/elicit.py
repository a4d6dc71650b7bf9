"""`elicit_goal`: one object through the STARS pipeline (or one of its ablations, Table 1 of seed 000).

Search Tree -> Analysis (grounding's internal simulation) -> Repair (one template per mismatch
kind, a second round on repair outputs, never a third; duplicates dropped before analysis) ->
Selection (LLM, lowest score first) -> optional Oversight (the +O conditions, through
`task_learning.oversight.flow.run_oversight`).

The planner calls this once per object; the result says what was chosen, every distinct response
with its provenance, the LLM usage of this object (a snapshot diff of the client's counters) and
per-stage counts and timings. Nothing here raises for bad model output or a dead endpoint: those
become counted failures and an `outcome` string.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Mapping, Sequence

from task_learning.errors import TaskLearningError
from task_learning.grounding import analyze_goal
from task_learning.llm.usage import copy_usage, usage_diff
from task_learning.stars.conditions import Condition, flags, paper_selection_context, parse_condition
from task_learning.stars.prompts import GoalContext, PromptTemplates, load_templates
from task_learning.stars.sampling import sample_responses
from task_learning.stars.selection import SelectionOutcome, highest_score, select_goal
from task_learning.stars.tree import CompletionClient, TreeRoot, TreeSettings, TreeState, expand
from task_learning.types import (
    CandidateSource,
    GoalCandidate,
    LLMUsage,
    Mismatch,
    MismatchKind,
    WorldState,
)
from task_learning.world.resolve import describe_object
from task_learning.world.state import world_state_from_metadata

log = logging.getLogger(__name__)

Analyzer = Callable[[str], Any]  # sentence -> object with .viable, .mismatches, .literals
StageCallback = Callable[[str, Mapping[str, int]], None]

REPAIR_ROUNDS = 2  # a repair output may be repaired once more, never a third time


@dataclass
class Stage:
    name: str
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": round(self.seconds, 4), "counts": dict(self.counts)}


@dataclass
class ElicitationResult:
    """What one elicitation produced. `outcome`: ok | no_viable_goal | no_response | llm_failed |
    not_confirmed (oversight gave no goal)."""

    condition: Condition
    object_id: str
    context: GoalContext
    chosen: GoalCandidate | None
    candidates: list[GoalCandidate]
    usage: LLMUsage
    counts: dict[str, int]
    stages: list[Stage]
    selection: SelectionOutcome | None = None
    oversight: Any = None  # task_learning.oversight.flow.OversightOutcome for +O conditions
    outcome: str = "ok"
    errors: list[str] = field(default_factory=list)

    @property
    def viable(self) -> list[GoalCandidate]:
        return [c for c in self.candidates if c.viable]

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition.value,
            "object": self.object_id,
            "object_description": self.context.description,
            "outcome": self.outcome,
            "chosen": self.chosen.to_dict() if self.chosen else None,
            "candidates": [c.to_dict() for c in self.candidates],
            "usage": self.usage.to_dict(),
            "counts": dict(self.counts),
            "stages": [s.to_dict() for s in self.stages],
            "selection": self.selection.to_dict() if self.selection else None,
            "oversight": self.oversight.to_dict() if self.oversight is not None else None,
            "errors": list(self.errors),
        }


# --------------------------------------------------------------------------- the object's context
def _as_state_and_metadata(world: WorldState | Mapping[str, Any]) -> tuple[WorldState, dict[str, Any]]:
    if isinstance(world, WorldState):
        return world, {"sceneName": world.scene, "objects": [dict(o.properties) for o in world.objects]}
    if isinstance(world, Mapping):
        return world_state_from_metadata(world), dict(world)
    raise TaskLearningError(f"world must be a WorldState or AI2-THOR metadata, got {type(world).__name__}")


def _default_analyzer(state: WorldState, object_id: str) -> Analyzer:
    return lambda sentence: analyze_goal(sentence, state, object_id)


# --------------------------------------------------------------------------- the pipeline
def elicit_goal(
    task: str,
    object_id: str,
    world: WorldState | Mapping[str, Any],
    scene: Any = None,
    condition: str | Condition = Condition.STARS,
    client: CompletionClient | None = None,
    *,
    location: str | None = None,
    system_context: Sequence[str] | None = None,
    templates: PromptTemplates | None = None,
    settings: TreeSettings | None = None,
    analyzer: Analyzer | None = None,
    operator: Any = None,
    kb: Any = None,
    executor: ThreadPoolExecutor | None = None,
    on_stage: StageCallback | None = None,
) -> ElicitationResult:
    """Elicit a goal for one object.

    task: "tidy kitchen"; object_id: "Mug|2"; world: the perceived WorldState or AI2-THOR metadata;
    scene: a world.Scene (supplies location, STARS+CTX's user context and STARS*'s Selection
    context) or None.
    client: an LLMClient (anything with complete(request) -> response; `.usage` is diffed).
    analyzer: sentence -> analysis (default: grounding.analyze_goal against `world`).
    operator: who answers the +O conditions' questions (oversight.operator.Operator).
    executor: a shared pool for concurrent tree levels (default: one of settings.max_workers).
    """
    if client is None:
        raise TaskLearningError("elicit_goal needs an LLM client")
    cond = parse_condition(condition)
    switch = flags(cond)
    settings = settings or TreeSettings()
    templates = templates or load_templates()
    state, metadata = _as_state_and_metadata(world)
    obj, relation, place = describe_object(metadata, object_id)
    if system_context is None:
        system_context = list(getattr(scene, "context", []) or []) if switch.user_context else []
    ctx = GoalContext(task=task or str(getattr(scene, "task", "")),
                      location=location or str(getattr(scene, "location", "") or "kitchen"),
                      object=obj, relation=relation, place=place,
                      system_context=tuple(system_context),
                      selection_context=paper_selection_context(cond, scene))
    if analyzer is None:
        analyzer = _default_analyzer(state, object_id)
    if switch.oversight and operator is None:
        raise TaskLearningError(f"condition {cond.value} needs an operator to answer questions")

    usage_before = copy_usage(getattr(client, "usage", None) or LLMUsage())
    tree_settings = settings if switch.search_tree else replace(settings, max_depth=0)
    tree = TreeState(settings=tree_settings)
    stages: list[Stage] = []

    def stage(name: str, started: float, **extra: int) -> None:
        counts = dict(tree.counts, candidates=len(tree.candidates), **extra)
        stages.append(Stage(name, time.perf_counter() - started, counts))
        if on_stage is not None:
            try:
                on_stage(name, counts)
            except Exception as exc:  # a feedback publisher must not break elicitation
                log.warning("stage callback failed: %s", exc)

    own_pool = executor is None and settings.max_workers > 1
    pool = ThreadPoolExecutor(max_workers=settings.max_workers, thread_name_prefix="stars") if own_pool else executor
    try:
        started = time.perf_counter()
        root = TreeRoot(build_request=lambda pt, prefix: templates.goal_request(ctx, pt, prefix, scope=object_id),
                        key="goal")
        if switch.search_tree:
            expand(client, [root], tree, pool)
        else:
            sample_responses(client, root, templates.tbp_sampling, tree, pool)
        stage("search_tree" if switch.search_tree else "template_prompt", started)

        repairs = 0
        if analyzer is not None:
            started = time.perf_counter()
            _analyze(analyzer, tree.candidates)
            stage("analysis", started, viable=sum(1 for c in tree.candidates if c.viable))
        if switch.analyze_repair:
            for round_no in range(1, REPAIR_ROUNDS + 1):
                started = time.perf_counter()
                roots = _repair_roots(tree, templates, ctx, object_id, round_no)
                if not roots:
                    break
                repairs += len(roots)
                new = expand(client, roots, tree, pool)
                _analyze(analyzer, new)
                stage(f"repair_{round_no}", started, repairs=len(roots), new=len(new),
                      viable=sum(1 for c in tree.candidates if c.viable))
    finally:
        if own_pool and pool is not None:
            pool.shutdown(wait=True)

    candidates = list(tree.candidates)
    pool_for_choice = [c for c in candidates if c.viable] if switch.analyze_repair else candidates
    selection: SelectionOutcome | None = None
    started = time.perf_counter()
    if switch.llm_selection:
        selection = select_goal(client, templates, ctx, pool_for_choice, scope=object_id)
        chosen = selection.chosen
        stage("selection", started, options=len(selection.options))
    else:
        chosen = highest_score(pool_for_choice)
        stage("highest_score", started, options=len(pool_for_choice))

    oversight = None
    if switch.oversight:
        started = time.perf_counter()
        oversight, chosen = _oversee(cond, client, templates, ctx, object_id, pool_for_choice, chosen,
                                     operator, analyzer, kb)
        stage("oversight", started, proposed=oversight.counts.proposed)

    usage_after = getattr(client, "usage", None) or LLMUsage()
    usage = usage_diff(usage_after, usage_before)
    counts = dict(tree.counts)
    counts.update(candidates=len(candidates), viable=sum(1 for c in candidates if c.viable),
                  analysed=sum(1 for c in candidates if c.viable is not None), repairs=repairs,
                  selection_calls=len(selection.answers) if selection else 0)
    outcome = _outcome(chosen, candidates, tree, switch.analyze_repair, oversight)
    if outcome != "ok":
        log.info("%s %s: %s", cond.value, object_id, outcome)
    return ElicitationResult(cond, object_id, ctx, chosen, candidates, usage, counts, stages,
                             selection, oversight, outcome, list(dict.fromkeys(tree.errors)))


def _outcome(chosen: GoalCandidate | None, candidates: list[GoalCandidate], tree: TreeState,
             needs_viable: bool, oversight: Any) -> str:
    if oversight is not None and chosen is None:
        return "not_confirmed"
    if chosen is not None:
        return "ok"
    if not candidates:
        return "llm_failed" if tree.counts["failed_requests"] else "no_response"
    return "no_viable_goal" if needs_viable else "no_response"


def _analyze(analyzer: Analyzer, candidates: Sequence[GoalCandidate]) -> None:
    """Internal simulation of each (already deduplicated) response; an analyzer crash marks the
    candidate uninterpretable instead of stopping the elicitation."""
    for cand in candidates:
        try:
            result = analyzer(cand.text)
            cand.viable = bool(result.viable)
            cand.mismatches = list(result.mismatches)
            cand.literals = list(result.literals)
        except Exception as exc:
            log.error("analysis of %r failed: %s", cand.text, exc)
            cand.viable = False
            cand.mismatches = [Mismatch(MismatchKind.UNINTERPRETABLE, f"analysis failed: {exc}",
                                        "No. Could not understand. Rephrase.")]
            cand.literals = []


def _repair_roots(tree: TreeState, templates: PromptTemplates, ctx: GoalContext, object_id: str,
                  round_no: int) -> list[TreeRoot]:
    """One repair tree per unviable candidate of the previous generation, for its first
    repairable mismatch."""
    roots = []
    for cand in tree.candidates:
        if tree.generation.get(cand.candidate_id) != round_no - 1 or cand.viable is not False:
            continue
        mismatch = next((m for m in cand.mismatches if m.kind in templates.repair_kinds), None)
        if mismatch is None:
            continue
        feedback = templates.feedback_for(mismatch.kind, mismatch.feedback, mismatch.subject)
        build = partial(_repair_request, templates, ctx, object_id, cand.text, feedback, mismatch.kind)
        roots.append(TreeRoot(build_request=build, key=f"repair|{mismatch.kind.value}|{cand.text}|{feedback}",
                              root_type="repair", recurse_type="repair_recurse",
                              root_source=CandidateSource.REPAIR,
                              recurse_source=CandidateSource.REPAIR_RECURSE,
                              parent_id=cand.candidate_id, repair_feedback=feedback,
                              generation=round_no))
    return roots


def _repair_request(templates: PromptTemplates, ctx: GoalContext, object_id: str, repair_of: str,
                    feedback: str, kind: MismatchKind, prompt_type: str, prefix: str):
    return templates.goal_request(ctx, prompt_type, prefix, repair_of=repair_of, feedback=feedback,
                                  repair_kind=kind, scope=object_id)


def _oversee(cond: Condition, client: CompletionClient, templates: PromptTemplates, ctx: GoalContext,
             object_id: str, options: list[GoalCandidate], selected: GoalCandidate | None,
             operator: Any, analyzer: Analyzer | None, kb: Any) -> tuple[Any, GoalCandidate | None]:
    """The +O seam: propose (Selection again without rejected options), then ask for words."""
    from task_learning.oversight.flow import run_oversight

    ranked = sorted(options, key=lambda c: (-c.score, c.candidate_id))  # best first
    if flags(cond).llm_selection:
        def reselect(remaining: list[GoalCandidate]) -> GoalCandidate | None:
            return select_goal(client, templates, ctx, remaining, scope=object_id).chosen
    else:
        def reselect(remaining: list[GoalCandidate]) -> GoalCandidate | None:
            return highest_score(remaining)

    def analyze(sentence: str) -> Any:
        if analyzer is None:
            raise TaskLearningError("no analyzer for user descriptions")
        return analyzer(sentence)

    outcome = run_oversight(ranked=ranked, reselect=reselect, operator=operator,
                            object_description=ctx.description, analyze=analyze,
                            selected=selected, object_id=object_id, kb=kb, task=ctx.task,
                            context=ctx.location)
    return outcome, outcome.chosen
