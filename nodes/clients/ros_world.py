"""The perception node's services as a world backend, and the waits for another node's answer.

`RosWorld` implements the core's WorldBackend protocol over `query_world` and `execute_action`, so
the task-learning loop runs against the graph's world exactly as against an in-process one. Used by
the planner and the anticipation node (both clients of perception); `wait_future` turns a future
that does not come back into an error naming the node that did not answer.
"""
from __future__ import annotations

from typing import Any, Callable

from rclpy.client import Client
from rclpy.node import Node
from rclpy.task import Future

from task_learning.lifecycle.cancellation import DependencyFailed, RunStopped, StopToken
from task_learning.types import ActionCall
from task_learning.world.backend import WORLD_UNAVAILABLE, WorldUnavailableError
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import wait_for_future

# Which node serves what the planner waits for (named in every error about it).
NODE_OF = {"query_world": "perception", "execute_action": "perception",
           "learn_goal": "goal_elicitation", "learn_goals": "goal_elicitation", "oversight/confirm": "oversight",
           "check_confirmation": "oversight"}

class RosCallError(DependencyFailed):
    """A service or action of another node did not answer in time, or went away."""


def wait_future(future: Future, timeout_s: float, what: str, *, alive: Callable[[], bool] | None = None,
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



class RosWorld:
    """WorldBackend over the perception node's services."""

    name = "ros"

    def __init__(self, node: Node, query: Client, execute: Client, timeout_s: float,
                 stop: StopToken | None = None, *, action_timeout_s: float | None = None,
                 cancel_motion: Callable[[], None] | None = None) -> None:
        self._node = node
        self._query = query
        self._execute = execute
        self._timeout_s = timeout_s
        self._action_timeout_s = max(timeout_s, action_timeout_s or timeout_s)
        self._stop = stop
        self._cancel_motion = cancel_motion
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
        # Once sent, an action is waited for even when a stop arrives (its result says where the
        # body stopped): the stop cancels the robot's goals in flight at once (`cancel_motion`,
        # the robot-skills layer's cancel service) and the action returns as they end.
        future = self._execute.call_async(request)
        if self._stop is not None and self._cancel_motion is not None:
            waited = wait_for_future(future, self._action_timeout_s, alive=self._execute.service_is_ready,
                                     stop=lambda: bool(self._stop and self._stop.requested))
            if waited == "stopped":
                self._cancel_motion()
        response = wait_future(future, self._action_timeout_s, "execute_action", alive=self._execute.service_is_ready)
        outcome = convert.action_outcome_from_msg(response.outcome)
        # An action that failed once the stop was asked for failed because of it (the cancel
        # stopped the robot's motion: "the robot cannot act: cancelled"): the run was stopped, it
        # did not fail. The world it left is kept first, for the result's report.
        stopped = self._stop is not None and self._stop.requested
        if outcome.blocking_condition == WORLD_UNAVAILABLE and not stopped:
            raise WorldUnavailableError(f"perception: {outcome.error_message}")
        metadata = convert.metadata_from_world_state_msg(response.world)
        metadata.update(lastAction=action, lastActionSuccess=outcome.success,
                        errorMessage=outcome.error_message, errorCode=outcome.blocking_condition)
        self._metadata = metadata
        if stopped and not outcome.success:
            raise RunStopped(self._stop.reason if self._stop is not None and self._stop.reason
                             else f"stopped while {action} ran: {outcome.error_message}")
        return metadata

    def _require(self, client: Client, what: str) -> None:
        if not client.wait_for_service(timeout_sec=self._timeout_s):
            raise RosCallError(f"the perception node is not running (no {what} service after "
                               f"{self._timeout_s:g} s)")
