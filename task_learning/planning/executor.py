"""Reach goal literals in a world: reuse a learned policy when there is one, else select actions
one at a time with BCR, and learn the successful sequence as a policy (the bootstrapped-productions paper's idea of reusing
what worked without asking the LLM again).

The world is any WorldBackend, so the same executor acts on the symbolic world in-process and on
the perception node's world through ROS (nodes/nodes/planner.py passes a proxy backend).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from task_learning.bcr.agent import BCRAgent, SelectionEngine
from task_learning.bcr.domain import Domain
from task_learning.bcr.literals import StateView, holds
from task_learning.bcr.runner import run_goals
from task_learning.errors import TaskLearningError
from task_learning.kb import OBJECT_VAR, KnowledgeBase, Policy, goal_key, lift_literals
from task_learning.oversight.flow import OversightCounts
from task_learning.planning.policy_review import PolicyVerdict, policy_problem
from task_learning.types import ActionCall, ActionOutcome, GoalLiteral, Truth
from task_learning.world.backend import WorldBackend, WorldUnavailableError
from task_learning.world.outcome import run_action
from task_learning.world.resolve import describe

if TYPE_CHECKING:
    from task_learning.productions.planning import ProductionReacher

log = logging.getLogger(__name__)

OutcomeCallback = Callable[[ActionOutcome], None]
DecisionCallback = Callable[[BCRAgent, ActionCall], None]  # (the agent, the action it chose)


class PolicyReview(Protocol):
    """Asks an operator whether an unreviewed stored policy may be replayed
    (planning.policy_review.PolicyReviewer)."""

    def __call__(self, policy: Policy, calls: Sequence[ActionCall], *, object_id: str,
                 object_description: str, metadata: Mapping[str, Any]) -> PolicyVerdict:
        ...


class Reacher(Protocol):
    """Another way to reach literals than BCR (e.g. llm_state.strategy.LLMStateStrategy)."""

    def reach(self, world: WorldBackend, literals: list[GoalLiteral], *, max_actions: int,
              on_outcome: OutcomeCallback | None = None) -> Any:
        ...  # an object with .success and .message


@dataclass
class ReachResult:
    success: bool
    outcomes: list[ActionOutcome] = field(default_factory=list)
    policy_reused: bool = False
    policy_learned: bool = False
    message: str = ""
    by_productions: bool = False  # reached by the bootstrapped-productions paper's productions alone (no BCR, no LLM)
    questions: OversightCounts = field(default_factory=OversightCounts)  # reviewing a stored policy

    @property
    def actions(self) -> list[ActionCall]:
        return [o.call for o in self.outcomes]


def type_index(metadata: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """objectId -> objectType and objectType -> [objectId] for lifting and grounding."""
    type_of: dict[str, str] = {}
    ids_by_type: dict[str, list[str]] = {}
    for obj in metadata.get("objects") or []:
        type_of[obj["objectId"]] = obj["objectType"]
        ids_by_type.setdefault(obj["objectType"], []).append(obj["objectId"])
    return type_of, ids_by_type


def lift_action(call: ActionCall, object_id: str, type_of: Mapping[str, str]) -> ActionCall:
    target = OBJECT_VAR if call.object_id == object_id else type_of.get(call.object_id, call.object_id)
    return ActionCall(call.action, target, call.params)


def ground_action(call: ActionCall, object_id: str, ids_by_type: Mapping[str, list[str]]) -> ActionCall | None:
    if call.object_id == OBJECT_VAR:
        return ActionCall(call.action, object_id, call.params)
    if not call.object_id or "|" in call.object_id:
        return call
    ids = sorted(ids_by_type.get(call.object_id, []))
    return ActionCall(call.action, ids[0], call.params) if ids else None


def doors_to_open_first(metadata: Mapping[str, Any], literals: list[GoalLiteral]) -> list[GoalLiteral]:
    """open(r) for each closed, openable r an object must end up inside, when the hand is empty:
    opened before the object is carried there, as a person (and a one-armed robot, whose hand
    that opens the door is the one that carries) does; BCR alone picks the object up first and
    then meets the closed door with its hand full."""
    state = StateView(metadata)
    if state.held:
        return []
    out = []
    for lit in literals:
        if lit.predicate != "inside" or lit.truth is not Truth.TRUE or len(lit.args) != 2:
            continue
        receptacle = state.get(lit.args[1])
        if receptacle is not None and receptacle.get("openable") and not receptacle.get("isOpen") \
                and not holds(lit, state):
            out.append(GoalLiteral("open", (lit.args[1],)))
    return out


# A replayed door action and whether it leaves the door open.
DOOR_EFFECTS = {"OpenObject": True, "CloseObject": False}


def door_already_so(state: StateView, call: ActionCall) -> bool:
    """Whether the world already shows the door as `call` would leave it: a policy learned with
    the door closed opens it first, but a goal before may have left it open. Running it anyway
    fails in AI2-THOR (already open), which ends the replay for nothing, and on a robot it is
    worse: the hand that takes an open door's handle and pulls swings it (in the MuJoCo Fetch the
    door assist drives it shut), and the next step finds it closed. An open state the robot has
    not seen (`openStateKnown` false) is not known to be so."""
    record = state.get(call.object_id)
    if record is None or not record.get("openable") or record.get("openStateKnown") is False:
        return False
    return bool(record.get("isOpen")) == DOOR_EFFECTS[call.action]


class GoalExecutor:
    """Reaches goals for one task, with policies kept in the knowledge base."""

    def __init__(self, domain: Domain, engine_factory: Callable[[], SelectionEngine],
                 kb: KnowledgeBase | None = None, *, max_actions: int = 100,
                 reacher: Reacher | None = None,
                 productions: ProductionReacher | None = None,
                 review: PolicyReview | None = None,
                 on_decision: DecisionCallback | None = None) -> None:
        self.domain = domain
        self.engine_factory = engine_factory
        self.kb = kb
        self.max_actions = max_actions
        self.reacher = reacher  # None: BCR with engine_factory's engine
        # the bootstrapped-productions paper: learned productions try a goal before BCR (or the reacher) selects actions (None: off)
        self.productions = productions
        # asks an operator before a policy this robot did not learn is replayed (None: never replayed)
        self.review = review
        # sees each BCR decision (the candidate tree and the action chosen): episodes, the live view
        self.on_decision = on_decision

    def reach(self, world: WorldBackend, literals: list[GoalLiteral], *, task: str = "",
              object_id: str = "", on_outcome: OutcomeCallback | None = None) -> ReachResult:
        metadata = world.metadata
        type_of, ids_by_type = type_index(metadata)
        obj_type = type_of.get(object_id, "")
        location = self._place_type(metadata, object_id, type_of)
        key = goal_key(lift_literals(literals, object_id, type_of))
        questions = OversightCounts()
        replay = None
        if self.kb is not None and task and obj_type:
            replay = self._usable_policy(metadata, self.kb.policy_for(task, obj_type, location, key),
                                         object_id, ids_by_type, questions)
        outcomes: list[ActionOutcome] = []
        if replay is not None and self.kb is not None:
            policy, calls = replay
            reused = self._replay(world, calls, outcomes, on_outcome)
            if reused and self._holds(world, literals):
                policy.successes += 1
                self.kb.save_policy(policy)
                return ReachResult(True, outcomes, policy_reused=True, questions=questions)
            policy.failures += 1
            self.kb.save_policy(policy)
            log.info("policy for %s %s failed; falling back to action selection", task, obj_type)
        if self.productions is not None:
            def record(outcome: ActionOutcome) -> None:
                outcomes.append(outcome)
                if on_outcome:
                    on_outcome(outcome)

            attempt = self.productions.attempt(world, literals, on_outcome=record)
            if attempt is not None and attempt.reached:
                return ReachResult(True, outcomes, by_productions=True, questions=questions,
                                   message=f"reached by productions alone ({attempt.task})")
        result = self._select(world, literals, outcomes, on_outcome)
        result.questions = questions
        if result.success and self.kb is not None and task and obj_type:
            # Learn only the actions that worked: failed attempts are not part of the recipe.
            actions = [lift_action(o.call, object_id, type_of) for o in outcomes if o.success]
            self.kb.save_policy(Policy(task, obj_type, location, key, actions, successes=1))
            result.policy_learned = True
        return result

    def _usable_policy(self, metadata: Mapping[str, Any], policy: Policy | None, object_id: str,
                       ids_by_type: Mapping[str, list[str]], questions: OversightCounts
                       ) -> tuple[Policy, list[ActionCall]] | None:
        """The stored policy and its actions in this world, when it may be replayed: it acts only
        within its goal (policy_review.policy_problem), every action grounds here, and this robot
        learned it or an operator approved it (asked now, through `review`, when nobody has)."""
        if policy is None:
            return None
        problem = policy_problem(policy)
        if problem:
            log.warning("stored policy for %s %s not replayed: %s", policy.task, policy.object_type, problem)
            return None
        calls = [ground_action(lifted, object_id, ids_by_type) for lifted in policy.actions]
        grounded = [c for c in calls if c is not None]
        if len(grounded) != len(calls):
            log.info("stored policy for %s %s names what this world lacks; not replayed", policy.task,
                     policy.object_type)
            return None
        if not policy.reviewed:
            if self.review is None:
                log.info("stored policy for %s %s not replayed: nobody reviewed it and no operator "
                         "can be asked", policy.task, policy.object_type)
                return None
            verdict = self.review(policy, grounded, object_id=object_id, metadata=metadata,
                                  object_description=describe(metadata, object_id))
            questions.add(verdict.counts)
            if not verdict.approval:
                return None
            policy.approval = verdict.approval
            if self.kb is not None:
                self.kb.save_policy(policy)
        return policy, grounded

    def _replay(self, world: WorldBackend, calls: list[ActionCall], outcomes: list[ActionOutcome],
                on_outcome: OutcomeCallback | None) -> bool:
        for call in calls:
            if call.action in DOOR_EFFECTS and door_already_so(StateView(world.metadata), call):
                log.info("policy step %s skipped: the world shows it done already", call)
                continue
            outcome = run_action(world, call)
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
            if not outcome.success:
                return False
        return True

    def _select(self, world: WorldBackend, literals: list[GoalLiteral], outcomes: list[ActionOutcome],
                on_outcome: OutcomeCallback | None) -> ReachResult:
        def record(outcome: ActionOutcome) -> None:
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)

        if self.reacher is not None:
            try:
                reached = self.reacher.reach(world, literals, max_actions=self.max_actions, on_outcome=record)
            except WorldUnavailableError:
                raise
            except (TaskLearningError, ValueError, KeyError) as exc:
                return ReachResult(False, outcomes, message=f"cannot plan for these literals: {exc}")
            return ReachResult(bool(reached.success), outcomes, message=str(reached.message or ""))
        try:
            engine = self.engine_factory()
            first = doors_to_open_first(world.metadata, literals)
            if first:
                opened = run_goals(world, first, engine, self.domain, max_actions=self.max_actions,
                                   on_outcome=record, on_decision=self.on_decision)
                if not opened.success:
                    log.info("opening %s first failed (%s); selecting actions for the goal as it is",
                             ", ".join(str(lit) for lit in first), opened.failure_detail)
            trial = run_goals(world, literals, engine, self.domain,
                              max_actions=max(1, self.max_actions - len(outcomes)), on_outcome=record,
                              on_decision=self.on_decision)
        except WorldUnavailableError:
            raise  # no plan can help: the caller stops (a planner goal aborts naming the world)
        except (TaskLearningError, ValueError, KeyError) as exc:
            return ReachResult(False, outcomes, message=f"cannot plan for these literals: {exc}")
        return ReachResult(trial.success, outcomes, message="" if trial.success else trial.failure_detail)

    def _holds(self, world: WorldBackend, literals: list[GoalLiteral]) -> bool:
        state = StateView(world.metadata)
        return all(holds(lit, state) for lit in literals)

    @staticmethod
    def _place_type(metadata: Mapping[str, Any], object_id: str, type_of: Mapping[str, str]) -> str:
        for obj in metadata.get("objects") or []:
            if obj["objectId"] == object_id:
                parents = obj.get("parentReceptacles") or []
                return type_of.get(parents[0], "") if parents else ""
        return ""
