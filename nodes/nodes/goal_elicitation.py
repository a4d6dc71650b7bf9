"""goal_elicitation_node: the LearnGoal and LearnGoals action servers (STARS goal elicitation).

LearnGoal goal: task, object_id, context (STARS+CTX user-context sentences), condition ("" = the
node's default; "STARS", "stars_plus_o", "TBP+O", ...), batch_id. Feedback: the stage just
finished (retrieve | recurse | analyze | repair | select | confirm | done) with the candidates so
far. Result: the chosen goal, every candidate with its provenance, the LLM usage of this object
and the counts.

LearnGoals (cross-object elicitation, the planner's default): the objects of a task in one goal.
Their model stages run together in `task_learning.stars.together.CrossObjectElicitor`, the core
code behind `task-learning run --elicitation across-objects`: every level of every object merged
into shared list-prompt round trips. The batch asks no operator: the client then takes the objects
one at a time, in the task's order, with LearnGoal goals naming the batch (`batch_id`), and each of
those runs the object's Oversight (+O) when the client is ready for it, exactly as a LearnGoal of
one object does (the same operator client, the same confirmation ids). The batch's feedback gives
every object's state; its result, the LLM traffic of the whole batch. It ends when every object
was taken, the client cancels it, a newer batch replaces it, or no LearnGoal used it for
`batch_idle_s` (a LearnGoal naming a batch that is no longer open elicits its object alone).

Grounding runs in-process (`task_learning.grounding.analyze_goal`, the same core function the
grounding node serves): analysis is called once per distinct response, dozens of times per object,
and a service round trip each time would only add latency and a failure mode.

The world comes from the `world_state` topic (perception); until something arrives, from the
`scene` parameter's initial state. The +O conditions ask the operator through the oversight node
(`OversightClient`). Bad LLM output or a dead endpoint ends as a failed result with a clear
message, counted in the usage; the node keeps serving. One elicitation runs at a time so the
usage attributed to an object is that object's alone.

Cancel ends the whole goal: elicitation stops at its next stage (or while it waits for a batch's
model stages), a question waiting for the
operator is withdrawn from the oversight node (it leaves the pending list; a late answer is
refused and never remembered), and the client gets a canceled result. An oversight node that does
not answer ends the goal with `failed_node` "oversight", so the planner ends its task naming it
rather than eliciting the next object. The operator's yes comes back as the oversight node's
confirmation id, which the planner checks.
"""
from __future__ import annotations

import functools
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.llm.usage import copy_usage, usage_diff
from task_learning.planning.progress import ObjectState, ObjectStates
from task_learning.stopping import DependencyFailed, RunStopped
from task_learning.safe_text import printable
from task_learning.stars.conditions import Condition, flags, parse_condition
from task_learning.stars.elicit import ElicitationResult, ElicitationSetup, as_state_and_metadata, elicit_goal
from task_learning.stars.prompts import load_templates
from task_learning.stars.together import CrossObjectElicitor
from task_learning.stars.tree import TreeSettings
from task_learning.stop_signals import StopSignals
from task_learning.types import LLMUsage
from task_learning_interfaces.action import LearnGoal, LearnGoals
from task_learning_interfaces.msg import ObjectProgress
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import LatestWorldState, run_node, shutdown_requested
from task_learning.llm.constraints import effective_decoding, parse_decoding
from task_learning_nodes.plumbing.params import LLMEndpointParameters, declare_parameters, llm_client_options, param

NODE_NAME = "goal_elicitation"
DEFAULT_ACTION = "learn_goal"
DEFAULT_BATCH_ACTION = "learn_goals"
DEFAULT_TOPIC = "world_state"

