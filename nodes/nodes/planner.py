"""planner_node: performs tasks (PerformTask action) and reaches goal literals (ReachGoal action).

It runs the same planning service as `task-learning run` (task_learning.planning.service: the
task-learning loop of planning.loop), with ROS ports instead of in-process ones; the node only
turns a goal into the service's request and its outcome into feedback and a result, and serves its
two actions through SingleGoalServer (plumbing/simple_action_server: one goal at a time, cancel,
a bounded stop):
- the world is the perception node: `query_world` for the state, `execute_action` for each
  primitive action (clients/ros_world.RosWorld implements the WorldBackend protocol over those services);
- goals come from the goal elicitation node (clients/goal_elicitation_client; it asks the
  oversight node in the +O conditions): by default (`elicitation: across-objects`) one `learn_goals` batch elicits every
  object of the task together, merged into shared round trips, and the loop then takes one object
  at a time from it with `learn_goal` (its questions to the operator, in the task's order, when
  its turn comes); `per-object` elicits each object with its own `learn_goal`;
- the PerformTask feedback names every task object's state (queued, eliciting, elicited,
  asking_operator, confirmed, chosen, reached, no_goal, ...: msg/ObjectProgress.msg);
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
- confirmations carry their question (issue 31): a goal goal elicitation returns as confirmed is
  taken as confirmed only when the oversight node vouches for its confirmation id (signed reply,
  used up once, for exactly that goal); a ReachGoal with a confirmation id reaches only literals
  of the candidate that confirmation was given for. Nothing another node writes into this
  node's knowledge base stands in for that. The planner's own questions (a stored goal nobody
  confirmed, an imported policy before it is replayed, new productions) count only when the
  oversight node vouches, on the same check, that a paired operator answered them;
- a node that stops answering (oversight, goal elicitation, perception) ends the task naming it;
- every request is validated: sizes, enums, truth values, scenes by name only (a path only
  with `allow_scene_paths`).
"""
from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import ENGINES, make_engine
from task_learning.bcr.literals import KNOWN_PREDICATES
from task_learning.episode.observe import ObservedWorld
from task_learning.errors import TaskLearningError
from task_learning.kb import DEFAULT_DB, KnowledgeBase, resolve_db_path
from task_learning.llm_state.agent import METHODS
from task_learning.llm_state.strategy import STRATEGIES
from task_learning.planning.confirmation import (
    GoalConfirmer,
    goal_covered,
    literals_confirmed,
    requires_confirmation,
)
from task_learning.planning.executor import GoalExecutor, type_index
from task_learning.planning.policy_review import PolicyReviewer
from task_learning.planning.loop import ObjectReport, TaskLearner
from task_learning.planning.progress import ObjectStates, Snapshot
from task_learning.planning.service import ObjectTracker, TaskOutcome, TaskPorts, keep_subtasks, run_task, task_learner
from task_learning.planning.session import CONDITIONS, check_task, task_order
from task_learning.stopping import DependencyFailed, RunStopped, StopToken, StoppableWorld
from task_learning.safe_text import printable
from task_learning.stars.together import objects_to_elicit
from task_learning.types import GoalLiteral, LLMUsage
from task_learning.world.backend import WorldBackend
from task_learning.world.scene import available_scenes, load_scene
from task_learning.stop_signals import StopSignals
from task_learning_interfaces.action import PerformTask, ReachGoal
from task_learning_interfaces.msg import LLMState, ObjectProgress, TaskObjectOutcome
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes.plumbing import convert
from task_learning_nodes.clients.goal_elicitation_client import GoalBatch, GoalElicitationClient, RemoteElicitation
from task_learning_nodes.clients.ros_world import RosWorld
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.params import (
    LLMEndpointParameters,
    declare_parameters,
    llm_client_options,
    param,
    read_parameters,
)
from task_learning_nodes.plumbing.qos import latched, service_qos
from task_learning_nodes.plumbing.simple_action_server import (ActiveGoal, BusyPolicy, Finish, Refusal,
                                                               SingleGoalServer, Status)

ELICITATION = ("across-objects", "per-object")  # how PerformTask elicits goals (the `elicitation` parameter)

