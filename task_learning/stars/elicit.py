"""`elicit_goal`: one object through the STARS pipeline (or one of its ablations, Table 1 of the STARS paper).

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
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from task_learning.errors import ConfigError, TaskLearningError
from task_learning.grounding import analyze_goal
from task_learning.lifecycle.cancellation import RunStopped
from task_learning.llm.constraints import Decoding, parse_decoding
from task_learning.llm.usage import copy_usage, usage_diff
from task_learning.stars.conditions import Condition, flags, paper_selection_context, parse_condition
from task_learning.stars.grounded import GoalSpace, PlaceShare, decisive, one_per_goal, score_candidates
from task_learning.stars.grounded_search import decisive_steps
from task_learning.stars.prompts import GoalContext, PromptTemplates, load_templates
from task_learning.stars.sampling import sample_steps
from task_learning.stars.selection import SelectionOutcome, highest_score, select_goal, select_goal_steps
from task_learning.stars.tree import (
    CompletionClient,
    Steps,
    TreeRoot,
    TreeSettings,
    TreeState,
    batched_sender,
    concurrent_sender,
    drive,
    expand_steps,
)
from task_learning.types import (
    CandidateSource,
    GoalCandidate,
    LLMUsage,
    Mismatch,
    MismatchKind,
    WorldState,
)
from task_learning.world.resolve import describe_object
from task_learning.world.state import metadata_from_world_state, world_state_from_metadata

if TYPE_CHECKING:
    from task_learning.kb.store import KnowledgeBase
    from task_learning.llm.base import LLMRequest
    from task_learning.oversight.flow import OversightOutcome
    from task_learning.oversight.operator import Operator

log = logging.getLogger(__name__)

Analyzer = Callable[[str], Any]  # sentence -> object with .viable, .mismatches, .literals
StageCallback = Callable[[str, Mapping[str, int]], None]
# Sees the object's elicitation after every tree level ("level") and every stage (its name): a
# live view or an episode publishes the candidate tree from it (task_learning.episode).
TreeCallback = Callable[["PreparedElicitation", str], None]

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
    oversight: OversightOutcome | None = None  # for +O conditions
    outcome: str = "ok"
    errors: list[str] = field(default_factory=list)
    decoding: Decoding = Decoding.FREE
    distribution: list[PlaceShare] = field(default_factory=list)  # grounded: the places' shares
    # grounded: candidate id -> (the sum of its tokens' log probabilities, how many tokens)
    paths: dict[int, tuple[float, int]] = field(default_factory=dict)

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
            "decoding": self.decoding.value,
            "distribution": [share.to_dict() for share in self.distribution],
            "paths": {str(i): {"logprob": round(lp, 4), "tokens": n} for i, (lp, n) in self.paths.items()},
        }


# --------------------------------------------------------------------------- the object's context
def as_state_and_metadata(world: WorldState | Mapping[str, Any]) -> tuple[WorldState, dict[str, Any]]:
    if isinstance(world, WorldState):
        return world, metadata_from_world_state(world)
    if isinstance(world, Mapping):
        return world_state_from_metadata(world), dict(world)
    raise TaskLearningError(f"world must be a WorldState or AI2-THOR metadata, got {type(world).__name__}")


def _default_analyzer(state: WorldState, object_id: str) -> Analyzer:
    return lambda sentence: analyze_goal(sentence, state, object_id)


# --------------------------------------------------------------------------- the pipeline
@dataclass
class PreparedElicitation:
    """Everything one object's elicitation needs besides the model: built by `prepare_elicitation`,
    run by `elicitation_steps` (the model stages) and `finish_elicitation` (oversight, counts)."""

    cond: Condition
    object_id: str
    ctx: GoalContext
    settings: TreeSettings
    templates: PromptTemplates
    analyzer: Analyzer | None
    tree: TreeState
    stages: list[Stage] = field(default_factory=list)
    on_stage: StageCallback | None = None
    on_tree: TreeCallback | None = None
    candidates: list[GoalCandidate] = field(default_factory=list)
    pool_for_choice: list[GoalCandidate] = field(default_factory=list)
    chosen: GoalCandidate | None = None
    selection: SelectionOutcome | None = None
    repairs: int = 0
    space: GoalSpace | None = None  # --decoding grounded: the goals the robot can ground
    distribution: list[PlaceShare] = field(default_factory=list)

    def stage(self, name: str, started: float, **extra: int) -> None:
        counts = dict(self.tree.counts, candidates=len(self.tree.candidates), **extra)
        self.stages.append(Stage(name, time.perf_counter() - started, counts))
        if self.on_stage is not None:
            try:
                self.on_stage(name, counts)
            except RunStopped:
                raise  # the caller's goal was cancelled: elicitation stops here
            except Exception as exc:  # noqa: BLE001 - a feedback publisher must not break elicitation
                log.warning("stage callback failed: %s", exc)
        self.show_tree(name)

    def show_tree(self, stage: str) -> None:
        if self.on_tree is not None:
            try:
                self.on_tree(self, stage)
            except Exception as exc:  # noqa: BLE001 - an observer must not break elicitation
                log.warning("tree callback failed: %s", exc)


@dataclass(frozen=True)
class ElicitationSetup:
    """How one object's goal is elicited, beyond what to elicit (task, object, world, scene,
    condition) and with which model (the client): one object instead of a dozen keyword
    arguments threaded through every caller. ElicitationSetup() is the paper's setting with the
    shipped templates."""

    location: str | None = None  # "kitchen": the scene's location unless given
    system_context: Sequence[str] | None = None  # STARS+CTX's user context (None: the scene's)
    templates: PromptTemplates | None = None  # None: load_templates()
    settings: TreeSettings | None = None  # None: TreeSettings()
    analyzer: Analyzer | None = None  # sentence -> analysis (None: grounding.analyze_goal against the world)
    operator: Operator | None = None  # who answers the +O conditions' questions
    kb: KnowledgeBase | None = None  # keeps the +O dialogue's questions and answers
    executor: ThreadPoolExecutor | None = None  # a shared pool for tree levels (None: one of settings.max_workers)
    on_stage: StageCallback | None = None
    on_tree: TreeCallback | None = None  # sees the elicitation after every level and stage (a live view, an episode)
    # each tree level as list-prompt round trips (LLMClient.complete_many) instead of one request
    # per branch; the answers, and so the result, are the same
    batched: bool = False
    # free: the paper's protocol; grounded: answers constrained to the goals the robot can ground
    # (stars/grounded.py)
    decoding: str | Decoding = Decoding.FREE


def prepare_elicitation(
    task: str,
    object_id: str,
    world: WorldState | Mapping[str, Any],
    scene: Any = None,
    condition: str | Condition = Condition.STARS,
    setup: ElicitationSetup = ElicitationSetup(),
    *,
    needs_operator: bool = True,
) -> PreparedElicitation:
    """Check the inputs and build the object's context (see `elicit_goal` for the arguments)."""
    cond = parse_condition(condition)
    switch = flags(cond)
    settings = setup.settings or TreeSettings()
    templates = setup.templates or load_templates()
    system_context, analyzer = setup.system_context, setup.analyzer
    state, metadata = as_state_and_metadata(world)
    obj, relation, place = describe_object(metadata, object_id)
    if system_context is None:
        system_context = list(getattr(scene, "context", []) or []) if switch.user_context else []
    ctx = GoalContext(task=task or str(getattr(scene, "task", "")),
                      location=setup.location or str(getattr(scene, "location", "") or "kitchen"),
                      object=obj, relation=relation, place=place,
                      system_context=tuple(system_context),
                      selection_context=paper_selection_context(cond, scene))
    if analyzer is None:
        analyzer = _default_analyzer(state, object_id)
    if switch.oversight and needs_operator and setup.operator is None:
        raise TaskLearningError(f"condition {cond.value} needs an operator to answer questions")
    space = None
    if parse_decoding(setup.decoding) is Decoding.GROUNDED:
        space = GoalSpace.build(state, object_id, obj)
        settings = templates.grounded.tree(settings)
        templates = templates.for_grounded()
    tree_settings = settings if switch.search_tree else replace(settings, max_depth=0)
    prep = PreparedElicitation(cond, object_id, ctx, settings, templates, analyzer,
                               TreeState(settings=tree_settings), on_stage=setup.on_stage, on_tree=setup.on_tree,
                               space=space)
    if setup.on_tree is not None:
        prep.tree.on_level = lambda: prep.show_tree("level")
    return prep