class Parameters(LLMEndpointParameters):
    """The goal_elicitation node's parameters (config/nodes/goal_elicitation.yaml)."""

    action_name: str = param(DEFAULT_ACTION, "Name of the LearnGoal action server")
    learn_goals_action: str = param(DEFAULT_BATCH_ACTION, "Name of the LearnGoals action server (the objects "
                                    "of a task elicited together, merged into shared round trips)")
    batch_idle_s: float = param(600.0, "Seconds a LearnGoals batch stays open without a LearnGoal taking an "
                                "object from it (its client may be gone); a later LearnGoal naming it elicits its object alone",
                                min=1.0, max=86400.0)
    llm: str = param("offline", "LLM: offline (deterministic, not a language model), openai (see "
                     "config/llm.yaml), local (Gemma 3 270M on llama-server) or replay:FILE (a cassette)")
    llm_cache: str = param("memory", "Response cache: memory, none, or a file path (a rerun then costs 0 "
                           "calls)")
    condition: str = param("STARS", "Condition used when a goal leaves it empty: TBP, TBP+O, ST, STS, "
                           "STAR, STARS, STARS* (tidy kitchen only), STARS+O, STARS+CTX")
    max_workers: int = param(8, "Concurrent requests of one search-tree level (1 = sequential)", min=1,
                             max=256)
    max_requests: int = param(1500, "Hard cap on goal requests per object, over the tree and all repairs",
                              min=1, max=1000000)
    scene: str = param("", "Scene whose initial state is used until a world state arrives (empty: wait "
                       "for the topic); also the location and STARS* user context when a goal gives none")
    location: str = param("", "Gross location for the prompt (I am in <location>); empty: the scene's")
    world_state_topic: str = param(DEFAULT_TOPIC, "Perception's world state topic")
    world_state_transient_local: bool = param(False, "Subscribe transient local (latched) to get the "
                                              "last state on start; only matches a transient-local publisher")
    oversight_timeout_s: float = param(120.0, "Seconds the operator gets per question in the +O "
                                       "conditions (through oversight_node)", min=0.1, max=86400.0)
    oversight_wait_s: float = param(5.0, "Seconds to wait for the oversight node's services before a +O "
                                    "goal fails naming it", min=0.1, max=3600.0)
    stack_key_file: str = param("", "Key file the stack's nodes sign their questions with (the oversight "
                                "node's stack_key_file); empty: $ROS_HOME/task_learning/stack.key")
    llm_latency_s: float = param(0.0, "Benches only: a fixed delay added to every round trip to the model "
                                 "(task_learning.llm.latency.FixedLatencyProvider), so wall time shows how many round trips "
                                 "there were; 0 in use", min=0.0, max=60.0)

MAX_BATCH_OBJECTS = 1000  # objects of one LearnGoals goal (the largest generated scene has 350)
BATCH_START_WAIT_S = 60.0  # how long a LearnGoal waits for the batch it names to start


@dataclass
class Batch:
    """One open LearnGoals goal: its elicitor (model stages running or done), every object's state,
    and what ends it."""

    batch_id: str  # the LearnGoals goal id, 32 hex digits
    task: str
    condition: Condition
    object_ids: list[str]
    elicitor: CrossObjectElicitor
    states: ObjectStates
    usage_before: LLMUsage
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0  # LearnGoal goals running on it now
    taken: set[str] = field(default_factory=set)
    closed: threading.Event = field(default_factory=threading.Event)
    reason: str = ""  # why it was closed from outside (a newer batch)


