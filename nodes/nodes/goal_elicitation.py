"""goal_elicitation_node: the LearnGoal and LearnGoals action servers (STARS goal elicitation).

LearnGoal elicits one object's goal (its stages as feedback; the chosen goal, every candidate with
its provenance, the object's LLM usage and counts as result). LearnGoals (the planner's default)
elicits the objects of a task together: their model stages merged into shared round trips by
`task_learning.stars.together.CrossObjectElicitor`, then LearnGoal goals naming the batch take the
objects one at a time and run each object's Oversight (+O) then. The batch rules (one batch at a
time, owned by its sender; idle timeout; an object whose batch closed is elicited on its own) are
`task_learning.planning.batches`, ROS-free; this node maps the two actions onto them. Grounding runs
in-process; the world comes from `world_state` (until then, the `scene` parameter's initial state);
+O asks the oversight node. A cancel ends the whole goal and withdraws its question. Details:
docs/stars.md (through the ROS graph).
"""
from __future__ import annotations

import threading
import traceback
from typing import TYPE_CHECKING, Any, Mapping

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.lifecycle.cancellation import DependencyFailed, RunStopped
from task_learning.lifecycle.signals import StopSignals
from task_learning.llm.constraints import effective_decoding, parse_decoding
from task_learning.llm.usage import copy_usage, usage_diff
from task_learning.planning.batches import Batch, BatchBook, BatchRefused, check_object_ids, check_request, start_batch
from task_learning.planning.progress import Snapshot
from task_learning.stars.conditions import Condition, flags, parse_condition, user_context
from task_learning.stars.elicit import ElicitationResult, ElicitationSetup, as_state_and_metadata, elicit_goal
from task_learning.stars.prompts import load_templates
from task_learning.stars.report import FEEDBACK_STAGES, paper_counts, verdict_line
from task_learning.stars.together import CrossObjectElicitor
from task_learning.stars.tree import TreeSettings
from task_learning_interfaces.action import LearnGoal, LearnGoals
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.goal_elicitation_params import Parameters
from task_learning_nodes.plumbing.node_base import LatestWorldState, run_node, shutdown_requested
from task_learning_nodes.plumbing.params import declare_parameters, llm_client_options

if TYPE_CHECKING:
    from task_learning.types import WorldState
    from task_learning.world.scene import Scene
    from task_learning_nodes.clients.oversight_client import OversightClient
    from task_learning_nodes.plumbing.diagnostics import Check

# A LearnGoal or LearnGoals goal as the action server hands it over (the generated messages are untyped).
GoalHandle = ServerGoalHandle[Any, Any, Any]

NODE_NAME = "goal_elicitation"

