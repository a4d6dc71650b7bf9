"""Wiring for one in-process run: scene, world, LLM client, operator, STARS and BCR, as the ports
of the planning service (planning.service). `task-learning run` and the experiments use this; the
ROS planner node runs the same service with ROS proxies for the world and the elicitor.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import make_engine
from task_learning.episode.bus import EpisodeBus
from task_learning.episode.messages import LEARNED_GOAL, object_outcome
from task_learning.episode.observe import (
    BcrTreePublisher,
    LLMCallPublisher,
    ObservedOperator,
    ObservedWorld,
    StarsTreePublisher,
    kb_observer,
)
from task_learning.errors import TaskLearningError
from task_learning.kb import KnowledgeBase
from task_learning.lifecycle.cancellation import StoppableWorld, StopToken
from task_learning.llm.constraints import effective_decoding, parse_decoding
from task_learning.oversight.memory import RememberingOperator
from task_learning.oversight.operator import Operator
from task_learning.planning.confirmation import GoalConfirmer
from task_learning.planning.executor import GoalExecutor
from task_learning.planning.loop import Elicitation, ObjectReport, ProgressCallback, TaskLearner
from task_learning.planning.metrics import RunMetrics
from task_learning.planning.policy_review import PolicyReviewer
from task_learning.planning.service import TaskPorts, run_task, task_learner
from task_learning.stars.conditions import Condition, paper_selection_context, parse_condition
from task_learning.world.backend import WorldBackend
from task_learning.world.factory import make_backend
from task_learning.world.scene import Scene, load_scene

if TYPE_CHECKING:
    from task_learning.grounding.analysis import GoalAnalysis
    from task_learning.llm.client import LLMClient
    from task_learning.oversight.flow import Analysis

log = logging.getLogger(__name__)

CONDITIONS = tuple(c.value for c in Condition)
OPERATORS = ("simulated", "terminal", "panel", "web", "none")
# How the model is asked (the answers, and so the goals learned, are the same in every mode):
#   concurrent      one object after another, a tree level as concurrent single requests
#   batched         one object after another, a tree level as list-prompt round trips
#   across-objects  every object's levels merged into shared list-prompt round trips; the
#                   operator still gets one question at a time in the task's order
ELICITATION_MODES = ("concurrent", "batched", "across-objects")


def check_task(scene: Scene, task: str | None) -> None:
    """A task the scene does not define is refused before anything runs."""
    from task_learning.inputs.names import normalize_name

    if task and normalize_name(task) != normalize_name(scene.task):
        raise TaskLearningError(f"scene {scene.name!r} defines the task {scene.task!r}, not {task!r}")


def make_operator(kind: str, scene: Scene, analyze: Callable[[str], Analysis] | None = None) -> Operator | None:
    if kind == "simulated":
        from task_learning.oversight.simulated import SimulatedOperator

        return SimulatedOperator.from_scene(scene, analyze=analyze)
    if kind == "terminal":
        from task_learning.oversight.terminal import TerminalOperator

        return TerminalOperator()
    if kind == "panel":
        raise TaskLearningError("the panel needs a Qt event loop: `task-learning run --operator panel` "
                                "starts one, or pass a QueueOperator to run_in_process")
    if kind == "web":
        raise TaskLearningError("the web panel needs its server: `task-learning run --operator web` "
                                "starts one, or pass a QueueOperator to run_in_process")
    if kind == "none":
        return None
    raise TaskLearningError(f"unknown operator {kind!r} (choose from {', '.join(OPERATORS)})")


def check_run_config() -> None:
    """Load and validate every configuration file a run reads later (grounding lexicon, grammar
    and affordances, the prompt templates), so that a broken file stops the run at its start with
    a ConfigError naming file and key, before any LLM call, instead of failing every object."""
    from task_learning.grounding import GroundingKnowledge
    from task_learning.stars.prompts import load_templates

    GroundingKnowledge.load()
    load_templates()


def _stop_if_unavailable(client: LLMClient) -> None:
    """End the run (LLMUnavailableError) once the client's circuit breaker has opened."""
    client.raise_if_unavailable()


@dataclass
class RunSpec:
    scene: str | Scene = "tidy_kitchen"  # a scene name, a YAML path, or a Scene (generated ones)
    condition: str = "STARS+O"
    llm: str = "offline"
    operator: str = "simulated"
    db: str | Path = ":memory:"
    seed: int | None = None
    engine: str = "heuristic"  # BCR selection engine for reaching goals
    max_workers: int = 4
    task: str | None = None  # the task the user names; must be the scene's
    backend: str = "symbolic"  # world backend (world/factory.py): symbolic | ai2thor | fetch
    llm_options: dict[str, Any] = field(default_factory=dict)
    elicitation: str = "batched"  # one of ELICITATION_MODES
    decoding: str = "free"  # free | grounded | auto (llm/constraints.py: grounded with local)


