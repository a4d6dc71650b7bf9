"""The planner's side of the goal elicitation node: a task's LearnGoals batch (elicitation
across-objects) and each object's LearnGoal, their results turned into what the task-learning loop
reads of an elicitation (planning.loop.Elicitor), their feedback into the task's object states.

A goal that goal elicitation returns as confirmed counts as confirmed only when the oversight node
vouches for its confirmation id (signed reply, used up once, for exactly that goal): who confirmed
it is the oversight node's word, never the name goal elicitation put in its result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.task import Future

from task_learning.errors import LLM_UNAVAILABLE
from task_learning.inputs.safe_text import printable
from task_learning.lifecycle.cancellation import DependencyFailed, RunStopped, StopToken
from task_learning.oversight.flow import OversightCounts, OversightStatus
from task_learning.planning.confirmation import confirmation_mismatch
from task_learning.planning.progress import LEARNING, ObjectState, ObjectStates
from task_learning.types import GoalCandidate, LLMUsage
from task_learning_interfaces.action import LearnGoal, LearnGoals
from task_learning_nodes.clients.oversight_client import OversightClient
from task_learning_nodes.clients.ros_world import RosCallError, wait_future
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import ActionClient, result_of, wait_for_future
from task_learning_nodes.plumbing.qos import action_client_qos

if TYPE_CHECKING:
    from task_learning.grounding.analysis import GoalAnalysis


@dataclass
class RemoteOversight:
    """What the loop reads of an oversight outcome, rebuilt from a LearnGoal result: confirmed
    only when the oversight node vouched for the result's confirmation id."""

    counts: OversightCounts
    confirmed: bool
    confirmed_by: str = ""  # the paired operator the oversight node named when it vouched
    provenance: dict[str, Any] = field(default_factory=dict)  # that confirmation's question, client, time
    status: OversightStatus | None = None


class CallTimeouts(Protocol):
    """The planner's parameters the client reads at each call (writable while the node runs)."""

    service_timeout_s: float
    learn_goal_timeout_s: float


@dataclass
class RemoteElicitation:
    """A LearnGoal result in the shape the loop reads from ElicitationResult."""

    chosen: GoalCandidate | None
    candidates: list[GoalCandidate]
    usage: LLMUsage
    oversight: RemoteOversight | None
    outcome: str
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    batch_id: str = ""  # the LearnGoals batch whose result counts this object's usage ("" = counted here)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "chosen": self.chosen.to_dict() if self.chosen else None,
                "candidates": [c.to_dict() for c in self.candidates], "usage": self.usage.to_dict(),
                "counts": dict(self.counts), "errors": list(self.errors), "via": "ros",
                "confirmed_by": self.oversight.confirmed_by if self.oversight else ""}


class GoalBatch:
    """The planner's side of one LearnGoals batch: opened before the task's loop with the objects to
    elicit, its feedback copied into the task's object states while they are still being learned,
    closed (cancelled) when the loop is done; its result carries the batch's LLM usage."""

    def __init__(self, handle: ClientGoalHandle, result: Future, object_ids: list[str], alive: Callable[[], bool]) -> None:
        self.handle = handle
        self.alive = alive  # the goal elicitation node still serves (else its result will not come)
        self.result = result  # the future of the batch's result, asked for at once (no stray result later)
        self.batch_id = bytes(handle.goal_id.uuid).hex()
        self.object_ids = object_ids

    @staticmethod
    def on_feedback(states: ObjectStates, message: Any) -> None:
        for progress in message.feedback.objects:
            try:
                state = ObjectState(progress.state)
            except ValueError:  # a state this planner does not know (a newer node): shown as it was
                continue
            states.set(progress.object_id, state, progress.detail, only_from=LEARNING)

    def close(self, wait_s: float) -> LLMUsage | None:
        """Cancel the batch (its model stages stop) and wait up to `wait_s` for its result: the
        batch's usage, or None when it did not come (a stopped task does not wait long)."""
        if not self.result.done():
            self.handle.cancel_goal_async()
        if wait_for_future(self.result, wait_s, alive=self.alive) != "done":
            return None
        return convert.llm_usage_from_msg(result_of(self.result).result.usage)