class GoalElicitationNode(Node):
    # A LearnGoals batch holds a thread for its life and a LearnGoal one for its question; the
    # oversight node's replies, cancels and the world state need threads of their own.
    executor_threads = 6

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, Parameters)

        from task_learning.llm.client import make_client

        self.default_condition = parse_condition(params.condition)  # bad value: exit 2
        self.settings = TreeSettings(max_workers=params.max_workers, max_requests=params.max_requests)
        self.templates = load_templates()  # ConfigError names the file and key
        self.client = make_client(params.llm, cache=params.llm_cache or None,
                                  latency_s=params.llm_latency_s, **llm_client_options(params))
        self.decoding, notice = effective_decoding(self.client.provider, parse_decoding(params.decoding, params.llm))
        if notice:
            self.get_logger().warning(notice)
        # The STARS tree as it grows and every LLM call, on the graph (recorders, the live view).
        from task_learning.episode.bus import EpisodeBus
        from task_learning.episode.messages import LLM_CALLS, STARS_TREE
        from task_learning.episode.observe import LLMCallPublisher
        from task_learning_nodes.plumbing.episode_topics import RosSink

        self._episode = EpisodeBus([RosSink(self, {STARS_TREE, LLM_CALLS})])
        self.client.recorder = LLMCallPublisher(self._episode, then=self.client.recorder)
        self.batches = BatchBook(params.batch_idle_s)  # the LearnGoals batch rules (planning.batches)
        self.location = str(params.location or "")
        self.oversight_timeout_s = params.oversight_timeout_s
        self.oversight_wait_s = params.oversight_wait_s
        from task_learning.oversight.pairing import StackKey

        self.stack_key = StackKey.load_or_create(params.stack_key_file or None)
        self._cancelled: set[bytes] = set()  # goal ids whose cancel was requested
        self._current: bytes | None = None
        self._scene: Scene | None = None
        initial: dict[str, Any] | None = None
        scene = str(params.scene or "")
        if scene:
            from task_learning.world.scene import load_scene

            self._scene = load_scene(scene)
            initial = {"sceneName": self._scene.name, "objects": self._scene.objects}
            self.location = self.location or self._scene.location
        self._run_lock = threading.Lock()
        self._operator: OversightClient | None = None

        # Until the first message: the scene's start as metadata (the topic's messages are converted).
        self.world: LatestWorldState[WorldState | dict[str, Any]] = LatestWorldState(
            self, params.world_state_topic, convert.world_state_from_msg,
            transient_local=params.world_state_transient_local,
            initial=initial, initial_source=f"scene {scene}" if scene else "none",
            callback_group=MutuallyExclusiveCallbackGroup())
        from task_learning_nodes.plumbing.qos import action_server_qos

        self._server = ActionServer(self, LearnGoal, params.action_name, self._execute,
                                    goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                    cancel_callback=self._on_cancel,
                                    callback_group=ReentrantCallbackGroup(), **action_server_qos())
        self._batch_server = ActionServer(self, LearnGoals, params.learn_goals_action, self._execute_batch,
                                          goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                          handle_accepted_callback=self._batch_accepted,
                                          cancel_callback=self._on_batch_cancel,
                                          callback_group=ReentrantCallbackGroup(), **action_server_qos())
        self.get_logger().info(
            f"serving {params.action_name} and {params.learn_goals_action}: llm {params.llm}, default condition "
            f"{self.default_condition.value}, world from {params.world_state_topic} "
            f"({self.world.source} until then), grounding in-process")

    def diagnostics(self) -> list[Check]:
        """/diagnostics: the LLM endpoint (reachable? latency) and where the world comes from."""
        from task_learning_nodes.plumbing.diagnostics import Check, Level, llm_check

        world = Check("world", Level.OK if self.world.get() is not None else Level.WARN,
                      f"world from {self.world.source}")
        return [llm_check(self.client), world]

    # ------------------------------------------------------------------ inputs
    def _operator_for(self) -> OversightClient:
        if self._operator is None:
            from task_learning_nodes.clients.oversight_client import OversightClient

            self._operator = OversightClient(self, name="goal_elicitation",
                                             default_timeout_s=self.oversight_timeout_s,
                                             service_wait_s=self.oversight_wait_s,
                                             should_stop=self._stopping, asker="goal_elicitation",
                                             stack_key=self.stack_key)
        return self._operator

    def _on_cancel(self, goal_handle: GoalHandle) -> CancelResponse:
        self._cancelled.add(bytes(goal_handle.goal_id.uuid))
        return CancelResponse.ACCEPT

    def _stopping(self) -> bool:
        """The running goal was cancelled (or the node stops): its question is withdrawn."""
        return shutdown_requested() or (self._current is not None and self._current in self._cancelled)

    # ------------------------------------------------------------------ the action
    def _execute(self, goal_handle: GoalHandle) -> LearnGoal.Result:
        goal = goal_handle.request
        result = LearnGoal.Result()
        goal_id = bytes(goal_handle.goal_id.uuid)
        batch_id = ""
        with self._run_lock:
            self._current = goal_id
            # An endpoint that stopped serving an earlier goal (a restarted LLM server) gets a
            # fresh chance: this goal fails on its own if it is still down.
            self.client.reset_breaker()
            try:
                outcome, batch_id = self._elicit(goal, goal_handle)
            except Exception as exc:  # noqa: BLE001 - every failure is a result; a bug must not take the server down
                return self._failed(goal_handle, result, exc, f"LearnGoal {goal.object_id!r}")
            finally:
                self._current = None
                self._cancelled.discard(goal_id)
        self._fill(result, outcome)
        result.batch_id = batch_id
        self._feedback(goal_handle, "done", len(outcome.candidates), outcome)
        if result.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def _elicit(self, goal: Any, goal_handle: GoalHandle) -> tuple[ElicitationResult, str]:
        """The object's elicitation, and the id of the batch it came from ("" when alone)."""
        condition = self._condition(goal.condition)
        world = self._world()
        object_id = goal.object_id.strip()
        if not object_id:
            raise TaskLearningError("the goal names no object (object_id is empty)")
        check_request({"task": goal.task, "object_id": goal.object_id, "condition": goal.condition,
                       "batch_id": goal.batch_id}, goal.context)
        task = goal.task or getattr(self._scene, "task", "")
        operator = self._checked_operator(condition)

        def on_stage(stage: str, counts: Mapping[str, int]) -> None:
            if self._stopping():
                raise RunStopped("canceled by the client")
            self._feedback(goal_handle, FEEDBACK_STAGES.get(stage, stage), int(counts.get("candidates", 0)), None)

        batch = self.batches.find(goal.batch_id, task, condition, stopping=self._stopping)
        if batch is not None:
            _, metadata = as_state_and_metadata(world)
            taken = self.batches.take(batch, task=task, object_id=object_id, metadata=metadata, stopping=self._stopping,
                                      on_stage=on_stage, on_ready=lambda: self._feedback(goal_handle, "select", 0, None),
                                      asks_operator=flags(condition).oversight)
            self.client.raise_if_unavailable()  # as on the per-object path: the goal names the endpoint
            return taken.outcome, batch.batch_id if taken.in_batch else ""
        if goal.batch_id:
            self.get_logger().info(f"batch {printable(goal.batch_id, 40)} is not open (closed, or another task or "
                                   f"condition): eliciting {object_id} on its own")
        self._feedback(goal_handle, "retrieve", 0, None)
        from task_learning.episode.observe import StarsTreePublisher

        # A LearnGoal that named a batch is part of a cross-object run: the same batched round trips
        # as the elicitor's own fallback, so the run's count does not depend on when the batch closed.
        outcome = elicit_goal(task, object_id, world, self._scene, condition, self.client,
                              setup=ElicitationSetup(location=self.location or None,
                                                     system_context=self._user_context(goal.context, condition),
                                                     templates=self.templates, settings=self.settings,
                                                     operator=operator, on_stage=on_stage,
                                                     on_tree=StarsTreePublisher(self._episode, task),
                                                     batched=bool(goal.batch_id), decoding=self.decoding))
        # The endpoint stopped serving (a dead or hung LLM server): the goal fails with that
        # reason, which the planner recognises (LLM_UNAVAILABLE) and ends its task with.
        self.client.raise_if_unavailable()
        return outcome, ""

    def _condition(self, text: str) -> Condition:
        return parse_condition(text) if text.strip() else self.default_condition

    def _world(self) -> WorldState | dict[str, Any]:
        world: WorldState | dict[str, Any] | None = self.world.get()
        if world is None:
            raise TaskLearningError("no world state yet: nothing on the world_state topic and no scene parameter")
        return world

    def _user_context(self, sentences: Any, condition: Condition) -> list[str]:
        return user_context(condition, sentences, self._scene.context if self._scene is not None else ())

    def _checked_operator(self, condition: Condition) -> OversightClient | None:
        """The oversight client of the +O conditions (None otherwise), checked to be reachable
        before any LLM call: with nobody to confirm, eliciting would be wasted work."""
        operator = self._operator_for() if flags(condition).oversight else None
        if operator is not None and not operator.available(self.oversight_wait_s):
            raise DependencyFailed(f"the oversight node is not running (no oversight/confirm service "
                                   f"after {self.oversight_wait_s:g} s)")
        return operator

    # ------------------------------------------------------------------ LearnGoals: a batch
    def _batch_accepted(self, goal_handle: GoalHandle) -> None:
        self.batches.accepted(bytes(goal_handle.goal_id.uuid).hex())
        goal_handle.execute()

    def _on_batch_cancel(self, goal_handle: GoalHandle) -> CancelResponse:
        self.batches.closing(bytes(goal_handle.goal_id.uuid).hex())
        return CancelResponse.ACCEPT

    def _execute_batch(self, goal_handle: GoalHandle) -> LearnGoals.Result:
        result = LearnGoals.Result()
        batch_id = bytes(goal_handle.goal_id.uuid).hex()
        batch: Batch | None = None
        try:
            try:  # one batch at a time, and it belongs to its sender: another client's is refused
                self.batches.claim(batch_id, stopping=shutdown_requested)
                batch = self._start_batch(goal_handle.request, goal_handle, batch_id)
                self.batches.install(batch)
            finally:
                if batch is None:
                    self.batches.release(batch_id)
            reason = self.batches.wait_end(batch, cancel_requested=lambda: goal_handle.is_cancel_requested,
                                           shutting_down=shutdown_requested)
        except Exception as exc:  # noqa: BLE001 - every failure is a result; a bug must not take the server down
            return self._failed(goal_handle, result, exc, "batch")
        finally:
            if batch is not None:
                self.batches.close(batch)
        result.success = True
        result.usage = convert.llm_usage_to_msg(usage_diff(self.client.usage, batch.usage_before))
        result.levels = batch.elicitor.levels
        result.objects = convert.object_progress_to_msgs(batch.states.snapshot())
        result.message = (f"{reason} ({batch.taken_count} of {len(batch.object_ids)} objects taken, "
                          f"{batch.elicitor.levels} merged levels, {result.usage.requests} round trips)")
        self.get_logger().info(f"batch {batch.batch_id[:8]} for {batch.task!r} closed: {result.message}")
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return result

    def _start_batch(self, goal: Any, goal_handle: GoalHandle, batch_id: str) -> Batch:
        condition = self._condition(goal.condition)
        world = self._world()
        check_request({"task": goal.task, "condition": goal.condition}, goal.context)
        object_ids = check_object_ids(goal.object_ids)
        task = goal.task or getattr(self._scene, "task", "")
        operator = self._checked_operator(condition)
        _, metadata = as_state_and_metadata(world)
        from task_learning.episode.observe import StarsTreePublisher

        elicitor = CrossObjectElicitor(self.client, self._scene, condition, operator=operator,
                                       templates=self.templates, settings=self.settings,
                                       location=self.location or None,
                                       system_context=self._user_context(goal.context, condition),
                                       on_tree=StarsTreePublisher(self._episode, task), decoding=self.decoding)
        self.client.reset_breaker()  # a restarted LLM server gets a fresh chance, as for each LearnGoal

        def publish(snapshot: Snapshot) -> None:
            if goal_handle.is_active:  # not after the batch's result (a LearnGoal may still finish)
                goal_handle.publish_feedback(LearnGoals.Feedback(objects=convert.object_progress_to_msgs(snapshot),
                                                                 levels=elicitor.levels))

        batch = start_batch(batch_id, task, condition, object_ids, elicitor, metadata, copy_usage(self.client.usage),
                            on_change=publish)
        self.get_logger().info(f"batch {batch_id[:8]}: {task!r}, {condition.value}, "
                               f"{len(elicitor.prefetched())} of {len(batch.object_ids)} objects elicited together")
        return batch

    def _failed(self, goal_handle: GoalHandle, result: Any, exc: Exception, what: str) -> Any:
        """A goal (LearnGoal or LearnGoals) that ended without its result: the message says why; a
        dependency that did not answer is named in `failed_node` (the planner ends its task)."""
        result.success = False
        log = self.get_logger().warning
        if isinstance(exc, RunStopped):
            result.message, log = f"canceled: {printable(str(exc), 300)}; no goal learned", self.get_logger().info
        elif isinstance(exc, DependencyFailed):
            result.failed_node, result.message, log = "oversight", printable(str(exc), 500), self.get_logger().error
        elif isinstance(exc, BatchRefused):
            result.message = printable(str(exc), 500)
        elif isinstance(exc, TaskLearningError):
            result.message = f"error: {printable(str(exc), 500)}"
        else:
            result.message = f"internal error: {type(exc).__name__}: {exc}"
            self.get_logger().error(f"{what} failed:\n{traceback.format_exc()}")
        log(f"{what}: {result.message}")
        if isinstance(exc, RunStopped) and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return result

    def _feedback(self, goal_handle: GoalHandle, stage: str, candidates: int, outcome: ElicitationResult | None) -> None:
        counts = paper_counts(outcome) if outcome is not None else {"retrieved": candidates}
        goal_handle.publish_feedback(LearnGoal.Feedback(stage=stage, candidates_so_far=candidates,
                                                        counts=convert.elicitation_counts_to_msg(counts)))

    def _fill(self, result: Any, outcome: ElicitationResult) -> None:
        result.success = outcome.chosen is not None
        result.message = verdict_line(outcome)
        if outcome.chosen is not None:
            result.chosen = convert.goal_candidate_to_msg(outcome.chosen)
        result.candidates = [convert.goal_candidate_to_msg(c) for c in outcome.candidates]
        result.usage = convert.llm_usage_to_msg(outcome.usage)
        result.counts = convert.elicitation_counts_to_msg(paper_counts(outcome))
        if outcome.oversight is not None:
            if outcome.chosen is not None:
                result.confirmation_id = outcome.oversight.confirmation_id
            # Who the oversight node says answered (a paired operator); the planner takes the name
            # from its own check of confirmation_id, not from this field.
            result.confirmed_by = outcome.oversight.confirmed_by
            result.oversight_status = outcome.oversight.status.value


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(GoalElicitationNode, args, name=NODE_NAME, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
