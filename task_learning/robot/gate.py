"""Whether the robot may move, and the interrupts of goals in flight.

Two ways to stop: a latched stop (`stop(source, reason)`: a run-stop topic that reads true, the
stop service) refuses every new goal, with the reason, until that source is cleared; an interrupt
(`interrupt(reason)`: PerformTask cancelled) cancels the goals in flight and ends the running
action, but the next action may move again. Listeners (the action clients) are told at once, so
a goal in flight is cancelled within the profile's `cancel_s`, not at the next step.
"""
from __future__ import annotations

import threading
from typing import Callable


class MotionGate:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: dict[str, str] = {}
        self._generation = 0
        self._last_interrupt = ""
        self._listeners: list[Callable[[str], None]] = []

    def on_stop(self, listener: Callable[[str], None]) -> None:
        """`listener(reason)` runs on every stop and interrupt (from the caller's thread)."""
        with self._lock:
            self._listeners.append(listener)

    def stop(self, source: str, reason: str) -> None:
        with self._lock:
            fresh = source not in self._stops
            self._stops[source] = reason
            self._generation += 1
            listeners = list(self._listeners)
        if fresh:
            for listener in listeners:
                listener(reason)

    def clear(self, source: str) -> bool:
        """Lift the stop of `source`; whether it was set."""
        with self._lock:
            return self._stops.pop(source, None) is not None

    def interrupt(self, reason: str) -> None:
        with self._lock:
            self._generation += 1
            self._last_interrupt = reason
            listeners = list(self._listeners)
        for listener in listeners:
            listener(reason)

    def refusal(self) -> str:
        """'' when motion is allowed, else why not (every latched stop)."""
        with self._lock:
            return "; ".join(f"{reason}" for reason in self._stops.values())

    @property
    def generation(self) -> int:
        """Changes on every stop and interrupt: an action compares it with its start's."""
        with self._lock:
            return self._generation

    def why_interrupted(self) -> str:
        with self._lock:
            return "; ".join(self._stops.values()) or self._last_interrupt or "interrupted"
