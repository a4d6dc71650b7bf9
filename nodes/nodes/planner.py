"""planner_node: performs tasks (PerformTask action) and reaches goal literals (ReachGoal action).

It runs the planning service of `task-learning run` on ROS ports (task_learning.planning.task_run):
the perception node's world (clients/ros_world), goals from the goal elicitation node (by default
one `learn_goals` batch of every task object, then one `learn_goal` per object as the loop meets
it, each asking the operator in the task's order), the operator through the oversight node, and
every task object's state as PerformTask's feedback. BCR (or LLM-State) selects actions here;
learned goals and policies go to this node's knowledge base (`db_path`), so the same task again is
Trial #2. The node only validates a goal (planning.requests), wires the ports and turns the outcome
into the result; SingleGoalServer serves both actions (one body: one motion goal at a time, cancel
before the next primitive action, a bounded stop). Nothing moves that an operator did not confirm
(checked with the oversight node, used up once); a node that stops answering ends the task naming
it. The whole safety policy: docs/safety.md.
"""
from __future__ import annotations

import datetime
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node

from task_learning.bcr.domain import load_domain
from task_learning.episode.bus import EpisodeBus
from task_learning.episode.observe import ObservedWorld
from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.kb import KnowledgeBase, resolve_db_path
from task_learning.lifecycle.cancellation import DependencyFailed, RunStopped, StoppableWorld, StopToken
from task_learning.lifecycle.signals import StopSignals
from task_learning.planning.confirmation import goal_covered, literals_confirmed, requires_confirmation
from task_learning.planning.executor import GoalExecutor, PolicyReview, type_index
from task_learning.planning.policy_review import PolicyReviewer
from task_learning.planning.reaching import ProductionApproval, ReachSettings, goal_executor
from task_learning.planning.requests import BadRequest, check_text, literals_of, scene_of, task_request
from task_learning.planning.task_run import TaskFeedback, TaskRun, TaskRunPorts, TaskRunSettings
from task_learning.types import ActionOutcome, LLMUsage
from task_learning.world.backend import WorldBackend
from task_learning.world.scene import Scene
from task_learning_interfaces.action import PerformTask, ReachGoal
from task_learning_interfaces.msg import LLMState
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes.clients.goal_elicitation_client import GoalElicitationClient
from task_learning_nodes.clients.ros_world import RosWorld
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.episode_topics import GraphTap, TaskEpisode
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.params import (
    declare_parameters,
    llm_client_options,
    read_parameters,
)
from task_learning_nodes.plumbing.planner_params import Parameters
from task_learning_nodes.plumbing.qos import latched, service_qos
from task_learning_nodes.plumbing.simple_action_server import (
    ActiveGoal,
    BusyPolicy,
    Finish,
    Refusal,
    SingleGoalServer,
    Status,
)

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient
    from task_learning.llm_state.state import OpenState
    from task_learning_nodes.plumbing.diagnostics import Check

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
        self._tap: GraphTap | None = None  # the graph's channels, subscribed on the first recorded task
        self._decoding_notices: set[str] = set()  # each said once (_reach_settings)
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

    def diagnostics(self) -> list[Check]:
        """/diagnostics: the knowledge base writable, and what the robot is doing."""
        from task_learning_nodes.plumbing.diagnostics import Check, Level, kb_check

        busy_with = self._actions.busy_with
        return [kb_check(resolve_db_path(self._params().db_path)),
                Check("task", Level.OK, f"busy with {busy_with}" if busy_with else "idle")]

    def stop_work(self) -> None:
        """SIGINT/SIGTERM (run_node): the running goal stops before its next primitive action,
        and its result reaches the client before the executor stops (SingleGoalServer.shutdown)."""
        self._actions.shutdown("the planner is shutting down")

    def _world(self, stop: StopToken | None, bus: EpisodeBus | None = None) -> WorldBackend:
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

    def _llm_client(self) -> LLMClient | None:
        """The LLM client the strategy needs (engine llm or strategy llm_state), else None."""
        from task_learning.llm.client import make_client

        params = self._params()
        return make_client(params.llm, **llm_client_options(params)) if self._reach_settings().needs_llm else None

    def _reach_settings(self, client: LLMClient | None = None) -> ReachSettings:
        """The settings of a goal executor; with its client, the decoding its `decoding` parameter
        chose for it (a fallback to free decoding said once in the log, never silently)."""
        from task_learning.llm.constraints import resolve_decoding

        p = self._params()
        settings = ReachSettings(engine=p.engine, strategy=p.strategy, llm_state_method=p.llm_state_method,
                                 max_actions=p.max_actions, use_productions=p.use_productions,
                                 productions_require_approval=p.productions_require_approval,
                                 productions_ask_operator=p.productions_ask_operator)
        if client is None:
            return settings
        decoding, notice = resolve_decoding(p.decoding, p.llm, client.provider, supported=p.strategy != "llm_state",
                                            what="LLM-State on the planner's world")
        if notice and notice not in self._decoding_notices:
            self._decoding_notices.add(notice)
            self.get_logger().warning(notice)
        return replace(settings, decoding=decoding.value)

    def _executor(self, kb: KnowledgeBase | None, client: LLMClient | None = None,
                  review: PolicyReview | None = None) -> GoalExecutor:
        """The goal executor of PerformTask and ReachGoal (planning.reaching); new productions are
        put to the operator through the oversight node when it is there."""
        approval = ProductionApproval(self._asks, lambda: self._oversight.available(self._params().service_timeout_s),
                                      self.get_logger().info, self.get_logger().warning)
        client = client if client is not None else self._llm_client()
        return goal_executor(self._reach_settings(client), self.domain, kb, client,
                             review=review, approval=approval, on_llm_state=self._publish_llm_state)

    def _publish_llm_state(self, state: OpenState, goal: str) -> None:
        self._llm_state_pub.publish(convert.llm_state_to_msg(
            state.to_dict(), goal=goal, method=self._params().llm_state_method))

    def _require_oversight(self, why: str) -> None:
        timeout = self._params().service_timeout_s
        if not self._oversight.available(timeout):
            raise TaskLearningError(f"refused: {why} requires operator confirmation, but no oversight "
                                    f"node is reachable (no oversight/confirm service after {timeout:g} s)")

    # --- PerformTask ---------------------------------------------------------------------------
    def _perform_task(self, goal: ActiveGoal) -> Finish:
        """PerformTask: the request checked and turned into the planning service's task, run on
        ROS ports (planning.task_run.TaskRun), its outcome turned into the action's result."""
        result = PerformTask.Result()
        run: TaskRun | None = None
        try:
            scene, task, condition = self._task_request(goal.handle.request)
            review = self._review(scene, condition)
            run = self._task_run(goal, scene, condition)
            outcome, episode_summary = run.perform(task, review)
        except RunStopped as exc:
            reports = run.reports if run is not None else []
            result.success = False
            result.message = f"canceled after {len(reports)} object(s): {exc}; everything learned is kept"
            result.objects = [convert.object_outcome_to_msg(r) for r in reports]
            self.get_logger().info(result.message)
            return Finish(result, goal.stopped())
        except (TaskLearningError, DependencyFailed) as exc:
            self.get_logger().error(f"perform task failed: {printable(str(exc))}")
            result.success = False
            result.message = printable(str(exc))
            return Finish(result, Status.ABORTED)
        convert.fill_task_result(result, outcome, episode_summary)
        return Finish(result, Status.SUCCEEDED)

    def _task_request(self, request: Any) -> tuple[Scene, str, str]:
        """PerformTask's goal, validated: the scene (narrowed to the subtasks asked for), the task
        the user named ("" for the scene's) and the condition."""
        params = self._params()
        scene = scene_of(check_text(request.scene, "scene") or params.scene, allow_paths=params.allow_scene_paths)
        task, condition = task_request(scene, request.task, request.subtasks,
                                       check_text(request.condition, "condition") or params.condition)
        return scene, task, condition

    def _task_run(self, goal: ActiveGoal, scene: Scene, condition: str) -> TaskRun:
        """A PerformTask goal on the planning service (planning.task_run), with this node's ports:
        the perception node's world, goal elicitation's LearnGoals/LearnGoal, the oversight node,
        the episode; every object's state goes out as the goal's feedback."""
        params = self._params()

        def feedback(fb: TaskFeedback) -> None:
            goal.handle.publish_feedback(PerformTask.Feedback(
                stage=fb.stage, current_object=fb.current_object, objects_done=fb.objects_done,
                objects_total=fb.objects_total, progress=fb.progress,
                objects=convert.object_progress_to_msgs(fb.objects)))

        ports = TaskRunPorts(goals=self._elicitation, world=self._world, recording=self._episode,
                             executor=lambda kb, review: self._executor(kb, review=review), asks=self._asks,
                             feedback=feedback, warn=self.get_logger().warning)
        settings = TaskRunSettings(db_path=params.db_path, across_objects=params.elicitation == "across-objects",
                                   require_confirmation=params.require_confirmation, wait_s=params.service_timeout_s)
        return TaskRun(ports, settings, scene, condition, goal.stop)

    def _review(self, scene: Scene, condition: str) -> PolicyReviewer | None:
        """When goals need an operator's confirmation: the oversight node must be reachable, and
        a stored policy this robot did not learn is put to the operator before it is replayed."""
        if not requires_confirmation(condition, self._params().require_confirmation):
            return None
        self._require_oversight(f"condition {condition}" if condition.endswith("+O") else "require_confirmation")
        return PolicyReviewer(self._asks, task=scene.task)

    def _episode(self, scene: str, task: str, condition: str) -> TaskEpisode:
        """This PerformTask's TaskEpisode: the planner's messages on the graph, and with
        `episode_dir` set, the whole graph recorded into one MCAP file there."""
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
        return TaskEpisode(self, self._episode_topics, path, metadata, db_path=db_path, tap=self._graph_tap)

    def _graph_tap(self) -> GraphTap:
        """The node's GraphTap, made once (one PerformTask runs at a time: REFUSE_WITH_RESULT)."""
        if self._tap is None:
            self._tap = GraphTap(self, callback_group=self.group)
        return self._tap

    # --- ReachGoal -----------------------------------------------------------------------------
    def _reach_goal(self, goal: ActiveGoal) -> Finish:
        result = ReachGoal.Result()
        goal_handle, stop = goal.handle, goal.stop
        outcomes: list = []
        try:
            request = goal_handle.request
            literals = literals_of(request.goal, self._params().max_goal_literals, convert.goal_literal_from_msg)
            max_actions = self._params().max_actions
            if request.max_steps > max_actions:
                raise BadRequest(f"max_steps: {request.max_steps}, at most {max_actions} (the "
                                 f"max_actions parameter)")
            world = self._world(stop)
            type_of, _ = type_index(world.metadata)
            unknown = sorted({a for lit in literals for a in lit.args if a not in type_of})
            if unknown:
                raise BadRequest(f"no object with id {', '.join(repr(a) for a in unknown)} in the world")

            def on_outcome(outcome: ActionOutcome) -> None:
                outcomes.append(outcome)
                goal_handle.publish_feedback(ReachGoal.Feedback(outcome=convert.action_outcome_to_msg(outcome)))

            confirmation_id = check_text(request.confirmation_id, "confirmation_id")
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


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(PlannerNode, args, name="planner", signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
