"""RosGoalRunner's goal timeout counts the node's clock (simulated seconds under use_sim_time),
and still ends when that clock stops (a dead simulator): nothing hangs."""
from __future__ import annotations

import time
from types import SimpleNamespace

from task_learning_nodes.robot.runner import Deadline


class FakeClock:
    def __init__(self) -> None:
        self.ns = 0

    def now(self) -> SimpleNamespace:
        return SimpleNamespace(nanoseconds=self.ns)


def test_the_timeout_is_in_the_clocks_seconds_not_the_walls():
    """A simulator at a fifth of real time: over 0.5 s of wall time (more than the 0.2 s timeout)
    its clock moves 0.1 s, and the goal has not timed out; once the clock passes 0.2 s, it has."""
    clock = FakeClock()
    deadline = Deadline(clock, 0.2)
    for _ in range(10):
        clock.ns += 10_000_000
        time.sleep(0.05)
        assert not deadline.passed()
    clock.ns += 100_000_000
    assert deadline.passed()


def test_a_clock_that_stops_times_out_after_as_many_wall_seconds():
    clock = FakeClock()
    deadline = Deadline(clock, 0.3)
    clock.ns += 1_000
    assert not deadline.passed()
    began = time.monotonic()
    while not deadline.passed():
        assert time.monotonic() - began < 5.0, "a stopped clock must not hang the goal"
        time.sleep(0.02)
    assert time.monotonic() - began >= 0.25
