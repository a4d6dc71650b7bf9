"""planner_node: performs tasks (PerformTask action) and reaches goal literals (ReachGoal action).

It runs the same task-learning loop as `task-learning run` (task_learning.planning.loop), with ROS
ports instead of in-process ones:
- the world is the perception node: `query_world` for the state, `execute_action` for each
  primitive action (RosWorld below implements the WorldBackend protocol over those services);
- goals come from the goal elicitation node's `learn_goal` action (which asks the oversight node
  in the +O conditions);
- actions are selected with BCR in this process against that world, and learned goals and
  policies go to this node's SQLite knowledge base (`db_path`), so the next PerformTask of the
  same task is Trial #2: no LLM call, no question.

Safety (issue 10):
- one body: a second motion goal (PerformTask or ReachGoal) while one runs is refused at once
  with a result saying what the robot is busy with;
- cancel is honoured before the next primitive action (result "canceled"; everything learned
  so far is already committed); SIGINT/SIGTERM stop a running goal the same way;
- a node it depends on that dies (leaves the graph) or does not answer within its configured
  time aborts the goal with a message naming that node;
- with `require_confirmation` (default true) or a +O condition, a goal no operator confirmed is
  put to the oversight node before it moves (refused when no oversight node is reachable), and
  ReachGoal only reaches literals a confirmed goal covers;
- every request is validated: sizes, enums, truth values, scenes by name only (a path only
  with `allow_scene_paths`).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import ENGINES, make_engine
from task_learning.bcr.literals import KNOWN_PREDICATES
from task_learning.errors import LLM_UNAVAILABLE, TaskLearningError
from task_learning.kb import DEFAULT_DB, KnowledgeBase, resolve_db_path
from task_learning.llm_state.agent import METHODS
from task_learning.llm_state.strategy import STRATEGIES
from task_learning.oversight.flow import OversightCounts, OversightStatus
from task_learning.planning.confirmation import GoalConfirmer, goal_covered, requires_confirmation
from task_learning.planning.executor import GoalExecutor, type_index
from task_learning.planning.policy_review import PolicyReviewer
from task_learning.planning.loop import TaskLearner
from task_learning.planning.session import CONDITIONS, check_task
from task_learning.planning.summary import summarize
from task_learning.planning.stop import DependencyFailed, RunStopped, StopToken, StoppableWorld
from task_learning.safe_text import printable
from task_learning.types import ActionCall, GoalLiteral, LLMUsage
from task_learning.world.backend import WORLD_UNAVAILABLE, WorldUnavailableError
from task_learning.world.scene import available_scenes, load_scene
from task_learning.stop_signals import StopSignals
from task_learning_interfaces.action import LearnGoal, PerformTask, ReachGoal
from task_learning_interfaces.msg import LLMState, TaskObjectOutcome
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes import convert
from task_learning_nodes.node_base import ActionClient, run_node, wait_for_future
from task_learning_nodes.params import LLM_ENDPOINT_PARAMS, Param, declare_parameters, llm_client_options
from task_learning_nodes.qos import latched

# Writable (read_only=False): read at each goal, so `ros2 param set` takes effect from the next
# one. The rest shape clients, publishers or the safety policy at start, and stay read-only.
PARAMETERS = (
    Param("scene", "tidy_kitchen", "Scene used for the subtasks and the completion measure when a "
          "PerformTask goal names none (the world itself is perception's: give both the same scene)",
          read_only=False),
    Param("condition", "STARS+O", "Condition used when a goal leaves it empty",
          choices=CONDITIONS,
          read_only=False),
    Param("db_path", DEFAULT_DB, "SQLite knowledge base of learned goals and "
          "policies (the same task again on the same file is Trial #2); default "
          "$ROS_HOME/task_learning/task_learning.sqlite (~/.ros/...), the same however the graph is "
          "started; relative paths are relative to the node's working directory"),
    Param("engine", "heuristic", "BCR engine used to reach goals: heuristic (no LLM) or llm",
          choices=ENGINES,
          read_only=False),
    Param("llm", "offline", "LLM of the llm engine: offline (not a language model), openai, local or "
          "replay:FILE",
          read_only=False),
    Param("strategy", "bcr", "How goals are reached: bcr (seed 004 action selection with `engine`) "
          "or llm_state (seed 003: an open state and a plan policy, with `llm`)", choices=STRATEGIES,
          read_only=False),
    Param("llm_state_method", "ours", "LLM-State method for strategy llm_state (ours, no_summary, "
          "no_objects, no_states, inner_monologue, progprompt)", choices=METHODS,
          read_only=False),
    Param("llm_state_topic", "llm_state", "With strategy llm_state: its open state (LLMState) is "
          "published here, latched, after every rebuild"),
    Param("query_world_service", "query_world", "Perception's QueryWorld service"),
    Param("execute_action_service", "execute_action", "Perception's ExecuteAction service"),
    Param("learn_goal_action", "learn_goal", "Goal elicitation's LearnGoal action"),
    Param("service_timeout_s", 10.0, "Seconds to wait for a service call", min=0.1, max=3600.0),
    Param("learn_goal_timeout_s", 900.0, "Seconds for one object's goal elicitation (with oversight "
          "this includes the operator's time)", min=1.0, max=86400.0,
          read_only=False),
    Param("max_actions", 100, "Actions per goal before reaching it counts as failed", min=1,
          max=100000,
          read_only=False),
    Param("require_confirmation", True, "Every learned or reused goal is confirmed by the oversight "
          "node before the robot moves, whatever the condition; false only on a test bench"),
    Param("allow_scene_paths", False, "Whether a PerformTask goal may name a scene file path (else "
          "scene names only)"),
    Param("max_goal_literals", 32, "Most goal literals one ReachGoal may ask for", min=1, max=10000,
          read_only=False),
    Param("use_productions", True, "Learned production rules (seed 001, `task-learning bootstrap`) try each "
          "goal of a PerformTask before the strategy (bcr or llm_state) selects actions, with no LLM; false: the "
          "strategy only",
          read_only=False),
    Param("productions_require_approval", True, "Only productions an operator approved (`task-learning kb "
          "approve`) are used; false only on a test bench"),
    Param("productions_ask_operator", True, "With productions_require_approval: before a PerformTask, new "
          "(unapproved) productions are put to the operator through the oversight node, one yes/no question per "
          "task family; only a yes approves (a no, a timeout or no oversight node leaves them unused)"),
    *LLM_ENDPOINT_PARAMS,
)

# Which node serves what the planner waits for (named in every error about it).
NODE_OF = {"query_world": "perception", "execute_action": "perception",
           "learn_goal": "goal_elicitation", "oversight/confirm": "oversight"}
MAX_TEXT_CHARS = 200  # task, scene, condition, subtask, predicate and argument strings
MAX_SUBTASKS = 64
SCENE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class RosCallError(DependencyFailed):
    """A service or action of another node did not answer in time, or went away."""


def wait_future(future: Any, timeout_s: float, what: str, *, alive: Any = None,
                stop: StopToken | None = None) -> Any:
    """The future's result; RunStopped when `stop` is set meanwhile; RosCallError naming the
    node when it leaves the graph (`alive()` false) or does not answer within `timeout_s`."""
    waited = wait_for_future(future, timeout_s, alive=alive,
                             stop=(lambda: stop.requested) if stop is not None else None)
    node = NODE_OF.get(what.split(" ")[0], "serving")
    if waited == "stopped":
        future.cancel()
        raise RunStopped(stop.reason if stop is not None and stop.reason else "the planner is shutting down")
    if waited == "gone":
        future.cancel()
        raise RosCallError(f"the {node} node went away while the planner waited for {what}")
    if waited == "timeout":
        future.cancel()
        raise RosCallError(f"the {node} node did not answer {what} within {timeout_s:g} s")
    return future.result()


class BadRequest(TaskLearningError):
    """A goal request the planner refuses (says which field and why)."""


def _text(value: str, field_name: str) -> str:
    if len(value) > MAX_TEXT_CHARS:
        raise BadRequest(f"{field_name}: {len(value)} characters, at most {MAX_TEXT_CHARS}")
    if printable(value) != value:
        raise BadRequest(f"{field_name}: control characters are not allowed")
    return value


def literals_from_request(msgs: Any, max_literals: int) -> list[GoalLiteral]:
    """ReachGoal's literals, validated: count, known predicates, 1-2 arguments, truth values."""
    if not msgs:
        raise BadRequest("ReachGoal needs at least one goal literal")
    if len(msgs) > max_literals:
        raise BadRequest(f"{len(msgs)} goal literals, at most {max_literals}")
    literals = []
    for i, msg in enumerate(msgs):
        where = f"goal[{i}]"
        _text(msg.predicate, f"{where}.predicate")
        if msg.predicate not in KNOWN_PREDICATES:
            raise BadRequest(f"{where}: unknown predicate {printable(msg.predicate)!r} (known: "
                             f"{', '.join(sorted(KNOWN_PREDICATES))})")
        if not 1 <= len(msg.args) <= 2:
            raise BadRequest(f"{where}: {msg.predicate} takes 1 or 2 arguments, got {len(msg.args)}")
        for j, arg in enumerate(msg.args):
            _text(arg, f"{where}.args[{j}]")
        try:
            literals.append(convert.goal_literal_from_msg(msg))
        except ValueError as exc:
            raise BadRequest(f"{where}: {printable(str(exc))}") from None
    return literals