# Writable (read_only=False): read at each goal, so `ros2 param set` takes effect from the next
# one. The rest shape clients, publishers or the safety policy at start, and stay read-only.
class Parameters(LLMEndpointParameters):
    """The planner node's parameters (config/nodes/planner.yaml)."""

    scene: str = param("tidy_kitchen", "Scene used for the subtasks and the completion measure when a "
                       "PerformTask goal names none (the world itself is perception's: give both the same scene)",
                       read_only=False)
    condition: str = param("STARS+O", "Condition used when a goal leaves it empty",
                           choices=CONDITIONS,
                           read_only=False)
    db_path: str = param(DEFAULT_DB, "SQLite knowledge base of learned goals and "
                         "policies (the same task again on the same file is Trial #2); default "
                         "$ROS_HOME/task_learning/task_learning.sqlite (~/.ros/...), the same however the graph is "
                         "started; relative paths are relative to the node's working directory")
    engine: str = param("heuristic", "BCR engine used to reach goals: heuristic (no LLM) or llm",
                        choices=ENGINES,
                        read_only=False)
    llm: str = param("offline", "LLM of the llm engine: offline (not a language model), openai, local or "
                     "replay:FILE",
                     read_only=False)
    strategy: str = param("bcr", "How goals are reached: bcr (BCR action selection with `engine`) "
                          "or llm_state (LLM-State: an open state and a plan policy, with `llm`)", choices=STRATEGIES,
                          read_only=False)
    llm_state_method: str = param("ours", "LLM-State method for strategy llm_state (ours, no_summary, "
                                  "no_objects, no_states, inner_monologue, progprompt)", choices=METHODS,
                                  read_only=False)
    llm_state_topic: str = param("llm_state", "With strategy llm_state: its open state (LLMState) is "
                                 "published here, latched, after every rebuild")
    episode_dir: str = param("", "Folder where each PerformTask is recorded as one MCAP episode "
                             "(episode-<time>-<scene>.mcap: the graph's topics, LLM calls, questions and answers, actions, "
                             "knowledge-base changes; `task-learning replay` runs it again); empty: not recorded",
                             read_only=False)
    query_world_service: str = param("query_world", "Perception's QueryWorld service")
    execute_action_service: str = param("execute_action", "Perception's ExecuteAction service")
    learn_goal_action: str = param("learn_goal", "Goal elicitation's LearnGoal action")
    learn_goals_action: str = param("learn_goals", "Goal elicitation's LearnGoals action (elicitation "
                                    "across-objects)")
    elicitation: str = param("across-objects", "How PerformTask elicits goals: across-objects (one LearnGoals "
                             "batch runs the model stages of every task object together, merged into shared round trips; the "
                             "operator is still asked one object at a time, in the task's order, when its turn comes) or "
                             "per-object (one LearnGoal per object, each object's round trips its own: for comparison); the "
                             "goals learned are the same", choices=ELICITATION, read_only=False)
    service_timeout_s: float = param(10.0, "Seconds to wait for a service call", min=0.1, max=3600.0)
    action_timeout_s: float = param(240.0, "Seconds to wait for one primitive action (execute_action): never "
                                    "shorter than service_timeout_s, nor than the robot's longest action "
                                    "(robot.launch.py derives it from the robot profile)", min=0.1, max=86400.0)
    cancel_motion_service: str = param("robot_skills/cancel", "std_srvs/Trigger called when PerformTask is "
                                       "cancelled during an action: the robot's goals in flight are cancelled "
                                       "(the robot-skills layer's); '' = none")
    learn_goal_timeout_s: float = param(900.0, "Seconds for one object's goal elicitation (with oversight "
                                        "this includes the operator's time)", min=1.0, max=86400.0,
                                        read_only=False)
    max_actions: int = param(100, "Actions per goal before reaching it counts as failed", min=1,
                             max=100000,
                             read_only=False)
    require_confirmation: bool = param(True, "Every learned or reused goal is confirmed by the oversight "
                                       "node before the robot moves, whatever the condition; false only on a test bench")
    allow_scene_paths: bool = param(False, "Whether a PerformTask goal may name a scene file path (else "
                                    "scene names only)")
    max_goal_literals: int = param(32, "Most goal literals one ReachGoal may ask for", min=1, max=10000,
                                   read_only=False)
    use_productions: bool = param(True, "Learned production rules (bootstrapped productions, `task-learning bootstrap`) try each "
                                  "goal of a PerformTask before the strategy (bcr or llm_state) selects actions, with no LLM; false: the "
                                  "strategy only",
                                  read_only=False)
    productions_require_approval: bool = param(True, "Only productions an operator approved (`task-learning kb "
                                               "approve`) are used; false only on a test bench")
    productions_ask_operator: bool = param(True, "With productions_require_approval: before a PerformTask, new "
                                           "(unapproved) productions are put to the operator through the oversight node, one yes/no question per "
                                           "task family; only a yes approves (a no, a timeout or no oversight node leaves them unused)")
    stack_key_file: str = param("", "Key file the stack's nodes sign their questions and confirmation checks "
                                "with (the oversight node's stack_key_file); empty: $ROS_HOME/task_learning/stack.key")

