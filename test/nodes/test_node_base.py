"""What every node shares (nodes/plumbing/node_base.py): stopping is prompt and bounded, and an action
client can be created while its node spins.

Stopping (run_node):

Ctrl-C or SIGTERM to a working node ends it with exit code 0, its executor thread out of rcl_wait
before the node and rclpy are torn down; a node whose stop hangs does not wait for `ros2 launch`
to SIGKILL it: within SHUTDOWN_LIMIT_S it prints every thread's stack (naming the hang) and
exits with code 1. The node is test/ros_shutdown_helper.py, in its own process.
"""
from __future__ import annotations

import signal
import sys
from typing import Any

import pytest

from task_learning_nodes.plumbing.node_base import SHUTDOWN_LIMIT_S

from ..ros_testing import ROOT

HELPER = ROOT / "test" / "ros_shutdown_helper.py"


def start_probe(ros_graph, mode: str):
    probe = ros_graph.start([sys.executable, str(HELPER), mode], name=f"probe {mode}")
    probe.wait_for_line("probe busy", timeout=60)  # its callbacks are running
    return probe


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_busy_node_cleanly(ros_graph, sig):
    probe = start_probe(ros_graph, "busy")
    code, text = probe.stop(sig, timeout=SHUTDOWN_LIMIT_S + 30)
    assert code == 0, text[-3000:]
    assert "Timeout" not in probe.stderr and "Traceback" not in text, text[-3000:]


def test_a_hung_stop_prints_the_stacks_and_exits_instead_of_waiting_for_sigkill(ros_graph):
    probe = start_probe(ros_graph, "stuck")
    code, _ = probe.stop(signal.SIGINT, timeout=SHUTDOWN_LIMIT_S + 30)
    assert code == 1, probe.output[-3000:]
    err = probe.stderr
    assert f"Timeout (0:00:0{int(SHUTDOWN_LIMIT_S)})!" in err, err[-3000:]
    assert "in stop_work" in err, err[-3000:]  # the hang names itself


def test_an_action_client_has_its_lock_before_its_node_can_spin_it(ros_graph):
    """rclpy adds an ActionClient to its node's waitables before creating the lock that
    get_num_entities takes; an executor spinning meanwhile then dies. Ours has the lock first."""
    from task_learning_interfaces.action import PerformTask
    from task_learning_nodes.plumbing.node_base import ActionClient

    client = ros_graph.client("lock_probe")
    seen: list[bool] = []
    add_waitable = client.node.add_waitable

    def checking_add(waitable):
        seen.append(hasattr(waitable, "_lock"))
        return add_waitable(waitable)

    try:
        client.node.add_waitable = checking_add
        action = ActionClient(client.node, PerformTask, "perform_task")
        assert seen == [True]
        action.destroy()
    finally:
        client.close()


class AnsweringLock:
    """Stands in for an ActionClient's lock: each time the lock is released, the goal requests
    registered by then are answered (accepted) at once, the way an executor thread that waited
    for the lock takes a fast server's response. The worst moment for a race, made certain."""

    def __init__(self, client) -> None:
        import threading

        self.inner = threading.Lock()
        self.client = client
        self.answered: set[int] = set()

    def __enter__(self) -> None:
        self.inner.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.inner.release()
        with self.inner:
            pending = [seq for seq in self.client._pending_goal_requests if seq not in self.answered]
            self.answered.update(pending)
        for seq in pending:
            response = self.client._action_type.Impl.SendGoalService.Response(accepted=True)
            step = self.client.execute({"goal": (seq, response)})
            with pytest.raises(StopIteration):
                step.send(None)


def test_a_goal_answered_at_once_completes_the_future_send_goal_async_returns(ros_graph):
    """rclpy's send_goal_async registers a future under its lock and, after the lock, replaces it
    with the one it returns: an answer taken in between completes the first one, and the caller
    waits for ever on a goal the server accepted. Ours registers one future, under the lock."""
    from task_learning_interfaces.action import PerformTask
    from task_learning_nodes.plumbing.node_base import ActionClient

    client = ros_graph.client("goal_race_probe")
    try:
        action = ActionClient(client.node, PerformTask, "perform_task")
        action._lock = AnsweringLock(action)
        feedback: list = []
        future = action.send_goal_async(PerformTask.Goal(task="tidy kitchen"), feedback_callback=feedback.append)
        assert action._lock.answered, "the goal request was never registered"
        assert future.done(), "the answer went to a future send_goal_async did not return"
        assert future.result().accepted
        # The feedback callback was in place before the goal left, so no early feedback is lost.
        assert list(action._feedback_callbacks.values()) == [feedback.append]
    finally:
        client.close()


class FailingGoalHandle:
    """An action client's handle whose goal requests cannot be sent; everything else (what the
    executor spinning the client uses meanwhile) goes to the real handle."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def send_goal_request(self, _request: object) -> int:
        raise RuntimeError("the goal request could not be sent")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> Any:
        return self._real.__enter__()

    def __exit__(self, *exc: object) -> Any:
        return self._real.__exit__(*exc)


def test_a_goal_that_cannot_be_sent_leaves_no_feedback_callback(ros_graph):
    from task_learning_interfaces.action import PerformTask
    from task_learning_nodes.plumbing.node_base import ActionClient

    client = ros_graph.client("goal_send_failure_probe")
    try:
        action = ActionClient(client.node, PerformTask, "perform_task")
        handle = action._client_handle
        action._client_handle = FailingGoalHandle(handle)
        try:
            with pytest.raises(RuntimeError, match="could not be sent"):
                action.send_goal_async(PerformTask.Goal(task="tidy kitchen"), feedback_callback=print)
        finally:
            action._client_handle = handle
        assert action._feedback_callbacks == {}
        assert action._pending_goal_requests == {}
    finally:
        client.close()