def elicitation_steps(prep: PreparedElicitation) -> Steps[PreparedElicitation]:
    """The model stages of one object as a generator of request levels: Search Tree (or TBP),
    Analysis, Repair rounds, Selection (or the highest score). Oversight is not here: it talks to
    a person, one question at a time (`finish_elicitation`)."""
    switch = flags(prep.cond)
    tree, ctx, templates, analyzer = prep.tree, prep.ctx, prep.templates, prep.analyzer
    object_id = prep.object_id
    started = time.perf_counter()
    decisive = switch.search_tree and prep.space is not None and templates.grounded.search == "decisive"
    root = _root(prep, lambda pt, prefix: templates.goal_request(ctx, pt, prefix, scope=object_id), key="goal",
                 constrained_probabilities=decisive and templates.grounded.probabilities == "constrained")
    if decisive and prep.space is not None:
        yield from decisive_steps(prep.space, root, tree, templates.grounded.alternative_above)
    elif switch.search_tree:
        yield from expand_steps([root], tree)
    else:  # TBP: several samples at the configured temperatures (stars/sampling.py)
        yield from sample_steps(root, templates.tbp_sampling, tree)
    prep.stage("search_tree" if switch.search_tree else "template_prompt", started)

    if analyzer is not None:
        started = time.perf_counter()
        _analyze(analyzer, tree.candidates)
        prep.stage("analysis", started, viable=sum(1 for c in tree.candidates if c.viable))
    if switch.analyze_repair and analyzer is not None:
        for round_no in range(1, REPAIR_ROUNDS + 1):
            started = time.perf_counter()
            roots = _repair_roots(prep, round_no)
            if not roots:
                break
            prep.repairs += len(roots)
            new = yield from expand_steps(roots, tree)
            _analyze(analyzer, new)
            prep.stage(f"repair_{round_no}", started, repairs=len(roots), new=len(new),
                       viable=sum(1 for c in tree.candidates if c.viable))

    prep.candidates = list(tree.candidates)
    if prep.space is not None:
        started = time.perf_counter()
        prep.distribution = score_candidates(prep.candidates, tree, prep.space, templates.grounded)
        prep.stage("scoring", started, places=len(prep.distribution))
    prep.pool_for_choice = [c for c in prep.candidates if c.viable] if switch.analyze_repair else prep.candidates
    if prep.space is not None:  # aliases of one goal are one option (stars/grounded.py)
        prep.pool_for_choice = one_per_goal(prep.pool_for_choice)
    started = time.perf_counter()
    if switch.llm_selection:
        prep.selection = yield from select_goal_steps(templates, ctx, prep.pool_for_choice, scope=object_id,
                                                      constrained=prep.space is not None)
        prep.chosen = prep.selection.chosen
        prep.stage("selection", started, options=len(prep.selection.options))
    else:
        prep.chosen = highest_score(prep.pool_for_choice)
        prep.stage("highest_score", started, options=len(prep.pool_for_choice))
    return prep