def task_order(scene: Scene, metadata: Mapping[str, Any]) -> list[str]:
    """The task objects in the order the loop meets them: subtask by subtask, the objects at its
    places in the scene's order (an object at several subtasks' places counts once)."""
    parents = {o["objectId"]: set(o.get("parentReceptacles") or []) for o in metadata.get("objects") or []}
    order: list[str] = []
    for subtask in scene.subtasks:
        wanted = set(subtask.places)
        order += [oid for oid in scene.task_objects if wanted & parents.get(oid, set()) and oid not in order]
    return order


def run_in_process(spec: RunSpec, progress: ProgressCallback | None = None,
                   client: LLMClient | None = None, operator: Operator | None = None,
                   stop: StopToken | None = None, bus: EpisodeBus | None = None) -> tuple[RunMetrics, TaskLearner]:
    """One trial of one condition. Running it again on the same db is Trial #2. `operator`, when
    given, answers the +O conditions' questions instead of the one `spec.operator` names (the
    panel's QueueOperator). `stop`, when set from another thread, ends the run with RunStopped
    before its next object or primitive action. `bus`, when given, gets the run's messages (the
    world, the trees, questions and answers, actions, LLM calls, knowledge-base changes: an
    episode file, the live view; task_learning.episode)."""
    condition = spec.condition.upper()
    if condition not in CONDITIONS:
        raise TaskLearningError(f"unknown condition {spec.condition!r} (choose from {', '.join(CONDITIONS)})")
    if spec.elicitation not in ELICITATION_MODES:
        raise TaskLearningError(f"unknown elicitation mode {spec.elicitation!r} "
                                f"(choose from {', '.join(ELICITATION_MODES)})")
    scene = spec.scene if isinstance(spec.scene, Scene) else load_scene(spec.scene)
    check_task(scene, spec.task)
    paper_selection_context(parse_condition(condition), scene)  # STARS* off tidy kitchen: refused
    check_run_config()
    world = make_backend(spec.backend, scene, spec.seed)
    observed = ObservedWorld(world, bus, backend=spec.backend, scene=scene.name) if bus is not None else None
    acting = observed if observed is not None else world
    try:
        if observed is not None:
            observed.publish_state()
        return _run(spec, condition, scene, StoppableWorld(acting, stop) if stop is not None else acting,
                    progress, client, operator, stop, bus, observed)
    finally:
        close = getattr(world, "close", None)  # a simulator process to stop
        if callable(close):
            close()


def _run(spec: RunSpec, condition: str, scene: Scene, world: WorldBackend, progress: ProgressCallback | None,
         client: LLMClient | None, operator: Operator | None, stop: StopToken | None, bus: EpisodeBus | None,
         observed: ObservedWorld | None) -> tuple[RunMetrics, TaskLearner]:
    """The trial on a world that run_in_process owns (and closes)."""
    from task_learning.llm.client import make_client

    owned = client is None  # made here: closed here (a local server it started stops with it)
    if client is None:
        client = make_client(spec.llm, **spec.llm_options)
    try:
        kb = KnowledgeBase(spec.db)
        try:
            return _learn(spec, condition, scene, world, progress, client, operator, stop, kb, bus, observed)
        finally:
            kb.close()
    finally:
        if owned:
            client.close()


