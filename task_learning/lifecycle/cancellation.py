"""Stopping a run between two primitive actions: a cancelled ROS goal, a SIGINT/SIGTERM, or a
dependency that went away.

`StopToken.request(reason)` is called from another thread; the run checks the token before each
object and before each primitive action (`StoppableWorld` wraps the world), and `RunStopped` ends
it there. Nothing learned is lost: every goal and policy is committed to the knowledge base as
soon as it is learned, before the next action starts.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from task_learning.world.backend import WorldBackend


class RunStopped(Exception):
    """The run was asked to stop (not a TaskLearningError: no layer may treat it as a failed
    object and carry on)."""


class DependencyFailed(Exception):
    """A component the run depends on (a node serving the world, the elicitor) died or did not
    answer: the whole run ends with a message naming it. Not a TaskLearningError, so no layer
    takes it for one object's failure and carries on with the next object."""


class StopToken:
    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def request(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise RunStopped(self.reason or "stopped")

    def wait(self, timeout_s: float) -> bool:
        return self._event.wait(timeout_s)


class StoppableWorld:
    """A WorldBackend that refuses the next primitive action once its token is set."""

    def __init__(self, world: WorldBackend, token: StopToken) -> None:
        self._world = world
        self._token = token
        self.name = getattr(world, "name", "world")

    @property
    def metadata(self) -> dict[str, Any]:
        return self._world.metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        self._token.check()
        return self._world.step(action, **params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)
