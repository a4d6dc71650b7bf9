"""goal_elicitation_node: the LearnGoal action server (STARS goal elicitation for one object).

Goal: task, object_id, context (STARS+CTX user-context sentences), condition ("" = the node's
default; "STARS", "stars_plus_o", "TBP+O", ...). Feedback: the stage just finished (retrieve |
recurse | analyze | repair | select | confirm | done) with the candidates so far. Result: the
chosen goal, every candidate with its provenance, the LLM usage of this object and the counts.

Grounding runs in-process (`task_learning.grounding.analyze_goal`, the same core function the
grounding node serves): analysis is called once per distinct response, dozens of times per object,
and a service round trip each time would only add latency and a failure mode.

The world comes from the `world_state` topic (perception); until something arrives, from the
`scene` parameter's initial state. The +O conditions ask the operator through the oversight node
(`OversightClient`). Bad LLM output or a dead endpoint ends as a failed result with a clear
message, counted in the usage; the node keeps serving. One elicitation runs at a time so the
usage attributed to an object is that object's alone.

Cancel ends the whole goal: elicitation stops at its next stage, a question waiting for the
operator is withdrawn from the oversight node (it leaves the pending list; a late answer is
refused and never remembered), and the client gets a canceled result. An oversight node that does
not answer ends the goal with `failed_node` "oversight", so the planner ends its task naming it
rather than eliciting the next object. The operator's yes comes back as the oversight node's
confirmation id, which the planner checks.
"""
from __future__ import annotations

import threading
import traceback
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.planning.stop import DependencyFailed, RunStopped
from task_learning.safe_text import printable
from task_learning.stars.conditions import flags, parse_condition
from task_learning.stars.elicit import ElicitationResult, elicit_goal
from task_learning.stars.prompts import load_templates
from task_learning.stars.tree import TreeSettings
from task_learning.stop_signals import StopSignals
from task_learning_interfaces.action import LearnGoal
from task_learning_nodes import convert
from task_learning_nodes.node_base import LatestWorldState, run_node, shutdown_requested
from task_learning_nodes.params import LLM_ENDPOINT_PARAMS, Param, declare_parameters, llm_client_options

NODE_NAME = "goal_elicitation"
DEFAULT_ACTION = "learn_goal"
DEFAULT_TOPIC = "world_state"

PARAMETERS = (
    Param("action_name", DEFAULT_ACTION, "Name of the LearnGoal action server"),
    Param("llm", "offline", "LLM: offline (deterministic, not a language model), openai (see "
          "config/llm.yaml), local (Gemma 3 270M on llama-server) or replay:FILE (a cassette)"),
    Param("llm_cache", "memory", "Response cache: memory, none, or a file path (a rerun then costs 0 "
          "calls)"),
    Param("condition", "STARS", "Condition used when a goal leaves it empty: TBP, TBP+O, ST, STS, "
          "STAR, STARS, STARS* (tidy kitchen only), STARS+O, STARS+CTX"),
    Param("max_workers", 8, "Concurrent requests of one search-tree level (1 = sequential)", min=1,
          max=256),
    Param("max_requests", 1500, "Hard cap on goal requests per object, over the tree and all repairs",
          min=1, max=1000000),
    Param("scene", "", "Scene whose initial state is used until a world state arrives (empty: wait "
          "for the topic); also the location and STARS* user context when a goal gives none"),
    Param("location", "", "Gross location for the prompt (I am in <location>); empty: the scene's"),
    Param("world_state_topic", DEFAULT_TOPIC, "Perception's world state topic"),
    Param("world_state_transient_local", False, "Subscribe transient local (latched) to get the "
          "last state on start; only matches a transient-local publisher"),
    Param("oversight_timeout_s", 120.0, "Seconds the operator gets per question in the +O "
          "conditions (through oversight_node)", min=0.1, max=86400.0),
    Param("oversight_wait_s", 5.0, "Seconds to wait for the oversight node's services before a +O "
          "goal fails naming it", min=0.1, max=3600.0),
    Param("stack_key_file", "", "Key file the stack's nodes sign their questions with (the oversight "
          "node's stack_key_file); empty: $ROS_HOME/task_learning/stack.key"),
    *LLM_ENDPOINT_PARAMS,
)

STAGE_NAMES = {
    "template_prompt": "retrieve", "search_tree": "recurse", "analysis": "analyze",
    "repair_1": "repair", "repair_2": "repair", "selection": "select", "highest_score": "select",
    "oversight": "confirm",
}