def finish_elicitation(prep: PreparedElicitation, client: CompletionClient, usage: Callable[[], LLMUsage],
                       *, operator: Operator | None = None, kb: KnowledgeBase | None = None) -> ElicitationResult:
    """Oversight for the +O conditions (the operator's questions, with reselection on "no"), then
    the result. `usage` returns this object's LLM usage once everything is done."""
    chosen = prep.chosen
    oversight = None
    if flags(prep.cond).oversight:
        if operator is None:
            raise TaskLearningError(f"condition {prep.cond.value} needs an operator to answer questions")
        started = time.perf_counter()
        oversight, chosen = _oversee(prep, client, chosen, operator, kb)
        prep.chosen = chosen  # what the operator confirmed (or None): the tree shows it
        prep.stage("oversight", started, proposed=oversight.counts.proposed)
    tree, candidates, selection = prep.tree, prep.candidates, prep.selection
    counts = dict(tree.counts)
    counts.update(candidates=len(candidates), viable=sum(1 for c in candidates if c.viable),
                  analysed=sum(1 for c in candidates if c.viable is not None), repairs=prep.repairs,
                  selection_calls=len(selection.answers) if selection else 0)
    outcome = _outcome(chosen, candidates, tree, flags(prep.cond).analyze_repair, oversight)
    if outcome != "ok":
        log.info("%s %s: %s", prep.cond.value, prep.object_id, outcome)
    return ElicitationResult(prep.cond, prep.object_id, prep.ctx, chosen, candidates, usage(),
                             counts, prep.stages, selection, oversight, outcome,
                             list(dict.fromkeys(tree.errors)),
                             Decoding.GROUNDED if prep.space is not None else Decoding.FREE, prep.distribution,
                             _paths(tree, prep.space) if prep.space is not None else {})