BATCH_RESULT_WAIT_S = 2.0  # a stopped task's batch: how long its closing result is waited for
MAX_TEXT_CHARS = 200  # task, scene, condition, subtask, predicate and argument strings
MAX_SUBTASKS = 64
SCENE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


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


class PlannerNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("planner", **kwargs)
        declare_parameters(self, Parameters)
        self.group = ReentrantCallbackGroup()
        qos = service_qos()
        self._query: Client = self.create_client(QueryWorld, self._params().query_world_service, qos_profile=qos,
                                         callback_group=self.group)
        self._execute: Client = self.create_client(ExecuteAction, self._params().execute_action_service, qos_profile=qos,
                                           callback_group=self.group)
        self._cancel_client: Client | None = None
        if self._params().cancel_motion_service:
            from std_srvs.srv import Trigger

            self._cancel_client = self.create_client(Trigger, self._params().cancel_motion_service, qos_profile=qos,
                                                     callback_group=self.group)
        condition = self._params().condition
        self.domain = load_domain("household")
        # One body: at most one motion goal (PerformTask or ReachGoal) at a time; a second one is
        # accepted and refused at once with a result saying what the robot is busy with.
        self._actions = SingleGoalServer(self, policy=BusyPolicy.REFUSE_WITH_RESULT, callback_group=self.group)
        from task_learning.oversight.pairing import StackKey
        from task_learning_nodes.clients.oversight_client import CheckedOperator, OversightClient

        self._oversight = OversightClient(
            self, name="planner", service_wait_s=self._params().service_timeout_s,
            should_stop=self._actions.stop_requested, asker="planner",
            stack_key=StackKey.load_or_create(self._params().stack_key_file or None))
        # The planner's own questions (a stored goal nobody confirmed, an imported policy, new
        # productions): a yes counts only once the oversight node vouches a paired operator gave it.
        self._elicitation = GoalElicitationClient(
            self, learn_goal_action=self._params().learn_goal_action,
            learn_goals_action=self._params().learn_goals_action, oversight=self._oversight, settings=self._params,
            callback_group=self.group)
        self._asks = CheckedOperator(self._oversight, check_timeout_s=self._params().service_timeout_s)
        self._perform = self._actions.serve(PerformTask, "perform_task", self._perform_task,
                                            self._refusal(PerformTask.Result))
        self._reach = self._actions.serve(ReachGoal, "reach_goal", self._reach_goal, self._refusal(ReachGoal.Result))
        # LLM-State's open state (strategy llm_state), latched: `ros2 topic echo` shows the latest.
        self._llm_state_pub = self.create_publisher(LLMState, self._params().llm_state_topic, latched())
        # What the planner does, on the graph for recorders and the live view (task_learning.episode).
        from task_learning.episode import messages as episode_msgs
        from task_learning_nodes.plumbing.episode_topics import RosSink

        self._episode_topics = RosSink(self, {episode_msgs.ACTION, episode_msgs.ACTION_OUTCOME, episode_msgs.BCR_TREE,
                                              episode_msgs.LEARNED_GOAL, episode_msgs.KB_CHANGES})
        self.get_logger().info(f"planner ready (db {resolve_db_path(self._params().db_path)}, condition {condition}, "
                               f"strategy {self._params().strategy}, "
                               f"require_confirmation {self._params().require_confirmation})")

    def _params(self) -> Parameters:
        """The parameters as they are now (the writable ones are read at each goal)."""
        return read_parameters(self, Parameters)

    # --- one body, shutdown ----------------------------------------------------------------------
    def _refusal(self, result_type: Callable[[], Any]) -> Callable[[Refusal], Any]:
        """The result of a motion goal refused because the body is busy or the planner stops."""
        def refuse(refusal: Refusal) -> Any:
            result = result_type()
            result.success = False
            if refusal.shutting_down:
                result.message = f"refused {refusal.what}: the planner is shutting down"
            else:
                result.message = (f"refused {refusal.what}: the robot is busy with "
                                  f"{refusal.busy_with or 'another goal'} (one body, one motion goal at a time)")
            self.get_logger().warning(result.message)
            return result
        return refuse

    def diagnostics(self) -> list[Any]:
        """/diagnostics: the knowledge base writable, and what the robot is doing."""
        from task_learning.diagnostics import Check, Level, kb_check

        busy_with = self._actions.busy_with
        return [kb_check(resolve_db_path(self._params().db_path)),
                Check("task", Level.OK, f"busy with {busy_with}" if busy_with else "idle")]

    def stop_work(self) -> None:
        """SIGINT/SIGTERM (run_node): the running goal stops before its next primitive action,
        and its result reaches the client before the executor stops (SingleGoalServer.shutdown)."""
        self._actions.shutdown("the planner is shutting down")

    def _world(self, stop: StopToken | None, bus: Any = None) -> Any:
        params = self._params()
        world: WorldBackend = RosWorld(self, self._query, self._execute, params.service_timeout_s, stop,
                                       action_timeout_s=params.action_timeout_s, cancel_motion=self._cancel_motion)
        world = ObservedWorld(world, bus) if bus is not None else world  # an episode's: actions and states
        return StoppableWorld(world, stop) if stop is not None else world

    def _cancel_motion(self) -> None:
        """PerformTask cancelled while an action runs: ask the robot-skills layer to cancel every
        robot goal in flight (fire and forget: the action's own result says how it ended)."""
        if self._cancel_client is not None and self._cancel_client.service_is_ready():
            from std_srvs.srv import Trigger

            self._cancel_client.call_async(Trigger.Request())
            self.get_logger().info(f"cancel requested on {self._params().cancel_motion_service}")

    def _llm_client(self) -> Any:
        """The LLM client the strategy needs (engine llm or strategy llm_state), else None."""
        if self._params().engine == "llm" or self._params().strategy == "llm_state":
            from task_learning.llm.client import make_client

            params = self._params()
            return make_client(params.llm, **llm_client_options(params))
        return None

    def _executor(self, kb: KnowledgeBase | None, client: Any = None, review: Any = None) -> GoalExecutor:
        """The goal executor of PerformTask and ReachGoal: with a knowledge base and
        use_productions, its productions (only approved ones with productions_require_approval,
        new ones put to the operator first with productions_ask_operator) try each goal first.
        `review` (a PolicyReviewer) asks the operator before a stored policy this robot did not
        learn (an import) is replayed; None: such policies are never replayed."""
        engine = self._params().engine
        client = client if client is not None else self._llm_client()
        reacher = None
        if self._params().strategy == "llm_state":
            from task_learning.llm_state.strategy import LLMStateStrategy

            reacher = LLMStateStrategy(client, method=self._params().llm_state_method,
                                       on_state=self._publish_llm_state)
        productions = None
        if kb is not None and self._params().use_productions:
            from task_learning.productions.planning import reacher_from_kb

            approved_only = self._params().productions_require_approval
            if approved_only and self._params().productions_ask_operator:
                self._ask_production_approval(kb)
            productions = reacher_from_kb(kb, approved_only=approved_only)
        return GoalExecutor(self.domain, lambda: make_engine(engine, client), kb,
                            max_actions=self._params().max_actions, reacher=reacher, productions=productions,
                            review=review)

    def _ask_production_approval(self, kb: KnowledgeBase) -> None:
        from task_learning.productions.approval import ask_approval, unapproved_families

        if not unapproved_families(kb):
            return
        if not self._oversight.available(self._params().service_timeout_s):
            self.get_logger().warning("new productions stay unapproved: no oversight node to ask")
            return
        for message in ask_approval(kb, self._asks).messages:
            self.get_logger().info(f"productions {message}")

    def _publish_llm_state(self, state: Any, goal: str) -> None:
        self._llm_state_pub.publish(convert.llm_state_to_msg(
            state.to_dict(), goal=goal, method=self._params().llm_state_method))

    def _require_oversight(self, why: str) -> None:
        timeout = self._params().service_timeout_s
        if not self._oversight.available(timeout):
            raise TaskLearningError(f"refused: {why} requires operator confirmation, but no oversight "
                                    f"node is reachable (no oversight/confirm service after {timeout:g} s)")

    # --- PerformTask ---------------------------------------------------------------------------
    def _scene(self, name: str) -> Any:
        name = _text(name, "scene") or self._params().scene
        if not self._params().allow_scene_paths:
            if not SCENE_NAME.match(name):
                raise BadRequest(f"scene: {printable(name)!r} is not a scene name (scenes are named, "
                                 f"e.g. store_groceries; paths need the allow_scene_paths parameter)")
            if name not in available_scenes():
                raise BadRequest(f"scene: no scene named {name!r} (known: {', '.join(available_scenes())})")
        return load_scene(name)

    def _perform_task(self, goal: ActiveGoal) -> Finish:
        """PerformTask: the request checked and turned into the planning service's task, run on
        ROS ports (PerformTaskRun), its outcome turned into the action's result."""
        result = PerformTask.Result()
        run: PerformTaskRun | None = None
        try:
            scene, task, condition = self._task_request(goal.handle.request)
            review = self._review(scene, condition)
            run = PerformTaskRun(self, goal, scene, condition)
            outcome, episode_summary = run.perform(task, review)
        except RunStopped as exc:
            reports = run.reports if run is not None else []
            result.success = False
            result.message = f"canceled after {len(reports)} object(s): {exc}; everything learned is kept"
            result.objects = [self._object_msg(r) for r in reports]
            self.get_logger().info(result.message)
            return Finish(result, goal.stopped())
        except (TaskLearningError, DependencyFailed) as exc:
            self.get_logger().error(f"perform task failed: {printable(str(exc))}")
            result.success = False
            result.message = printable(str(exc))
            return Finish(result, Status.ABORTED)
        self._task_result(result, outcome, episode_summary)
        return Finish(result, Status.SUCCEEDED)

    def _task_request(self, request: Any) -> tuple[Any, str, str]:
        """PerformTask's goal, validated: the scene (narrowed to the subtasks asked for), the task
        the user named ("" for the scene's) and the condition."""
        scene = self._scene(request.scene)
        task = _text(request.task, "task")
        check_task(scene, task or scene.task)
        if len(request.subtasks) > MAX_SUBTASKS:
            raise BadRequest(f"subtasks: {len(request.subtasks)} given, at most {MAX_SUBTASKS}")
        keep_subtasks(scene, {_text(s, "subtasks") for s in request.subtasks})
        condition = (_text(request.condition, "condition") or self._params().condition).upper()
        if condition not in CONDITIONS:
            raise BadRequest(f"condition: unknown {condition!r} (choose from {', '.join(CONDITIONS)})")
        return scene, task, condition

    def _review(self, scene: Any, condition: str) -> PolicyReviewer | None:
        """When goals need an operator's confirmation: the oversight node must be reachable, and
        a stored policy this robot did not learn is put to the operator before it is replayed."""
        if not requires_confirmation(condition, self._params().require_confirmation):
            return None
        self._require_oversight(f"condition {condition}" if condition.endswith("+O") else "require_confirmation")
        return PolicyReviewer(self._asks, task=scene.task)

    def _task_result(self, result: Any, outcome: TaskOutcome, episode_summary: str) -> None:
        metrics, summary = outcome.metrics, outcome.summary
        result.success = summary.success
        result.message = summary.message + (f"; {episode_summary}" if episode_summary else "")
        result.incomplete = summary.reasons
        result.satisfied = metrics.satisfied
        result.total = metrics.assertions
        result.completion = metrics.completion / 100.0
        result.counts = convert.elicitation_counts_to_msg({
            "retrieved": metrics.retrieved, "proposed": metrics.proposed, "sourced": metrics.sourced,
            "instructions": metrics.instructions, "yes_no": metrics.yes_no, "words": metrics.words})
        result.usage = convert.llm_usage_to_msg(metrics.usage)
        result.objects = [self._object_msg(r) for r in outcome.reports]

    def _episode(self, scene: str, task: str, condition: str) -> Any:
        """This PerformTask's TaskEpisode: the planner's messages on the graph, and with
        `episode_dir` set, the whole graph recorded into one MCAP file there."""
        import datetime

        from task_learning_nodes.plumbing.episode_topics import TaskEpisode

        db_path = resolve_db_path(self._params().db_path)
        folder = str(self._params().episode_dir or "")
        now = datetime.datetime.now(datetime.timezone.utc)
        path = Path(folder) / f"episode-{now.strftime('%Y%m%dT%H%M%S')}-{scene}.mcap" if folder else None
        metadata = {"scene": scene, "task": task, "condition": condition, "llm": "goal_elicitation node's",
                    "operator": "oversight node", "engine": self._params().engine, "seed": "",
                    # per-object: goal elicitation sends each tree level as concurrent single requests
                    "elicitation": "across-objects" if self._params().elicitation == "across-objects" else "concurrent",
                    "workers": "8", "db": db_path,
                    "recorded_by": "planner (PerformTask)", "started": now.isoformat(timespec="seconds")}
        return TaskEpisode(self, self._episode_topics, path, metadata, db_path=db_path, callback_group=self.group)

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

    # --- ReachGoal -----------------------------------------------------------------------------
    def _reach_goal(self, goal: ActiveGoal) -> Finish:
        result = ReachGoal.Result()
        goal_handle, stop = goal.handle, goal.stop
        outcomes: list = []
        try:
            request = goal_handle.request
            literals = literals_from_request(request.goal, self._params().max_goal_literals)
            max_actions = self._params().max_actions
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

            confirmation_id = _text(request.confirmation_id, "confirmation_id")
            if confirmation_id:
                # A confirmation the oversight node issued for this goal: checked and used up
                # whatever require_confirmation says (a stale or forged one is refused).
                checked = self._oversight.check(confirmation_id, consume=True,
                                                timeout_s=self._params().service_timeout_s)
                problem = checked.message if not checked.valid else literals_confirmed(literals, checked.candidate)
                if problem:
                    raise BadRequest(f"refused: confirmation {printable(confirmation_id, 40)}: {problem}")
                self.get_logger().info(f"reach_goal confirmed by {checked.answered_by} via {checked.client} "
                                       f"(question {checked.question_id}: {checked.question})")
            with KnowledgeBase(resolve_db_path(self._params().db_path)) as kb:
                if self._params().require_confirmation and not confirmation_id:
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
            return Finish(result, goal.stopped())
        except (TaskLearningError, DependencyFailed) as exc:
            result.success = False
            result.message = printable(str(exc))
            self.get_logger().warning(f"reach_goal: {result.message}")
            return Finish(result, Status.ABORTED)
        result.success = reached.success
        result.message = reached.message
        result.outcomes = [convert.action_outcome_to_msg(o) for o in reached.outcomes]
        result.usage = convert.llm_usage_to_msg(usage)
        return Finish(result, Status.SUCCEEDED)


