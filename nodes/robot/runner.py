"""RosGoalRunner: the core's GoalRunner over rclpy action clients of the standard types.

One client per (type, server name), created on first use. `run` blocks the calling worker thread
(the perception node's execute_action callback) while the node's executor spins elsewhere:
- nothing is sent while the MotionGate is stopped ("stopped" with its reason);
- a server not there within the profile's `server_wait_s` is "server_missing";
- a goal not done within its timeout is cancelled and "timeout": seconds of the node's clock (a
  simulator's under use_sim_time: one slower than real time gets its own seconds), or as many
  wall seconds in which that clock did not move (a simulator that died: nothing hangs);
- a stop or interrupt (run-stop, stop service, PerformTask cancelled) cancels every goal in
  flight at once, from the gate's listener: the cancel request leaves within milliseconds, the
  waiting `run` returns "stopped" within the profile's `cancel_s` whether or not the server
  acknowledges it.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future

from task_learning.robot.gate import MotionGate
from task_learning.robot.goals import GoalOutcome, RobotGoal
from task_learning.robot.profile import RobotProfile
from task_learning_nodes.plumbing.node_base import ActionClient, result_of
from task_learning_nodes.robot.messages import action_type, outcome_from_result, to_msg

POLL_S = 0.05


class Deadline:
    """A goal's timeout on a node's clock, with a wall-clock backstop for a clock that stops."""

    def __init__(self, clock: Any, timeout_s: float) -> None:
        self._clock, self._timeout_ns = clock, int(timeout_s * 1e9)
        self._start = self._last = clock.now().nanoseconds
        self._moved = time.monotonic()
        self._timeout_s = timeout_s

    def passed(self) -> bool:
        now, wall = self._clock.now().nanoseconds, time.monotonic()
        if now != self._last:
            self._last, self._moved = now, wall
        return now - self._start >= self._timeout_ns or wall - self._moved >= self._timeout_s


class _InFlight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.handle: ClientGoalHandle | None = None
        self.result: Any = None
        self.error = ""


class RosGoalRunner:
    def __init__(self, node: Node, profile: RobotProfile, gate: MotionGate) -> None:
        self._node = node
        self._profile = profile
        self._gate = gate
        self._group = ReentrantCallbackGroup()
        self._clients: dict[tuple[str, str], ActionClient] = {}
        self._lock = threading.Lock()
        self._in_flight: list[_InFlight] = []
        gate.on_stop(self._cancel_all)

    def _client(self, goal: RobotGoal) -> ActionClient:
        key = (goal.type, goal.server)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = ActionClient(self._node, action_type(goal), goal.server,
                                                  callback_group=self._group)
            return self._clients[key]

    def _cancel_all(self, reason: str) -> None:
        with self._lock:
            flights = list(self._in_flight)
        for flight in flights:
            if flight.handle is not None:
                flight.handle.cancel_goal_async()
            flight.error = f"cancelled: {reason}"
            flight.done.set()

    def run(self, goal: RobotGoal) -> GoalOutcome:
        refusal = self._gate.refusal()
        if refusal:
            return GoalOutcome("stopped", message=refusal)
        generation = self._gate.generation
        client = self._client(goal)
        if not client.wait_for_server(timeout_sec=self._profile.timeouts.server_wait_s):
            return GoalOutcome("server_missing")
        flight = _InFlight()
        with self._lock:
            self._in_flight.append(flight)
        try:
            return self._send(client, goal, flight, generation)
        finally:
            with self._lock:
                self._in_flight.remove(flight)

    def _send(self, client: ActionClient, goal: RobotGoal, flight: _InFlight, generation: int) -> GoalOutcome:
        def on_result(future: Future) -> None:
            flight.result = result_of(future)
            flight.done.set()

        def on_goal(future: Future) -> None:
            try:
                handle = result_of(future)
            except Exception as exc:  # noqa: BLE001 - transport failure
                flight.error = repr(exc)
                flight.done.set()
                return
            flight.handle = handle
            if not handle.accepted:
                flight.error = "rejected"
                flight.done.set()
                return
            if self._gate.generation != generation:  # stopped while the goal was on its way
                handle.cancel_goal_async()
            handle.get_result_async().add_done_callback(on_result)

        if self._gate.generation != generation:
            return GoalOutcome("stopped", message=self._gate.why_interrupted())
        stamp = self._node.get_clock().now().to_msg()
        client.send_goal_async(to_msg(goal, stamp)).add_done_callback(on_goal)
        deadline = Deadline(self._node.get_clock(), goal.timeout_s)
        while not flight.done.wait(POLL_S):
            if deadline.passed():
                if flight.handle is not None:
                    flight.handle.cancel_goal_async()
                return GoalOutcome("timeout")
        if flight.error == "rejected":
            return GoalOutcome("rejected")
        if flight.error:
            return GoalOutcome("stopped" if flight.error.startswith("cancelled") else "aborted",
                               message=flight.error)
        return outcome_from_result(goal, int(flight.result.status), flight.result.result)
