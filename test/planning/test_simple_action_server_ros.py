"""The one-goal-at-a-time action helper (nodes/plumbing/simple_action_server.py) the planner and the
anticipation node serve their actions through: a second goal while one runs is refused with a
result (the planner's policy) or rejected (the anticipation node's), a cancel stops the running
goal only, and a stop ends the running goal within its grace and rejects new goals.

The server is a node of the test's graph in its own rclpy context (test/ros_testing.RosClient),
its work a gate the test opens: nothing here waits on a fixed sleep.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from action_msgs.msg import GoalStatus
from rclpy.callback_groups import ReentrantCallbackGroup

from task_learning_interfaces.action import ReachGoal
from task_learning_nodes.plumbing.node_base import ActionClient
from task_learning_nodes.plumbing.simple_action_server import (
    ActiveGoal,
    BusyPolicy,
    Finish,
    Refusal,
    SingleGoalServer,
    Status,
)

from ..ros_testing import wait_future, wait_until

WAIT_S = 60.0  # deadlines for what must happen (a loaded machine is slow, never this slow)


class GatedWork:
    """A goal's work that runs until the test opens its gate or its token is requested, then ends
    succeeded (gate) or stopped (token, with the token's reason as the message)."""

    def __init__(self, ignore_stop: bool = False) -> None:
        self.started: list[ActiveGoal] = []
        self.gate = threading.Event()
        self.ignore_stop = ignore_stop

    def __call__(self, goal: ActiveGoal) -> Finish:
        self.started.append(goal)
        while not self.gate.wait(0.02):
            if goal.stop.requested and not self.ignore_stop:
                return Finish(ReachGoal.Result(success=False, message=goal.stop.reason), goal.stopped())
        return Finish(ReachGoal.Result(success=True, message="done"), Status.SUCCEEDED)


def refuse(refusal: Refusal) -> ReachGoal.Result:
    why = "stopping" if refusal.shutting_down else f"busy with {refusal.busy_with}"
    return ReachGoal.Result(success=False, message=f"refused {refusal.what}: {why}")


@pytest.fixture
def graph(ros_graph):
    server, client = ros_graph.client("one_goal_server"), ros_graph.client("one_goal_client")
    yield server, client
    client.close()
    server.close()


def _serve(server: Any, policy: BusyPolicy, work: GatedWork, names: tuple[str, ...] = ("first",),
           **options: Any) -> SingleGoalServer:
    actions = SingleGoalServer(server.node, policy=policy, callback_group=ReentrantCallbackGroup(), **options)
    for name in names:
        actions.serve(ReachGoal, name, work, refuse)  # the node keeps its action servers
    return actions


def _send(client: Any, name: str) -> Any:
    action = ActionClient(client.node, ReachGoal, name)
    assert action.wait_for_server(timeout_sec=WAIT_S), f"no {name} action"
    return wait_future(action.send_goal_async(ReachGoal.Goal()), WAIT_S, f"goal to {name}")


def _result(handle: Any) -> Any:
    return wait_future(handle.get_result_async(), WAIT_S, "result")


def test_a_goal_while_one_runs_is_refused_with_a_result_and_a_cancel_stops_only_its_own(graph):
    server, client = graph
    work = GatedWork()
    actions = _serve(server, BusyPolicy.REFUSE_WITH_RESULT, work, names=("first", "second"))
    running = _send(client, "first")
    wait_until(lambda: work.started, WAIT_S, "the first goal's work")
    assert actions.busy_with == "first"

    refused = _send(client, "second")  # another action of the same slot: accepted, then refused
    assert refused.accepted
    wrapped = _result(refused)
    assert wrapped.status == GoalStatus.STATUS_ABORTED
    assert wrapped.result.message == "refused second: busy with first"

    wait_future(refused.cancel_goal_async(), WAIT_S, "cancel of the refused goal")  # not the running one
    assert not work.started[0].stop.requested and actions.busy_with == "first"

    wait_future(running.cancel_goal_async(), WAIT_S, "cancel")
    wrapped = _result(running)
    assert wrapped.status == GoalStatus.STATUS_CANCELED
    assert wrapped.result.message == "canceled by the client"

    wait_until(lambda: actions.busy_with == "", WAIT_S, "the slot freed")
    work.gate.set()
    again = _result(_send(client, "second"))
    assert again.status == GoalStatus.STATUS_SUCCEEDED and again.result.message == "done"


def test_a_goal_while_one_runs_is_rejected_under_the_reject_policy(graph):
    server, client = graph
    work = GatedWork()
    actions = _serve(server, BusyPolicy.REJECT, work)
    running = _send(client, "first")
    wait_until(lambda: work.started, WAIT_S, "the first goal's work")
    assert not _send(client, "first").accepted
    work.gate.set()
    assert _result(running).status == GoalStatus.STATUS_SUCCEEDED
    wait_until(lambda: actions.busy_with == "", WAIT_S, "the slot freed")
    assert _send(client, "first").accepted


def test_a_stop_ends_the_running_goal_with_its_reason_and_rejects_new_goals(graph):
    server, client = graph
    work = GatedWork()
    hooked: list[str] = []
    actions = _serve(server, BusyPolicy.REFUSE_WITH_RESULT, work,
                     on_stop=lambda goal: hooked.append(goal.stop.reason))
    running = _send(client, "first")
    wait_until(lambda: work.started, WAIT_S, "the first goal's work")

    assert actions.shutdown("the server is stopping")  # the goal ended within the grace
    assert hooked == ["the server is stopping"] and actions.stop_requested()
    wrapped = _result(running)
    assert wrapped.status == GoalStatus.STATUS_ABORTED
    assert wrapped.result.message == "the server is stopping"
    assert not _send(client, "first").accepted


def test_a_stop_gives_up_on_work_that_ignores_it_after_its_grace(graph):
    server, client = graph
    work = GatedWork(ignore_stop=True)
    actions = _serve(server, BusyPolicy.REFUSE_WITH_RESULT, work, stop_grace_s=0.5)
    running = _send(client, "first")
    wait_until(lambda: work.started, WAIT_S, "the first goal's work")

    returned: list[bool] = []
    stopper = threading.Thread(target=lambda: returned.append(actions.shutdown("stopping")))
    started = time.monotonic()
    stopper.start()
    stopper.join(WAIT_S)
    assert returned == [False], "shutdown did not give up on work that ignores the stop"
    assert time.monotonic() - started >= 0.5  # it waited its grace first
    work.gate.set()  # the work ends by itself later: its goal still gets its result
    assert _result(running).status == GoalStatus.STATUS_SUCCEEDED