def elicit_goal(
    task: str,
    object_id: str,
    world: WorldState | Mapping[str, Any],
    scene: Any = None,
    condition: str | Condition = Condition.STARS,
    client: CompletionClient | None = None,
    setup: ElicitationSetup = ElicitationSetup(),
) -> ElicitationResult:
    """Elicit a goal for one object.

    task: "tidy kitchen"; object_id: "Mug|2"; world: the perceived WorldState or AI2-THOR metadata;
    scene: a world.Scene (supplies location, STARS+CTX's user context and STARS*'s Selection
    context) or None.
    client: an LLMClient (anything with complete(request) -> response; `.usage` is diffed).
    setup: everything else (templates, tree settings, analyzer, operator, knowledge base, pool,
    observers, batching), each with its default (ElicitationSetup).
    """
    if client is None:
        raise TaskLearningError("elicit_goal needs an LLM client")
    prep = prepare_elicitation(task, object_id, world, scene, condition, setup)
    usage_before = copy_usage(getattr(client, "usage", None) or LLMUsage())
    settings = prep.settings
    own_pool = not setup.batched and setup.executor is None and settings.max_workers > 1
    pool = (ThreadPoolExecutor(max_workers=settings.max_workers, thread_name_prefix="stars") if own_pool
            else setup.executor)
    try:
        send = batched_sender(client) if setup.batched else concurrent_sender(client, pool)
        drive(elicitation_steps(prep), send)
    finally:
        if own_pool and pool is not None:
            pool.shutdown(wait=True)
    return finish_elicitation(
        prep, client, lambda: usage_diff(getattr(client, "usage", None) or LLMUsage(), usage_before),
        operator=setup.operator, kb=setup.kb)


def _paths(tree: TreeState, space: GoalSpace) -> dict[int, tuple[float, int]]:
    """Candidate id -> (summed log probability of its decisive tokens, how many: stars/grounded.py)."""
    out = {}
    for i, probs in tree.paths.items():
        kept = decisive(probs, tree.pieces.get(i, ()), space)
        out[i] = (sum(math.log(max(p, 1e-300)) for p in kept), len(kept))
    return out