def _learn(spec: RunSpec, condition: str, scene: Scene, world: WorldBackend, progress: ProgressCallback | None,
           client: LLMClient, operator: Operator | None, stop: StopToken | None, kb: KnowledgeBase,
           bus: EpisodeBus | None, observed: ObservedWorld | None) -> tuple[RunMetrics, TaskLearner]:
    from task_learning.stars.elicit import ElicitationSetup, elicit_goal
    from task_learning.stars.prompts import load_templates

    recorder = client.recorder
    decoding, notice = effective_decoding(client.provider, parse_decoding(spec.decoding, spec.llm))
    if notice:
        log.warning("%s", notice)
    if bus is not None:
        kb.on_change = kb_observer(bus)
        client.recorder = LLMCallPublisher(bus, then=recorder)
    on_tree = StarsTreePublisher(bus, scene.task, observed) if bus is not None else None
    answerer: Operator | None = None
    if condition.endswith("+O"):
        from task_learning.grounding import analyze_goal

        def analyze(sentence: str) -> GoalAnalysis:
            from task_learning.world.state import world_state_from_metadata

            return analyze_goal(sentence, world_state_from_metadata(world.metadata))

        inner = operator if operator is not None else make_operator(spec.operator, scene, analyze=analyze)
        if inner is None:
            raise TaskLearningError(f"condition {condition} needs an operator (--operator)")
        if bus is not None:
            inner = ObservedOperator(inner, bus)
        answerer = RememberingOperator(inner, kb, scene.task)
    domain = load_domain("household")
    bcr_client = client if spec.engine == "llm" else None
    # A stored policy this robot did not learn (an import) is replayed only after the operator
    # approved it; without an operator it is never replayed.
    review = PolicyReviewer(answerer, kb=kb, task=scene.task) if answerer is not None else None
    engine_options = {"decoding": decoding.value} if spec.engine == "llm" else {}
    executor = GoalExecutor(domain, lambda: make_engine(spec.engine, bcr_client, **engine_options), kb, review=review,
                            on_decision=BcrTreePublisher(bus) if bus is not None else None)
    pool = ThreadPoolExecutor(max_workers=max(1, spec.max_workers), thread_name_prefix="stars")
    templates = load_templates()  # once per run, not once per object
    together = None
    if spec.elicitation == "across-objects":
        from task_learning.stars.together import CrossObjectElicitor

        together = CrossObjectElicitor(client, scene, condition, operator=answerer, kb=kb, templates=templates,
                                       on_tree=on_tree, decoding=decoding)
        together.prefetch(scene.task, task_order(scene, world.metadata), world.metadata)
    batched = spec.elicitation == "batched"
    distributions: dict[str, list[dict[str, Any]]] = {}  # grounded: each elicited object's places
    by_mean: dict[str, list[dict[str, Any]]] = {}  # ... ranked length-normalised instead

    def elicit(*, task: str, object_id: str, metadata: Mapping[str, Any]) -> Elicitation:
        _stop_if_unavailable(client)
        if together is not None:
            result = together(task=task, object_id=object_id, metadata=metadata)
        else:
            result = elicit_goal(task, object_id, metadata, scene, condition, client,
                                 setup=ElicitationSetup(templates=templates, operator=answerer, kb=kb, executor=pool,
                                                        on_tree=on_tree, batched=batched, decoding=decoding))
        _stop_if_unavailable(client)  # before a goal from a half-dead endpoint is acted on
        if getattr(result, "distribution", None):
            _keep_distribution(result, object_id, distributions, by_mean)
        return result

    elicit.elicitor = together  # type: ignore[attr-defined]  # benches read its merged levels

    confirm = GoalConfirmer(answerer, kb=kb, task=scene.task) if answerer is not None else None
    on_object, on_report = _observers(bus, observed)
    learner = task_learner(scene, condition, TaskPorts(
        world=world, kb=kb, elicit=elicit, executor=executor, confirm=confirm, stop=stop,
        usage_source=lambda: client.usage, progress=progress, on_object=on_object, on_report=on_report))
    learner.distributions, learner.distributions_mean = distributions, by_mean  # type: ignore[attr-defined]  # run --json
    try:
        metrics = run_task(learner).metrics
    finally:
        if together is not None:
            together.close()
        pool.shutdown(wait=True)
        if bus is not None:
            client.recorder = recorder  # a caller's client records as it did before this run
    return metrics, learner


def _observers(bus: EpisodeBus | None, observed: ObservedWorld | None) -> tuple[
        Callable[[str], None] | None, Callable[[ObjectReport], None] | None]:
    """The run's observers on the episode bus: the object being handled (on the observed world),
    and what each object came to."""
    if bus is None:
        return None, None

    def on_object(object_id: str) -> None:
        if observed is not None:
            observed.current_object = object_id

    def on_report(report: ObjectReport) -> None:
        bus.publish(LEARNED_GOAL, object_outcome(report))

    return (on_object if observed is not None else None), on_report


def _keep_distribution(result: Any, object_id: str, distributions: dict[str, list[dict[str, Any]]],
                       by_mean: dict[str, list[dict[str, Any]]]) -> None:
    """Keep an elicited object's grounded distribution for run --json, the same tree's goals
    ranked by their tokens' geometric mean beside it, and log both (a bench prints them as the
    run goes)."""
    from task_learning.stars.grounded import place_order

    distributions[object_id] = [share.to_dict() for share in result.distribution]
    by_mean[object_id] = place_order(result.candidates, result.paths, "mean")
    log.info("grounded distribution of %s", object_id, extra={"grounded": {
        "object": object_id, "distribution": distributions[object_id],
        "by_mean": by_mean[object_id], "calls": result.usage.calls}})