class GoalElicitationClient:
    """The goal elicitation node's LearnGoal and LearnGoals actions, as the planner uses them.
    `settings()` gives the planner's parameters as they are now (service_timeout_s,
    learn_goal_timeout_s: writable, read at each call); `oversight` checks confirmation ids."""

    def __init__(self, node: Node, *, learn_goal_action: str, learn_goals_action: str, oversight: OversightClient,
                 settings: Callable[[], CallTimeouts], callback_group: CallbackGroup) -> None:
        self._node = node
        self._oversight = oversight
        self._settings = settings
        self.learn = ActionClient(node, LearnGoal, learn_goal_action, callback_group=callback_group,
                                  **action_client_qos())
        self.learn_batch = ActionClient(node, LearnGoals, learn_goals_action, callback_group=callback_group,
                                        **action_client_qos())

    def open_batch(self, task: str, object_ids: list[str], condition: str, context: list[str],
                    states: ObjectStates, stop: StopToken) -> GoalBatch:
        """Start the LearnGoals batch of this task's objects (their model stages begin at once)."""
        wait_s = self._settings().service_timeout_s
        if not self.learn_batch.wait_for_server(timeout_sec=wait_s):
            raise RosCallError(f"the goal_elicitation node is not running (no learn_goals action after {wait_s:g} s)")
        goal = LearnGoals.Goal(task=task, object_ids=object_ids, condition=condition,
                               context=context if "*" in condition else [])
        handle = wait_future(self.learn_batch.send_goal_async(
            goal, feedback_callback=lambda message: GoalBatch.on_feedback(states, message)),
            wait_s, "learn_goals (goal)", alive=self.learn_batch.server_is_ready, stop=stop)
        if not handle.accepted:
            raise RosCallError("the goal_elicitation node rejected the learn_goals goal")
        self._node.get_logger().info(f"learn_goals batch {bytes(handle.goal_id.uuid).hex()[:8]}: {len(object_ids)} "
                               f"object(s) elicited together")
        result = handle.get_result_async()
        result.add_done_callback(self._said_refused)
        return GoalBatch(handle, result, object_ids, self.learn_batch.server_is_ready)

    def _said_refused(self, future: Future) -> None:
        """Another client's batch held goal elicitation (planning.batches): this task's objects are
        elicited one by one (the same goals, more round trips); the log says why."""
        if future.cancelled() or future.exception() is not None:
            return
        message = result_of(future).result.message
        if message.startswith("refused"):
            self._node.get_logger().warning(f"learn_goals {printable(message, 300)}: eliciting each object on its own")

    def learn_goal(self, task: str, object_id: str, condition: str, context: list[str],
                    stop: StopToken, metadata: Mapping[str, Any] | None = None, *, batch_id: str = "",
                    states: ObjectStates | None = None) -> RemoteElicitation:
        wait_s = self._settings().service_timeout_s
        if not self.learn.wait_for_server(timeout_sec=wait_s):
            raise RosCallError(f"the goal_elicitation node is not running (no learn_goal action after {wait_s:g} s)")
        goal = LearnGoal.Goal(task=task, object_id=object_id, condition=condition,
                              context=context if "*" in condition else [], batch_id=batch_id)
        timeout = self._settings().learn_goal_timeout_s
        asks = condition.endswith("+O")

        def on_feedback(message: Any) -> None:
            # the model stages are done after "select": with oversight, the question comes next
            stage = message.feedback.stage
            if states is not None and stage in ("retrieve", "recurse", "analyze", "repair", "select"):
                states.set(object_id, ObjectState.ASKING if stage == "select" and asks else ObjectState.ELICITING,
                           only_from=LEARNING)

        handle = wait_future(self.learn.send_goal_async(goal, feedback_callback=on_feedback), wait_s,
                             "learn_goal (goal)", alive=self.learn.server_is_ready, stop=stop)
        if not handle.accepted:
            raise RosCallError(f"the goal_elicitation node rejected the learn_goal goal for {object_id}")
        result_future = handle.get_result_async()
        waited = wait_for_future(result_future, timeout, alive=self.learn.server_is_ready,
                                 stop=lambda: stop.requested)
        if waited != "done":
            # Cancel ends the whole goal: goal elicitation stops and withdraws its question. Its
            # canceled result is taken here, so no stray result arrives later.
            handle.cancel_goal_async()
            wait_for_future(result_future, 10.0, alive=self.learn.server_is_ready)
            if not result_future.done():
                result_future.cancel()
            if waited == "stopped":
                raise RunStopped(stop.reason or "the planner is shutting down")
            raise RosCallError(f"the goal_elicitation node {'went away' if waited == 'gone' else 'did not answer'} "
                               f"while the planner waited for learn_goal (result)"
                               + ("" if waited == "gone" else f" within {timeout:g} s"))
        res = result_future.result().result
        if res.failed_node:
            raise RosCallError(f"the {printable(res.failed_node, 40)} node did not answer while goal "
                               f"elicitation worked on {object_id}: {printable(res.message, 300)}")
        if not res.success and LLM_UNAVAILABLE in res.message:  # no later object can be elicited
            raise DependencyFailed(f"goal elicitation of {object_id}: {printable(res.message, 500)}")
        counts = convert.elicitation_counts_from_msg(res.counts)
        chosen = convert.goal_candidate_from_msg(res.chosen) if res.success and res.chosen.text else None
        oversight = None
        if condition.endswith("+O"):
            # Who confirmed it is the oversight node's word on the confirmation id (a paired
            # operator), never the name goal elicitation put in its result.
            provenance = self._confirmed_by(res.confirmation_id, chosen, object_id, metadata) \
                if chosen is not None else None
            oversight = RemoteOversight(
                OversightCounts(instructions=counts.get("instructions", 0), yes_no=counts.get("yes_no", 0),
                                words=counts.get("words", 0), proposed=counts.get("proposed", 0),
                                sourced=counts.get("sourced", 0)),
                confirmed=provenance is not None,
                confirmed_by=str(provenance.get("answered_by") or "") if provenance else "",
                provenance=provenance or {},
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
            batch_id=res.batch_id if batch_id and res.batch_id == batch_id else "",
        )

    def _confirmed_by(self, confirmation_id: str, chosen: GoalCandidate, object_id: str,
                      metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The provenance of the operator's confirmation of `chosen`, when the oversight node
        vouches for `confirmation_id` and it covers exactly this goal (used up here); else None:
        the loop then puts the goal to the operator itself before anything moves."""
        if not confirmation_id:
            self._node.get_logger().warning(f"goal for {object_id} came without a confirmation id: asking again")
            return None
        checked = self._oversight.check(confirmation_id, consume=True,
                                        timeout_s=self._settings().service_timeout_s)
        problem = checked.message if not checked.valid else confirmation_mismatch(
            answer=checked.answer, description=checked.description, candidate=checked.candidate,
            chosen=chosen, analyze=self._analyzer(object_id, metadata))
        if problem:
            self._node.get_logger().warning(f"goal for {object_id} not taken as confirmed ({problem}): asking again")
            return None
        return checked.provenance()

    @staticmethod
    def _analyzer(object_id: str, metadata: Mapping[str, Any] | None) -> Callable[[str], GoalAnalysis] | None:
        """The planner's own reading of a goal sentence in its world (a described goal's check)."""
        if metadata is None:
            return None
        from task_learning.grounding import analyze_goal
        from task_learning.world.state import world_state_from_metadata

        state = world_state_from_metadata(dict(metadata))
        return lambda sentence: analyze_goal(sentence, state, object_id)