class GoalElicitationNode(Node):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        values = declare_parameters(self, PARAMETERS)
        get = values.__getitem__

        from task_learning.llm.client import make_client

        self.default_condition = parse_condition(str(get("condition")))  # bad value: exit 2
        self.settings = TreeSettings(max_workers=int(get("max_workers")), max_requests=int(get("max_requests")))
        self.templates = load_templates()  # ConfigError names the file and key
        self.client = make_client(str(get("llm")), cache=str(get("llm_cache")) or None,
                                  **llm_client_options(values))
        # The STARS tree as it grows and every LLM call, on the graph (recorders, the live view).
        from task_learning.episode.bus import EpisodeBus
        from task_learning.episode.messages import LLM_CALLS, STARS_TREE
        from task_learning.episode.observe import LLMCallPublisher
        from task_learning_nodes.episode_topics import RosSink

        self._episode = EpisodeBus([RosSink(self, {STARS_TREE, LLM_CALLS})])
        self.client.recorder = LLMCallPublisher(self._episode, then=self.client.recorder)
        self.location = str(get("location") or "")
        self.oversight_timeout_s = float(get("oversight_timeout_s"))
        self.oversight_wait_s = float(get("oversight_wait_s"))
        from task_learning.oversight.pairing import StackKey

        self.stack_key = StackKey.load_or_create(str(get("stack_key_file")) or None)
        self._cancelled: set[bytes] = set()  # goal ids whose cancel was requested
        self._current: bytes | None = None
        self._scene: Any = None
        initial: dict[str, Any] | None = None
        scene = str(get("scene") or "")
        if scene:
            from task_learning.world.scene import load_scene

            self._scene = load_scene(scene)
            initial = {"sceneName": self._scene.name, "objects": self._scene.objects}
            self.location = self.location or self._scene.location
        self._run_lock = threading.Lock()
        self._operator: Any = None

        self.world = LatestWorldState(self, str(get("world_state_topic")), convert.world_state_from_msg,
                                      transient_local=bool(get("world_state_transient_local")),
                                      initial=initial, initial_source=f"scene {scene}" if scene else "none",
                                      callback_group=MutuallyExclusiveCallbackGroup())
        from task_learning_nodes.qos import action_qos_kwargs

        self._server = ActionServer(self, LearnGoal, str(get("action_name")), self._execute,
                                    goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                    cancel_callback=self._on_cancel,
                                    callback_group=ReentrantCallbackGroup(), **action_qos_kwargs())
        self.get_logger().info(
            f"serving {get('action_name')}: llm {get('llm')}, default condition "
            f"{self.default_condition.value}, world from {get('world_state_topic')} "
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
            from task_learning_nodes.oversight_client import OversightClient

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
        with self._run_lock:
            self._current = goal_id
            # An endpoint that stopped serving an earlier goal (a restarted LLM server) gets a
            # fresh chance: this goal fails on its own if it is still down.
            self.client.reset_breaker()
            try:
                outcome = self._elicit(goal, goal_handle)
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
        self._feedback(goal_handle, "done", len(outcome.candidates), outcome)
        if result.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def _elicit(self, goal: Any, goal_handle: Any) -> ElicitationResult:
        condition = parse_condition(goal.condition) if goal.condition.strip() else self.default_condition
        world = self.world.get()
        if world is None:
            raise TaskLearningError("no world state yet: nothing on the world_state topic and no scene parameter")
        object_id = goal.object_id.strip()
        if not object_id:
            raise TaskLearningError("the goal names no object (object_id is empty)")
        _check_request(goal)
        context = [s for s in goal.context if s.strip()]
        if not context and flags(condition).user_context and self._scene is not None:
            context = list(self._scene.context)
        operator = self._operator_for() if flags(condition).oversight else None
        if operator is not None and not operator.available(self.oversight_wait_s):
            # Before any LLM call: with nobody to confirm, eliciting would be wasted work.
            raise DependencyFailed(f"the oversight node is not running (no oversight/confirm service "
                                   f"after {self.oversight_wait_s:g} s)")

        def on_stage(stage: str, counts: Any) -> None:
            if self._stopping():
                raise RunStopped("canceled by the client")
            self._feedback(goal_handle, STAGE_NAMES.get(stage, stage), int(counts.get("candidates", 0)), None)

        self._feedback(goal_handle, "retrieve", 0, None)
        from task_learning.episode.observe import StarsTreePublisher

        task = goal.task or getattr(self._scene, "task", "")
        outcome = elicit_goal(task, object_id, world, self._scene,
                              condition, self.client, location=self.location or None,
                              system_context=context if flags(condition).user_context else [],
                              templates=self.templates, settings=self.settings, operator=operator,
                              on_stage=on_stage, on_tree=StarsTreePublisher(self._episode, task))
        # The endpoint stopped serving (a dead or hung LLM server): the goal fails with that
        # reason, which the planner recognises (LLM_UNAVAILABLE) and ends its task with.
        self.client.raise_if_unavailable()
        return outcome

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


def _check_request(goal: Any) -> None:
    """Sizes and characters of a LearnGoal request: TaskLearningError saying which field."""
    for name in ("task", "object_id", "condition"):
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


def _counts(outcome: ElicitationResult) -> dict[str, int]:
    """Seed 000's per-object counts: goals retrieved; proposed/sourced/user effort from oversight."""
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