class RosWorld:
    """WorldBackend over the perception node's services."""

    name = "ros"

    def __init__(self, node: Node, query: Any, execute: Any, timeout_s: float,
                 stop: StopToken | None = None) -> None:
        self._node = node
        self._query = query
        self._execute = execute
        self._timeout_s = timeout_s
        self._stop = stop
        self._metadata: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._require(self._query, "query_world")
            request = QueryWorld.Request(query="", include_world=True)
            response = wait_future(self._query.call_async(request), self._timeout_s, "query_world",
                                   alive=self._query.service_is_ready, stop=self._stop)
            self._metadata = convert.metadata_from_world_state_msg(response.world)
        return self._metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        self._require(self._execute, "execute_action")
        object_id = str(params.pop("objectId", ""))
        call = ActionCall(action, object_id, tuple(sorted(params.items())))
        request = ExecuteAction.Request(call=convert.action_call_to_msg(call), return_world=True)
        # Once sent, an action is waited for even when a stop arrives (the body is moving): the
        # stop takes effect before the next one.
        response = wait_future(self._execute.call_async(request), self._timeout_s, "execute_action",
                               alive=self._execute.service_is_ready)
        outcome = convert.action_outcome_from_msg(response.outcome)
        if outcome.blocking_condition == WORLD_UNAVAILABLE:
            raise WorldUnavailableError(f"perception: {outcome.error_message}")
        metadata = convert.metadata_from_world_state_msg(response.world)
        metadata.update(lastAction=action, lastActionSuccess=outcome.success,
                        errorMessage=outcome.error_message, errorCode=outcome.blocking_condition)
        self._metadata = metadata
        return metadata

    def _require(self, client: Any, what: str) -> None:
        if not client.wait_for_service(timeout_sec=self._timeout_s):
            raise RosCallError(f"the perception node is not running (no {what} service after "
                               f"{self._timeout_s:g} s)")


