"""The Fetch's gripper as GripperCommand serves it: a gap to reach (the sum of the two fingers'
travel, 0-0.1 m) with at most `max_effort` newtons a finger. `reached_goal` when the gap is within
a few millimetres of the command; `stalled` when the fingers stop short of it (closed on something
they touch) and stay still; a goal that does neither within its time ends with neither set.
"""
from __future__ import annotations

from dataclasses import dataclass

FINGER_TRAVEL_M = 0.05
REACHED_TOLERANCE_M = 0.004
STILL_SPEED_M_S = 0.003
STILL_FOR_S = 0.3
TIMEOUT_S = 6.0
DEFAULT_EFFORT_N = 60.0


@dataclass
class GripperRun:
    """A gripper goal in flight and, once `done`, its result."""

    gap: float
    effort: float
    started_at: float
    still_since: float | None = None
    done: bool = False
    reached_goal: bool = False
    stalled: bool = False
    canceled: bool = False
    position: float = 0.0
    force: float = 0.0

    def finger_target(self) -> float:
        return min(max(self.gap / 2.0, 0.0), FINGER_TRAVEL_M)

    def tick(self, gap: float, speed: float, force: float, touching: bool, now: float) -> None:
        """Update from the fingers' gap (m), speed (m/s) and force (N); end when reached, stalled
        or out of time."""
        if self.done:
            return
        self.position, self.force = gap, force
        if abs(gap - 2.0 * self.finger_target()) <= REACHED_TOLERANCE_M:
            self.done = self.reached_goal = True
            return
        if abs(speed) < STILL_SPEED_M_S and now - self.started_at > STILL_FOR_S:
            self.still_since = self.still_since if self.still_since is not None else now
            if now - self.still_since >= STILL_FOR_S and touching:
                self.done = self.stalled = True
                return
        else:
            self.still_since = None
        if now - self.started_at > TIMEOUT_S:
            self.done = True