STAGE_NAMES = {
    "template_prompt": "retrieve", "search_tree": "recurse", "analysis": "analyze",
    "repair_1": "repair", "repair_2": "repair", "selection": "select", "highest_score": "select",
    "oversight": "confirm",
}


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
        self.batch_idle_s = params.batch_idle_s
        self._batch: Batch | None = None
        self._batch_lock = threading.Lock()
        # Batches accepted and not started yet: a LearnGoal naming one (sent as soon as the goal
        # was accepted) waits for it instead of eliciting its object alone.
        self._batch_started = threading.Condition(self._batch_lock)
        self._starting: set[str] = set()
        self.location = str(params.location or "")
        self.oversight_timeout_s = params.oversight_timeout_s
        self.oversight_wait_s = params.oversight_wait_s
        from task_learning.oversight.pairing import StackKey

        self.stack_key = StackKey.load_or_create(params.stack_key_file or None)
        self._cancelled: set[bytes] = set()  # goal ids whose cancel was requested
        self._current: bytes | None = None
        self._scene: Any = None
        initial: dict[str, Any] | None = None
        scene = str(params.scene or "")
        if scene:
            from task_learning.world.scene import load_scene

            self._scene = load_scene(scene)
            initial = {"sceneName": self._scene.name, "objects": self._scene.objects}
            self.location = self.location or self._scene.location
        self._run_lock = threading.Lock()
        self._operator: Any = None

        self.world = LatestWorldState(self, params.world_state_topic, convert.world_state_from_msg,
                                      transient_local=params.world_state_transient_local,
                                      initial=initial, initial_source=f"scene {scene}" if scene else "none",
                                      callback_group=MutuallyExclusiveCallbackGroup())
        from task_learning_nodes.plumbing.qos import action_qos_kwargs

        self._server = ActionServer(self, LearnGoal, params.action_name, self._execute,
                                    goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                    cancel_callback=self._on_cancel,
                                    callback_group=ReentrantCallbackGroup(), **action_qos_kwargs())
        self._batch_server = ActionServer(self, LearnGoals, params.learn_goals_action, self._execute_batch,
                                          goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                          handle_accepted_callback=self._batch_accepted,
                                          cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                                          callback_group=ReentrantCallbackGroup(), **action_qos_kwargs())
        self.get_logger().info(
            f"serving {params.action_name} and {params.learn_goals_action}: llm {params.llm}, default condition "
            f"{self.default_condition.value}, world from {params.world_state_topic} "
            f"({self.world.source} until then), grounding in-process")

    def diagnostics(self) -> list[Any]:
        """/diagnostics: the LLM endpoint (reachable? latency) and where the world comes from."""
        from task_learning.diagnostics import Check, Level, llm_check

        world = Check("world", Level.OK if self.world.get() is not None else Level.WARN,
                      f"world from {self.world.source}")
        return [llm_check(self.client), world]

    # ------------------------------------------------------------------ inputs
    def _operator_for(self) -> Any:
        if self._operator is None:
            from task_learning_nodes.clients.oversight_client import OversightClient

            self._operator = OversightClient(self, name="goal_elicitation",
                                             default_timeout_s=self.oversight_timeout_s,
                                             service_wait_s=self.oversight_wait_s,
                                             should_stop=self._stopping, asker="goal_elicitation",
                                             stack_key=self.stack_key)
        return self._operator

    def _on_cancel(self, goal_handle: Any) -> CancelResponse:
        self._cancelled.add(bytes(goal_handle.goal_id.uuid))
        return CancelResponse.ACCEPT

    def _stopping(self) -> bool:
        """The running goal was cancelled (or the node stops): its question is withdrawn."""
        return shutdown_requested() or (self._current is not None and self._current in self._cancelled)

    # ------------------------------------------------------------------ the action
    def _execute(self, goal_handle: Any) -> LearnGoal.Result:
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
            except RunStopped as exc:
                result.success = False
                result.message = f"canceled: {printable(str(exc), 300)}; no goal learned"
                self.get_logger().info(f"LearnGoal {goal.object_id!r}: {result.message}")
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
                return result
            except DependencyFailed as exc:
                result.success = False
                result.failed_node = "oversight"
                result.message = printable(str(exc), 500)
                self.get_logger().error(f"LearnGoal {goal.object_id!r}: {result.message}")
                goal_handle.abort()
                return result
            except TaskLearningError as exc:
                result.success = False
                result.message = f"error: {printable(str(exc), 500)}"
                self.get_logger().warning(f"LearnGoal {goal.object_id!r}: {exc}")
                goal_handle.abort()
                return result
            except Exception as exc:  # a bug must not take the server down
                result.success = False
                result.message = f"internal error: {type(exc).__name__}: {exc}"
                self.get_logger().error(f"LearnGoal {goal.object_id!r} failed:\n{traceback.format_exc()}")
                goal_handle.abort()
                return result
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

    def _elicit(self, goal: Any, goal_handle: Any) -> tuple[ElicitationResult, str]:
        """The object's elicitation, and the id of the batch it came from ("" when alone)."""
        condition = self._condition(goal.condition)
        world = self._world()
        object_id = goal.object_id.strip()
        if not object_id:
            raise TaskLearningError("the goal names no object (object_id is empty)")
        _check_request(goal)
        task = goal.task or getattr(self._scene, "task", "")
        operator = self._checked_operator(condition)

        def on_stage(stage: str, counts: Any) -> None:
            if self._stopping():
                raise RunStopped("canceled by the client")
            self._feedback(goal_handle, STAGE_NAMES.get(stage, stage), int(counts.get("candidates", 0)), None)

        batch = self._open_batch(goal.batch_id, task, condition)
        if batch is not None:
            return self._elicit_in_batch(batch, task, object_id, world, condition, goal_handle, on_stage), \
                batch.batch_id
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

    def _world(self) -> Any:
        world = self.world.get()
        if world is None:
            raise TaskLearningError("no world state yet: nothing on the world_state topic and no scene parameter")
        return world

    def _user_context(self, sentences: Any, condition: Condition) -> list[str]:
        """STARS+CTX's user-context sentences: the goal's, else the scene's ([] without user context)."""
        if not flags(condition).user_context:
            return []
        context = [s for s in sentences if s.strip()]
        if not context and self._scene is not None:
            context = list(self._scene.context)
        return context

    def _checked_operator(self, condition: Condition) -> Any:
        """The oversight client of the +O conditions (None otherwise), checked to be reachable
        before any LLM call: with nobody to confirm, eliciting would be wasted work."""
        operator = self._operator_for() if flags(condition).oversight else None
        if operator is not None and not operator.available(self.oversight_wait_s):
            raise DependencyFailed(f"the oversight node is not running (no oversight/confirm service "
                                   f"after {self.oversight_wait_s:g} s)")
        return operator

    # ------------------------------------------------------------------ LearnGoals: a batch
    def _batch_accepted(self, goal_handle: Any) -> None:
        with self._batch_lock:
            self._starting.add(bytes(goal_handle.goal_id.uuid).hex())
        goal_handle.execute()

    def _started(self, batch_id: str) -> None:
        with self._batch_lock:
            self._starting.discard(batch_id)
            self._batch_started.notify_all()

    def _open_batch(self, batch_id: str, task: str, condition: Condition) -> Batch | None:
        """The open batch `batch_id` names (waited for while it starts), when it is for this task
        and condition."""
        batch_id = batch_id.strip().lower()
        if not batch_id:
            return None
        deadline = time.monotonic() + BATCH_START_WAIT_S
        with self._batch_lock:
            while batch_id in self._starting and not self._stopping() and time.monotonic() < deadline:
                self._batch_started.wait(0.1)
            batch = self._batch
        if batch is None or batch.batch_id != batch_id or batch.closed.is_set():
            return None
        if batch.task != task or batch.condition is not condition:
            return None
        return batch

    def _elicit_in_batch(self, batch: Batch, task: str, object_id: str, world: Any, condition: Condition,
                         goal_handle: Any, on_stage: Any) -> ElicitationResult:
        """One object of a batch: its model stages (waited for, or run now on its own when it was
        not prefetched or has moved), then its Oversight, in this goal's thread."""
        with self._batch_lock:
            batch.busy += 1
            batch.last_used = time.monotonic()
        states = batch.states
        try:
            if object_id not in batch.elicitor.prefetched():
                states.set(object_id, ObjectState.ELICITING)
            batch.elicitor.wait_ready(object_id, lambda: self._stopping() or batch.closed.is_set())
            self._feedback(goal_handle, "select", 0, None)  # the model stages are done
            if flags(condition).oversight:
                states.set(object_id, ObjectState.ASKING)
            _, metadata = as_state_and_metadata(world)
            outcome = batch.elicitor(task=task, object_id=object_id, metadata=metadata, on_stage=on_stage)
            self.client.raise_if_unavailable()  # as on the per-object path: the goal names the endpoint
            chosen = outcome.chosen
            if chosen is None:
                states.set(object_id, ObjectState.NO_GOAL, outcome.outcome)
            else:
                states.set(object_id, ObjectState.CONFIRMED if outcome.oversight is not None else ObjectState.CHOSEN,
                           chosen.text)
            return outcome
        except RunStopped:
            states.set(object_id, ObjectState.NO_GOAL, "canceled")
            raise
        finally:
            with self._batch_lock:
                batch.taken.add(object_id)
                batch.busy -= 1
                batch.last_used = time.monotonic()

    def _execute_batch(self, goal_handle: Any) -> LearnGoals.Result:
        goal = goal_handle.request
        result = LearnGoals.Result()
        batch: Batch | None = None
        try:
            try:
                batch = self._start_batch(goal, goal_handle)
            finally:
                self._started(bytes(goal_handle.goal_id.uuid).hex())
            reason = self._wait_batch(batch, goal_handle)
        except DependencyFailed as exc:
            result.failed_node = "oversight"
            return self._batch_failed(goal_handle, result, printable(str(exc), 500))
        except TaskLearningError as exc:
            return self._batch_failed(goal_handle, result, f"error: {printable(str(exc), 500)}")
        except Exception as exc:  # a bug must not take the server down
            self.get_logger().error(f"batch failed:\n{traceback.format_exc()}")
            return self._batch_failed(goal_handle, result, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if batch is not None:
                self._close_batch(batch)
        result.success = True
        result.usage = convert.llm_usage_to_msg(usage_diff(self.client.usage, batch.usage_before))
        result.levels = batch.elicitor.levels
        result.objects = _progress_msgs(batch.states)
        taken = sum(1 for oid in batch.object_ids if oid in batch.taken)
        result.message = (f"{reason} ({taken} of {len(batch.object_ids)} objects taken, {batch.elicitor.levels} "
                          f"merged levels, {result.usage.requests} round trips)")
        self.get_logger().info(f"batch {batch.batch_id[:8]} for {batch.task!r} closed: {result.message}")
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return result

    def _start_batch(self, goal: Any, goal_handle: Any) -> Batch:
        condition = self._condition(goal.condition)
        world = self._world()
        _check_request(goal, fields=("task", "condition"))
        object_ids = [o.strip() for o in goal.object_ids]
        if not object_ids or not all(object_ids):
            raise TaskLearningError("object_ids: give at least one object, and no empty id")
        if len(object_ids) > MAX_BATCH_OBJECTS:
            raise TaskLearningError(f"object_ids: {len(object_ids)} objects, at most {MAX_BATCH_OBJECTS}")
        for i, object_id in enumerate(object_ids):
            if len(object_id) > MAX_TEXT_CHARS or printable(object_id) != object_id:
                raise TaskLearningError(f"object_ids[{i}]: at most {MAX_TEXT_CHARS} printable characters")
        task = goal.task or getattr(self._scene, "task", "")
        operator = self._checked_operator(condition)
        _, metadata = as_state_and_metadata(world)
        from task_learning.episode.observe import StarsTreePublisher

        elicitor = CrossObjectElicitor(self.client, self._scene, condition, operator=operator,
                                       templates=self.templates, settings=self.settings,
                                       location=self.location or None,
                                       system_context=self._user_context(goal.context, condition),
                                       on_tree=StarsTreePublisher(self._episode, task), decoding=self.decoding)
        batch_id = bytes(goal_handle.goal_id.uuid).hex()
        self.client.reset_breaker()  # a restarted LLM server gets a fresh chance, as for each LearnGoal

        def publish(snapshot: Any) -> None:
            if goal_handle.is_active:  # not after the batch's result (a LearnGoal may still finish)
                goal_handle.publish_feedback(LearnGoals.Feedback(objects=_progress_msgs(snapshot),
                                                                 levels=elicitor.levels))

        object_ids = list(dict.fromkeys(object_ids))
        batch = Batch(batch_id, task, condition, object_ids, elicitor, ObjectStates(object_ids),
                      copy_usage(self.client.usage))
        elicitor.prefetch(task, object_ids, metadata)  # an unknown object id: TaskLearningError, nothing started
        for object_id, future in elicitor.prefetched().items():
            batch.states.set(object_id, ObjectState.ELICITING)
            future.add_done_callback(functools.partial(_stages_ended, batch.states, object_id))
        batch.states.on_change = publish
        publish(batch.states.snapshot())
        with self._batch_lock:
            old, self._batch = self._batch, batch
        if old is not None:  # one batch open at a time: the newer client wins
            old.reason = f"replaced by batch {batch_id[:8]}"
            old.closed.set()
        self.get_logger().info(f"batch {batch_id[:8]}: {task!r}, {condition.value}, "
                               f"{len(elicitor.prefetched())} of {len(batch.object_ids)} objects elicited together")
        return batch

    def _wait_batch(self, batch: Batch, goal_handle: Any) -> str:
        """Until the batch ends; says why."""
        while True:
            if goal_handle.is_cancel_requested:
                return "closed by the client"
            if shutdown_requested():
                return "the node is shutting down"
            if batch.closed.is_set():
                return batch.reason or "closed"
            with self._batch_lock:
                busy, idle = batch.busy, time.monotonic() - batch.last_used
                every = all(oid in batch.taken for oid in batch.object_ids)
            if not busy and every:
                return "every object taken"
            if not busy and idle > self.batch_idle_s:
                return f"no LearnGoal used it for {self.batch_idle_s:g} s"
            batch.closed.wait(0.1)

    def _close_batch(self, batch: Batch) -> None:
        """The batch is no longer open: its model stages stop (after the level in flight)."""
        with self._batch_lock:
            if self._batch is batch:
                self._batch = None
        batch.closed.set()
        batch.elicitor.close()

    def _batch_failed(self, goal_handle: Any, result: Any, message: str) -> Any:
        result.success = False
        result.message = message
        self.get_logger().warning(f"batch: {message}")
        goal_handle.abort()
        return result

    def _feedback(self, goal_handle: Any, stage: str, candidates: int, outcome: ElicitationResult | None) -> None:
        msg = LearnGoal.Feedback()
        msg.stage = stage
        msg.candidates_so_far = candidates
        if outcome is not None:
            msg.counts = convert.elicitation_counts_to_msg(_counts(outcome))
        else:
            msg.counts = convert.elicitation_counts_to_msg({"retrieved": candidates})
        goal_handle.publish_feedback(msg)

    def _fill(self, result: Any, outcome: ElicitationResult) -> None:
        result.success = outcome.chosen is not None
        detail = f"; {'; '.join(outcome.errors[:3])}" if outcome.errors else ""
        chosen = f": {outcome.chosen.text}" if outcome.chosen else ""
        result.message = (f"{outcome.condition.value} {outcome.object_id}: {outcome.outcome}{chosen} "
                          f"({len(outcome.candidates)} candidates, {outcome.usage.calls} calls, "
                          f"{outcome.usage.failures} failures){detail}")
        if outcome.chosen is not None:
            result.chosen = convert.goal_candidate_to_msg(outcome.chosen)
        result.candidates = [convert.goal_candidate_to_msg(c) for c in outcome.candidates]
        result.usage = convert.llm_usage_to_msg(outcome.usage)
        result.counts = convert.elicitation_counts_to_msg(_counts(outcome))
        if outcome.oversight is not None:
            if outcome.chosen is not None:
                result.confirmation_id = outcome.oversight.confirmation_id
            # Who the oversight node says answered (a paired operator); the planner takes the name
            # from its own check of confirmation_id, not from this field.
            result.confirmed_by = outcome.oversight.confirmed_by
            result.oversight_status = outcome.oversight.status.value


MAX_TEXT_CHARS = 200  # task, object id, condition
MAX_CONTEXT = 20  # user-context sentences (STARS*)
MAX_CONTEXT_CHARS = 500


def _check_request(goal: Any, fields: tuple[str, ...] = ("task", "object_id", "condition", "batch_id")) -> None:
    """Sizes and characters of a LearnGoal (or LearnGoals) request: TaskLearningError saying which field."""
    for name in fields:
        value = getattr(goal, name)
        if len(value) > MAX_TEXT_CHARS:
            raise TaskLearningError(f"{name}: {len(value)} characters, at most {MAX_TEXT_CHARS}")
        if printable(value) != value:
            raise TaskLearningError(f"{name}: control characters are not allowed")
    if len(goal.context) > MAX_CONTEXT:
        raise TaskLearningError(f"context: {len(goal.context)} sentences, at most {MAX_CONTEXT}")
    for i, sentence in enumerate(goal.context):
        if len(sentence) > MAX_CONTEXT_CHARS or printable(sentence) != sentence:
            raise TaskLearningError(f"context[{i}]: at most {MAX_CONTEXT_CHARS} printable characters")


def _stages_ended(states: ObjectStates, object_id: str, future: Any) -> None:
    """A prefetched object's model stages ended: elicited, or failed (its LearnGoal then elicits it
    on its own); a cancelled one (the batch closed) keeps its state."""
    if future.cancelled():
        return
    state = ObjectState.FAILED if future.exception() is not None else ObjectState.ELICITED
    states.set(object_id, state, only_from=(ObjectState.ELICITING,))


def _progress_msgs(states: ObjectStates | list[tuple[str, str, str]]) -> list[ObjectProgress]:
    snapshot = states.snapshot() if isinstance(states, ObjectStates) else states
    return [ObjectProgress(object_id=oid, state=state, detail=detail) for oid, state, detail in snapshot]


def _counts(outcome: ElicitationResult) -> dict[str, int]:
    """The STARS paper's per-object counts: goals retrieved; proposed/sourced/user effort from oversight."""
    counts = {"retrieved": len(outcome.candidates)}
    if outcome.oversight is not None:
        counts.update(outcome.oversight.counts.to_dict())
    else:
        counts["sourced"] = 1 if outcome.chosen is not None else 0
    return counts


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(GoalElicitationNode, args, name=NODE_NAME, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