@dataclass
class RemoteOversight:
    """What the loop reads of an oversight outcome, rebuilt from a LearnGoal result."""

    counts: OversightCounts
    confirmed: bool
    confirmed_by: str = ""
    status: OversightStatus | None = None


@dataclass
class RemoteElicitation:
    """A LearnGoal result in the shape the loop reads from ElicitationResult."""

    chosen: Any
    candidates: list
    usage: LLMUsage
    oversight: RemoteOversight | None
    outcome: str
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "chosen": self.chosen.to_dict() if self.chosen else None,
                "candidates": [c.to_dict() for c in self.candidates], "usage": self.usage.to_dict(),
                "counts": dict(self.counts), "errors": list(self.errors), "via": "ros",
                "confirmed_by": self.oversight.confirmed_by if self.oversight else ""}


class PlannerNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("planner", **kwargs)
        declare_parameters(self, PARAMETERS)
        self.group = ReentrantCallbackGroup()
        self._query = self.create_client(QueryWorld, self._p("query_world_service"), callback_group=self.group)
        self._execute = self.create_client(ExecuteAction, self._p("execute_action_service"),
                                           callback_group=self.group)
        self._learn = ActionClient(self, LearnGoal, self._p("learn_goal_action"), callback_group=self.group)
        condition = str(self._p("condition"))
        self.domain = load_domain("household")
        # One body: at most one motion goal at a time, and the token that stops it.
        self._body = threading.Lock()
        self._busy_with = ""
        self._stop: StopToken | None = None
        self._current_goal: Any = None
        self._shutting_down = False
        from task_learning_nodes.oversight_client import OversightClient

        self._oversight = OversightClient(
            self, name="planner", service_wait_s=float(self._p("service_timeout_s")),
            should_stop=lambda: self._stop is not None and self._stop.requested)
        self._perform = ActionServer(self, PerformTask, "perform_task", self._perform_task,
                                     goal_callback=self._accept, cancel_callback=self._on_cancel,
                                     callback_group=self.group)
        self._reach = ActionServer(self, ReachGoal, "reach_goal", self._reach_goal,
                                   goal_callback=self._accept, cancel_callback=self._on_cancel,
                                   callback_group=self.group)
        # LLM-State's open state (strategy llm_state), latched: `ros2 topic echo` shows the latest.
        self._llm_state_pub = self.create_publisher(LLMState, str(self._p("llm_state_topic")), latched())
        self.get_logger().info(f"planner ready (db {resolve_db_path(self._p('db_path'))}, condition {condition}, "
                               f"strategy {self._p('strategy')}, "
                               f"require_confirmation {bool(self._p('require_confirmation'))})")

    def _p(self, name: str) -> Any:
        return self.get_parameter(name).value

    # --- one body, cancel, shutdown --------------------------------------------------------------
    def _accept(self, _goal: Any) -> GoalResponse:
        # Accepted so that a goal refused because the body is busy gets a result saying why
        # (a rejected goal carries no reason); the refusal happens at once in _claim.
        return GoalResponse.REJECT if self._shutting_down else GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle: Any) -> CancelResponse:
        stop, current = self._stop, self._current_goal
        if stop is not None and current is not None and \
                bytes(goal_handle.goal_id.uuid) == bytes(current.goal_id.uuid):
            stop.request("canceled by the client")
        return CancelResponse.ACCEPT

    def _claim(self, what: str, goal_handle: Any) -> StopToken | None:
        if self._shutting_down or not self._body.acquire(blocking=False):
            return None
        self._busy_with = what
        self._current_goal = goal_handle
        self._stop = StopToken()
        if goal_handle.is_cancel_requested:
            self._stop.request("canceled by the client")
        return self._stop

    def _claim_or_refuse(self, what: str, goal_handle: Any, result: Any) -> StopToken | None:
        """The body for this goal, or None with the goal aborted and `result` saying who has it."""
        stop = self._claim(what, goal_handle)
        if stop is None:
            result.success = False
            result.message = self._busy_message(what)
            self.get_logger().warning(result.message)
            goal_handle.abort()
        return stop

    def _release(self) -> None:
        self._busy_with = ""
        self._current_goal = None
        self._stop = None
        self._body.release()

    def _busy_message(self, what: str) -> str:
        if self._shutting_down:
            return f"refused {what}: the planner is shutting down"
        return f"refused {what}: the robot is busy with {self._busy_with or 'another goal'} (one body, one motion goal at a time)"

    def stop_work(self, grace_s: float = 4.0) -> None:
        """SIGINT/SIGTERM (run_node): the running goal stops before its next primitive action,
        and its result reaches the client before the executor stops (the result is sent by a
        task the executor runs after the goal's callback returned)."""
        self._shutting_down = True
        stop = self._stop
        if stop is None:
            return
        stop.request("the planner is shutting down")
        if not self._body.acquire(timeout=grace_s):
            self.get_logger().warning(f"the running goal did not stop within {grace_s:g} s")
            return
        self._body.release()
        executor = self.executor
        if executor is not None:
            # A task queued behind the result's: once it ran, the result's was dispatched, and
            # the executor's shutdown waits for work in progress.
            barrier = threading.Event()
            executor.create_task(barrier.set)
            barrier.wait(grace_s)

    def _world(self, stop: StopToken | None) -> Any:
        world = RosWorld(self, self._query, self._execute, float(self._p("service_timeout_s")), stop)
        return StoppableWorld(world, stop) if stop is not None else world

    def _llm_client(self) -> Any:
        """The LLM client the strategy needs (engine llm or strategy llm_state), else None."""
        if str(self._p("engine")) == "llm" or self._p("strategy") == "llm_state":
            from task_learning.llm.client import make_client

            return make_client(str(self._p("llm")), **llm_client_options(
                {p.name: self._p(p.name) for p in LLM_ENDPOINT_PARAMS}))
        return None

    def _executor(self, kb: KnowledgeBase | None, client: Any = None, review: Any = None) -> GoalExecutor:
        """The goal executor of PerformTask and ReachGoal: with a knowledge base and
        use_productions, its productions (only approved ones with productions_require_approval,
        new ones put to the operator first with productions_ask_operator) try each goal first.
        `review` (a PolicyReviewer) asks the operator before a stored policy this robot did not
        learn (an import) is replayed; None: such policies are never replayed."""
        engine = str(self._p("engine"))
        client = client if client is not None else self._llm_client()
        reacher = None
        if self._p("strategy") == "llm_state":
            from task_learning.llm_state.strategy import LLMStateStrategy

            reacher = LLMStateStrategy(client, method=str(self._p("llm_state_method")),
                                       on_state=self._publish_llm_state)
        productions = None
        if kb is not None and bool(self._p("use_productions")):
            from task_learning.productions.planning import reacher_from_kb

            approved_only = bool(self._p("productions_require_approval"))
            if approved_only and bool(self._p("productions_ask_operator")):
                self._ask_production_approval(kb)
            productions = reacher_from_kb(kb, approved_only=approved_only)
        return GoalExecutor(self.domain, lambda: make_engine(engine, client), kb,
                            max_actions=int(self._p("max_actions")), reacher=reacher, productions=productions,
                            review=review)

    def _ask_production_approval(self, kb: KnowledgeBase) -> None:
        from task_learning.productions.approval import ask_approval, unapproved_families

        if not unapproved_families(kb):
            return
        if not self._oversight.available(float(self._p("service_timeout_s"))):
            self.get_logger().warning("new productions stay unapproved: no oversight node to ask")
            return
        for message in ask_approval(kb, self._oversight).messages:
            self.get_logger().info(f"productions {message}")

    def _publish_llm_state(self, state: Any, goal: str) -> None:
        self._llm_state_pub.publish(convert.llm_state_to_msg(
            state.to_dict(), goal=goal, method=str(self._p("llm_state_method"))))

    def _require_oversight(self, why: str) -> None:
        timeout = float(self._p("service_timeout_s"))
        if not self._oversight.available(timeout):
            raise TaskLearningError(f"refused: {why} requires operator confirmation, but no oversight "
                                    f"node is reachable (no oversight/confirm service after {timeout:g} s)")

    # --- PerformTask ---------------------------------------------------------------------------
    def _scene(self, name: str) -> Any:
        name = _text(name, "scene") or str(self._p("scene"))
        if not bool(self._p("allow_scene_paths")):
            if not SCENE_NAME.match(name):
                raise BadRequest(f"scene: {printable(name)!r} is not a scene name (scenes are named, "
                                 f"e.g. store_groceries; paths need the allow_scene_paths parameter)")
            if name not in available_scenes():
                raise BadRequest(f"scene: no scene named {name!r} (known: {', '.join(available_scenes())})")
        return load_scene(name)

    def _perform_task(self, goal_handle: Any) -> PerformTask.Result:
        result = PerformTask.Result()
        stop = self._claim_or_refuse("perform_task", goal_handle, result)
        if stop is None:
            return result
        learner: TaskLearner | None = None
        try:
            request = goal_handle.request
            scene = self._scene(request.scene)
            task = _text(request.task, "task")
            check_task(scene, task or scene.task)
            if len(request.subtasks) > MAX_SUBTASKS:
                raise BadRequest(f"subtasks: {len(request.subtasks)} given, at most {MAX_SUBTASKS}")
            if request.subtasks:
                wanted = {_text(s, "subtasks") for s in request.subtasks}
                unknown = wanted - {s.name for s in scene.subtasks}
                if unknown:
                    raise TaskLearningError(f"unknown subtask(s) {sorted(unknown)} of {scene.task!r}")
                scene.subtasks = [s for s in scene.subtasks if s.name in wanted]
            condition = (_text(request.condition, "condition") or str(self._p("condition"))).upper()
            if condition not in CONDITIONS:
                raise BadRequest(f"condition: unknown {condition!r} (choose from {', '.join(CONDITIONS)})")
            require = bool(self._p("require_confirmation"))
            review = None
            if requires_confirmation(condition, require):
                why = f"condition {condition}" if condition.endswith("+O") else "require_confirmation"
                self._require_oversight(why)
                review = PolicyReviewer(self._oversight, task=scene.task)
            usage = LLMUsage()

            def elicit(*, task: str, object_id: str, metadata: Mapping[str, Any]) -> RemoteElicitation:
                remote = self._learn_goal(task, object_id, condition, list(scene.context), stop)
                usage.merge(remote.usage)
                return remote

            def progress(done: int, total: int, message: str) -> None:
                feedback = PerformTask.Feedback(current_object=message, stage="done",
                                                objects_done=done, objects_total=total,
                                                progress=float(done) / max(total, 1))
                goal_handle.publish_feedback(feedback)

            with KnowledgeBase(resolve_db_path(self._p("db_path"))) as kb:
                learner = TaskLearner(scene=scene, world=self._world(stop), kb=kb, elicit=elicit,
                                      executor=self._executor(kb, review=review), condition=condition,
                                      progress=progress, usage_source=lambda: usage,
                                      confirm=GoalConfirmer(self._oversight, task=scene.task),
                                      require_confirmation=require, stop=stop)
                metrics = learner.run()
        except RunStopped as exc:
            done = len(learner.reports) if learner is not None else 0
            result.success = False
            result.message = f"canceled after {done} object(s): {exc}; everything learned is kept"
            result.objects = [self._object_msg(r) for r in (learner.reports if learner else [])]
            self.get_logger().info(result.message)
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
            else:
                goal_handle.abort()
            return result
        except (TaskLearningError, DependencyFailed) as exc:
            self.get_logger().error(f"perform task failed: {printable(str(exc))}")
            goal_handle.abort()
            result.success = False
            result.message = printable(str(exc))
            return result
        finally:
            self._release()
        summary = summarize(learner.reports, metrics.satisfied, metrics.assertions)
        result.success = summary.success
        result.message = summary.message
        result.incomplete = summary.reasons
        result.satisfied = metrics.satisfied
        result.total = metrics.assertions
        result.completion = metrics.completion / 100.0
        result.counts = convert.elicitation_counts_to_msg({
            "retrieved": metrics.retrieved, "proposed": metrics.proposed, "sourced": metrics.sourced,
            "instructions": metrics.instructions, "yes_no": metrics.yes_no, "words": metrics.words})
        result.usage = convert.llm_usage_to_msg(metrics.usage)
        result.objects = [self._object_msg(r) for r in learner.reports]
        goal_handle.succeed()
        return result

    @staticmethod
    def _object_msg(report: Any) -> TaskObjectOutcome:
        """One object's outcome: the goal in words and literals, who confirmed it, reached or why not."""
        from task_learning_interfaces.msg import GoalCandidate as GoalCandidateMsg

        msg = TaskObjectOutcome()
        msg.object_id = report.object_id
        msg.success = report.outcome == "done"
        detail = f" ({report.message})" if report.message else ""
        msg.message = f"{report.context}: {report.outcome}, goal from {report.goal_source or '-'}{detail}"
        grounded = bool(report.literals)
        msg.goal = GoalCandidateMsg(text=report.goal, parent_id=-1, analyzed=grounded, viable=grounded,
                                    literals=[convert.goal_literal_to_msg(lit) for lit in report.literals])
        msg.outcome = report.outcome
        msg.goal_source = report.goal_source
        msg.confirmed_by = report.confirmed_by
        return msg

    def _learn_goal(self, task: str, object_id: str, condition: str, context: list[str],
                    stop: StopToken) -> RemoteElicitation:
        wait_s = float(self._p("service_timeout_s"))
        if not self._learn.wait_for_server(timeout_sec=wait_s):
            raise RosCallError(f"the goal_elicitation node is not running (no learn_goal action after {wait_s:g} s)")
        goal = LearnGoal.Goal(task=task, object_id=object_id, condition=condition,
                              context=context if "*" in condition else [])
        timeout = float(self._p("learn_goal_timeout_s"))
        handle = wait_future(self._learn.send_goal_async(goal), wait_s, "learn_goal (goal)",
                             alive=self._learn.server_is_ready, stop=stop)
        if not handle.accepted:
            raise RosCallError(f"the goal_elicitation node rejected the learn_goal goal for {object_id}")
        wrapped = wait_future(handle.get_result_async(), timeout, "learn_goal (result)",
                              alive=self._learn.server_is_ready, stop=stop)
        res = wrapped.result
        if not res.success and LLM_UNAVAILABLE in res.message:  # no later object can be elicited
            raise DependencyFailed(f"goal elicitation of {object_id}: {printable(res.message, 500)}")
        counts = convert.elicitation_counts_from_msg(res.counts)
        chosen = convert.goal_candidate_from_msg(res.chosen) if res.success and res.chosen.text else None
        oversight = None
        if condition.endswith("+O"):
            oversight = RemoteOversight(
                OversightCounts(instructions=counts.get("instructions", 0), yes_no=counts.get("yes_no", 0),
                                words=counts.get("words", 0), proposed=counts.get("proposed", 0),
                                sourced=counts.get("sourced", 0)),
                confirmed=chosen is not None, confirmed_by=res.confirmed_by,
                status=OversightStatus(res.oversight_status) if res.oversight_status in
                {s.value for s in OversightStatus} else None)
        return RemoteElicitation(
            chosen=chosen,
            candidates=[convert.goal_candidate_from_msg(c) for c in res.candidates],
            usage=convert.llm_usage_from_msg(res.usage),
            oversight=oversight,
            outcome="ok" if chosen else (res.message or "no goal"),
            errors=[] if res.success else [res.message],
            counts=counts,
        )

    # --- ReachGoal -----------------------------------------------------------------------------
    def _reach_goal(self, goal_handle: Any) -> ReachGoal.Result:
        result = ReachGoal.Result()
        stop = self._claim_or_refuse("reach_goal", goal_handle, result)
        if stop is None:
            return result
        outcomes: list = []
        try:
            request = goal_handle.request
            literals = literals_from_request(request.goal, int(self._p("max_goal_literals")))
            max_actions = int(self._p("max_actions"))
            if request.max_steps > max_actions:
                raise BadRequest(f"max_steps: {request.max_steps}, at most {max_actions} (the "
                                 f"max_actions parameter)")
            world = self._world(stop)
            type_of, _ = type_index(world.metadata)
            unknown = sorted({a for lit in literals for a in lit.args if a not in type_of})
            if unknown:
                raise BadRequest(f"no object with id {', '.join(repr(a) for a in unknown)} in the world")

            def on_outcome(outcome: Any) -> None:
                outcomes.append(outcome)
                goal_handle.publish_feedback(ReachGoal.Feedback(outcome=convert.action_outcome_to_msg(outcome)))

            with KnowledgeBase(resolve_db_path(self._p("db_path"))) as kb:
                if bool(self._p("require_confirmation")):
                    covered, reason = goal_covered(literals, kb.goals(), type_of)
                    if not covered:
                        raise BadRequest(f"refused: {reason}")
                # the same executor as PerformTask's: productions first (approved ones only, by
                # default), then the strategy; the knowledge base holds no policy for a bare
                # literal goal (no task), so none is replayed or learned here
                client = self._llm_client()
                executor = self._executor(kb, client)
                if request.max_steps:
                    executor.max_actions = int(request.max_steps)
                reached = executor.reach(world, literals, on_outcome=on_outcome)
            usage = client.usage if client is not None else LLMUsage()
        except RunStopped as exc:
            result.success = False
            result.message = f"canceled after {len(outcomes)} action(s): {exc}"
            result.outcomes = [convert.action_outcome_to_msg(o) for o in outcomes]
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
            else:
                goal_handle.abort()
            return result
        except (TaskLearningError, DependencyFailed) as exc:
            goal_handle.abort()
            result.success = False
            result.message = printable(str(exc))
            self.get_logger().warning(f"reach_goal: {result.message}")
            return result
        finally:
            self._release()
        result.success = reached.success
        result.message = reached.message
        result.outcomes = [convert.action_outcome_to_msg(o) for o in reached.outcomes]
        result.usage = convert.llm_usage_to_msg(usage)
        goal_handle.succeed()
        return result


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(PlannerNode, args, name="planner", signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
