"""One goal at a time for a node's action servers: acceptance, cancel and a bounded stop, written once.

The planner (PerformTask and ReachGoal share one robot body) and the anticipation node (one day at
a time) both run long goals that must not overlap, must stop before their next primitive action
when cancelled, and must end with a result their client receives when the node is stopped. Each
used to hand-roll that; `SingleGoalServer` is the one copy. Its responsibilities follow those of
Nav2's `nav2_util::SimpleActionServer` (one active goal, cancel, a bounded stop on deactivation),
in rclpy and with this project's StopToken:

- **one goal at a time**, across every action served through it. A goal that arrives while one
  runs is turned away by the node's `BusyPolicy`:
  `REFUSE_WITH_RESULT` accepts it and aborts it at once with a result saying who is busy (a
  rejected goal carries no reason: the planner's policy, so a client learns the robot is busy
  with perform_task); `REJECT` rejects it at the goal request (the anticipation node's policy).
  Two goals accepted at the same moment still run one at a time: the second is refused as busy
  when its execution starts. Neither node preempts (a new motion goal never silently replaces
  the one the robot is acting on), so there is no preemption here;
- **cancel** of the running goal requests its StopToken (the work stops before its next object or
  primitive action and ends canceled) and calls the node's `on_stop` hook (the anticipation node
  cancels the planner's goal in flight there). A cancel of any other goal is accepted and changes
  nothing for the running one; a goal cancelled before its execution started starts stopped;
- **a bounded stop** (`shutdown`, from the node's `stop_work` on SIGINT/SIGTERM): new goals are
  rejected, the running goal's token is requested with the reason, and the call returns once the
  goal has finished and its result was handed to the executor, or after `stop_grace_s`
  (node_base.SHUTDOWN_LIMIT_S is the process's limit above that).

The work function gets an `ActiveGoal` (the rclpy goal handle, its StopToken) and returns a
`Finish` (the result and how the goal ends); the helper sets the terminal state, before the
goal's slot is freed, so a stop that sees the slot free knows only the result's delivery is left.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node

from task_learning.lifecycle.cancellation import StopToken
from task_learning_nodes.plumbing.qos import action_server_qos

CANCELED_BY_CLIENT = "canceled by the client"
STOP_GRACE_S = 4.0  # how long a stop waits for the running goal, and again for its result's delivery


class BusyPolicy(Enum):
    """What a goal that arrives while another runs gets (see the module's docstring)."""

    REFUSE_WITH_RESULT = "refuse_with_result"
    REJECT = "reject"


class Status(Enum):
    """How a goal ends."""

    SUCCEEDED = "succeeded"
    ABORTED = "aborted"
    CANCELED = "canceled"


@dataclass
class Finish:
    """What a work function returns: the goal's result and how the goal ends."""

    result: Any
    status: Status


@dataclass
class Refusal:
    """Why a goal was refused at the start of its execution, for the node's refusal result."""

    what: str  # the refused goal's action name
    busy_with: str  # the action name of the goal that runs ("" when none: the node is stopping)
    shutting_down: bool


@dataclass
class ActiveGoal:
    """The goal that holds the slot: its rclpy goal handle and the token that stops its work."""

    handle: ServerGoalHandle
    stop: StopToken
    what: str

    def stopped(self) -> Status:
        """How a goal whose work was stopped ends: canceled when its client asked, else aborted
        (the node is stopping)."""
        return Status.CANCELED if self.handle.is_cancel_requested else Status.ABORTED

    def same(self, handle: ServerGoalHandle) -> bool:
        return bytes(handle.goal_id.uuid) == bytes(self.handle.goal_id.uuid)


Work = Callable[[ActiveGoal], Finish]


class SingleGoalServer:
    """Serves one or more actions of `node` with at most one goal running among them."""

    def __init__(self, node: Node, *, policy: BusyPolicy, callback_group: CallbackGroup,
                 on_stop: Callable[[ActiveGoal], None] | None = None, stop_grace_s: float = STOP_GRACE_S) -> None:
        self._node = node
        self._policy = policy
        self._group = callback_group
        self._on_stop = on_stop
        self._grace_s = stop_grace_s
        self._slot = threading.Lock()  # held by the running goal's execution
        self._lock = threading.Lock()  # guards _active and _shutting_down
        self._active: ActiveGoal | None = None
        self._shutting_down = False

    def serve(self, action_type: Any, name: str, work: Work, refuse: Callable[[Refusal], Any]) -> ActionServer:
        """An ActionServer for `action_type` under `name` whose goals take the shared slot.
        `refuse` builds the result of a goal refused because the slot is taken (or the node stops)."""
        return ActionServer(self._node, action_type, name, lambda handle: self._execute(name, handle, work, refuse),
                            goal_callback=self._accept, cancel_callback=self._cancel,
                            callback_group=self._group, **action_server_qos())

    @property
    def busy_with(self) -> str:
        """The running goal's action name, "" when idle."""
        active = self._active
        return active.what if active is not None else ""

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def stop_requested(self) -> bool:
        """True once the running goal was cancelled or the node stops: waits inside the work (an
        operator's answer, another node's result) give up then."""
        active = self._active
        return self._shutting_down or (active is not None and active.stop.requested)

    # --- rclpy's callbacks ---------------------------------------------------------------------
    def _accept(self, _goal: Any) -> GoalResponse:
        if self._shutting_down:
            return GoalResponse.REJECT
        if self._policy is BusyPolicy.REJECT and self._slot.locked():
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _cancel(self, handle: ServerGoalHandle) -> CancelResponse:
        active = self._active
        if active is not None and active.same(handle):
            self._stop(active, CANCELED_BY_CLIENT)
        return CancelResponse.ACCEPT

    def _execute(self, what: str, handle: ServerGoalHandle, work: Work, refuse: Callable[[Refusal], Any]) -> Any:
        goal = self._claim(what, handle)
        if goal is None:
            result = refuse(Refusal(what, self.busy_with, self._shutting_down))
            handle.abort()
            return result
        try:
            finish = work(goal)
            _end(handle, finish.status)
        finally:
            with self._lock:
                self._active = None
            self._slot.release()
        return finish.result

    def _claim(self, what: str, handle: ServerGoalHandle) -> ActiveGoal | None:
        if self._shutting_down or not self._slot.acquire(blocking=False):
            return None
        goal = ActiveGoal(handle, StopToken(), what)
        with self._lock:
            self._active = goal
            if self._shutting_down:  # a stop that began between the check and here
                goal.stop.request(f"the {self._node.get_name()} node is stopping")
        if handle.is_cancel_requested:  # cancelled before it started: it starts stopped
            goal.stop.request(CANCELED_BY_CLIENT)
        return goal

    def _stop(self, goal: ActiveGoal, reason: str) -> None:
        goal.stop.request(reason)
        if self._on_stop is not None:
            self._on_stop(goal)

    # --- the node stops ------------------------------------------------------------------------
    def shutdown(self, reason: str) -> bool:
        """Reject new goals, stop the running one with `reason` and wait, at most stop_grace_s, until
        it has finished, then as long again until its result was handed out (a task the executor
        runs after the goal's own). True when the goal (if any) finished in time."""
        with self._lock:
            self._shutting_down = True
            active = self._active
        if active is None:
            return True
        deadline = time.monotonic() + self._grace_s
        self._stop(active, reason)
        if not self._slot.acquire(timeout=max(0.0, deadline - time.monotonic())):
            self._node.get_logger().warning(f"the running {active.what} goal did not stop within {self._grace_s:g} s")
            return False
        self._slot.release()
        executor = self._node.executor
        if executor is not None:
            barrier = threading.Event()
            executor.create_task(barrier.set)
            barrier.wait(self._grace_s)
        return True


def _end(handle: ServerGoalHandle, status: Status) -> None:
    if status is Status.SUCCEEDED:
        handle.succeed()
    elif status is Status.CANCELED:
        handle.canceled()
    else:
        handle.abort()