def _outcome(chosen: GoalCandidate | None, candidates: list[GoalCandidate], tree: TreeState,
             needs_viable: bool, oversight: OversightOutcome | None) -> str:
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
        except ConfigError:  # a broken lexicon/grammar fails every candidate alike: stop the run
            raise
        except Exception as exc:  # noqa: BLE001 - a failed analysis makes that candidate not viable
            log.error("analysis of %r failed: %s", cand.text, exc)
            cand.viable = False
            cand.mismatches = [Mismatch(MismatchKind.UNINTERPRETABLE, f"analysis failed: {exc}",
                                        "No. Could not understand. Rephrase.")]
            cand.literals = []


def _root(prep: PreparedElicitation, build: Callable[[str, str], Any], key: str,
          constrained_probabilities: bool = False, **fields: Any) -> TreeRoot:
    """A tree root; under --decoding grounded its requests carry the object's constraint (and ask
    for the alternatives under it with `constrained_probabilities`: one-token requests only)."""
    if prep.space is None:
        return TreeRoot(build_request=build, key=key, **fields)
    return prep.space.root(build, key, prep.templates.grounded.logprobs, constrained_probabilities, **fields)


def _repair_roots(prep: PreparedElicitation, round_no: int) -> list[TreeRoot]:
    """One repair tree per unviable candidate of the previous generation, for its first
    repairable mismatch."""
    tree, templates, ctx, object_id = prep.tree, prep.templates, prep.ctx, prep.object_id
    roots = []
    for cand in tree.candidates:
        if tree.generation.get(cand.candidate_id) != round_no - 1 or cand.viable is not False:
            continue
        mismatch = next((m for m in cand.mismatches if m.kind in templates.repair_kinds), None)
        if mismatch is None:
            continue
        feedback = templates.feedback_for(mismatch.kind, mismatch.feedback, mismatch.subject)
        build = partial(_repair_request, templates, ctx, object_id, cand.text, feedback, mismatch.kind)
        roots.append(_root(prep, build, f"repair|{mismatch.kind.value}|{cand.text}|{feedback}",
                           root_type="repair", recurse_type="repair_recurse",
                           root_source=CandidateSource.REPAIR,
                           recurse_source=CandidateSource.REPAIR_RECURSE,
                           parent_id=cand.candidate_id, repair_feedback=feedback,
                           generation=round_no))
    return roots


def _repair_request(templates: PromptTemplates, ctx: GoalContext, object_id: str, repair_of: str,
                    feedback: str, kind: MismatchKind, prompt_type: str, prefix: str) -> LLMRequest:
    return templates.goal_request(ctx, prompt_type, prefix, repair_of=repair_of, feedback=feedback,
                                  repair_kind=kind, scope=object_id)


def _oversee(prep: PreparedElicitation, client: CompletionClient, selected: GoalCandidate | None,
             operator: Operator, kb: KnowledgeBase | None) -> tuple[Any, GoalCandidate | None]:
    """The +O seam: propose (Selection again without rejected options), then ask for words."""
    from task_learning.oversight.flow import OversightSubject, run_oversight

    ctx, object_id, analyzer = prep.ctx, prep.object_id, prep.analyzer
    ranked = sorted(prep.pool_for_choice, key=lambda c: (-c.score, c.candidate_id))  # best first
    if flags(prep.cond).llm_selection:
        def reselect(remaining: list[GoalCandidate]) -> GoalCandidate | None:
            return select_goal(client, prep.templates, ctx, remaining, scope=object_id,
                               constrained=prep.space is not None).chosen
    else:
        def reselect(remaining: list[GoalCandidate]) -> GoalCandidate | None:
            return highest_score(remaining)

    def analyze(sentence: str) -> Any:
        if analyzer is None:
            raise TaskLearningError("no analyzer for user descriptions")
        return analyzer(sentence)

    outcome = run_oversight(ranked=ranked, reselect=reselect, operator=operator, analyze=analyze,
                            selected=selected, kb=kb,
                            subject=OversightSubject(ctx.description, object_id=object_id, task=ctx.task,
                                                     context=ctx.location))
    return outcome, outcome.chosen