class PerformTaskRun:
    """One PerformTask goal on the planning service (task_learning.planning.service), with the
    planner's ROS ports: the perception node's world, goals from goal elicitation (a LearnGoals
    batch with `elicitation: across-objects`, then one LearnGoal per object as the loop meets it),
    confirmations through the oversight node. Every object's state goes out as the goal's feedback.
    The node's own helper: it calls the node's clients directly."""

    def __init__(self, node: PlannerNode, goal: ActiveGoal, scene: Any, condition: str) -> None:
        self.node = node
        self.goal = goal
        self.scene = scene
        self.condition = condition
        self.usage = LLMUsage()  # the task's LLM usage: each object's, and the batch's once it closed
        self.batch: GoalBatch | None = None
        self.learner: TaskLearner | None = None
        self._feedback = PerformTask.Feedback(stage="learn", objects_total=len(scene.task_objects))
        self._feedback_lock = threading.Lock()
        self.states = ObjectStates(on_change=self.publish)
        self.tracker = ObjectTracker(self.states)

    @property
    def reports(self) -> list[ObjectReport]:
        """What every object handled so far came to (also when the run was stopped)."""
        return self.learner.reports if self.learner is not None else []

    def publish(self, snapshot: Snapshot | None = None, **fields: Any) -> None:
        with self._feedback_lock:  # one message at a time, each with every object's latest state
            for name, value in fields.items():
                setattr(self._feedback, name, value)
            if snapshot is not None:
                self._feedback.objects = [ObjectProgress(object_id=o, state=st, detail=d) for o, st, d in snapshot]
            self.goal.handle.publish_feedback(self._feedback)

    def progress(self, done: int, total: int, message: str) -> None:
        self.publish(self.states.snapshot(), current_object=message, stage="done", objects_done=done,
                     objects_total=total, progress=float(done) / max(total, 1))

    def elicit(self, *, task: str, object_id: str, metadata: Mapping[str, Any]) -> RemoteElicitation:
        remote = self.node._elicitation.learn_goal(task, object_id, self.condition, list(self.scene.context), self.goal.stop,
                                       metadata, batch_id=self.batch.batch_id if self.batch is not None else "",
                                       states=self.states)
        if not remote.batch_id:  # else counted once, in the batch's usage
            self.usage.merge(remote.usage)
        return remote

    def perform(self, task: str, review: PolicyReviewer | None) -> tuple[TaskOutcome, str]:
        """Run the task: its outcome, and what became of its episode recording ("" when none)."""
        node, scene, stop = self.node, self.scene, self.goal.stop
        params = node._params()
        with node._episode(scene.name, task or scene.task, self.condition) as episode, \
                KnowledgeBase(resolve_db_path(params.db_path)) as kb:
            world = node._world(stop, episode.bus)
            order = task_order(scene, world.metadata)  # the loop's order, as it meets the objects
            self.tracker.queue(order)
            if params.elicitation == "across-objects":
                todo = objects_to_elicit(scene.task, order, world.metadata, kb, self.condition)
                self.batch = node._elicitation.open_batch(scene.task, todo, self.condition, list(scene.context), self.states,
                                              stop) if todo else None
            self.learner = task_learner(scene, self.condition, TaskPorts(
                world=world, kb=kb, elicit=self.tracker.elicit(self.elicit),
                executor=node._executor(kb, review=review),
                confirm=self.tracker.confirm(GoalConfirmer(node._asks, task=scene.task)),
                require_confirmation=params.require_confirmation, stop=stop, usage_source=lambda: self.usage,
                progress=self.progress, on_object=lambda object_id: self.publish(current_object=object_id,
                                                                                  stage="learn")))
            episode.observe(self.learner)
            self.learner.on_report = _both(self.learner.on_report, self.tracker.report)  # the episode's, the feedback's
            try:
                outcome = run_task(self.learner)
            finally:
                self._close_batch()
            outcome.metrics.usage = self.usage
        return outcome, episode.summary

    def _close_batch(self) -> None:
        """No feedback after the result (a late batch report); the batch cancelled, its usage counted."""
        self.states.on_change = None
        if self.batch is None:
            return
        stopped = self.goal.stop.requested
        batch_usage = self.batch.close(BATCH_RESULT_WAIT_S if stopped else self.node._params().service_timeout_s,
                                       self.node._elicitation.learn_batch.server_is_ready)
        if batch_usage is None and not stopped:
            self.node.get_logger().warning("the learn_goals batch's result did not come: its LLM usage "
                                           "is missing from this task's")
        self.usage.merge(batch_usage or LLMUsage())


def _both(first: Callable[[Any], None] | None, second: Callable[[Any], None]) -> Callable[[Any], None]:
    """One observer that calls two (the first may be None)."""
    def call(value: Any) -> None:
        if first is not None:
            first(value)
        second(value)
    return call


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(PlannerNode, args, name="planner", signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
