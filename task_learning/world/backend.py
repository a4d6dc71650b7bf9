"""The seam between the stack and whatever world it acts in.

Every backend speaks AI2-THOR's metadata: `step` takes AI2-THOR action names and parameters and
returns the metadata dict of the event that follows (`objects`, `agent`, `inventoryObjects`,
`sceneName`, `lastAction`, `lastActionSuccess`, `errorMessage`, `actionReturn`). The same bridge
code therefore serves the real simulator, the symbolic world and a real robot.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from task_learning.errors import TaskLearningError

# The blocking condition of an action that failed because the world itself is gone.
WORLD_UNAVAILABLE = "WorldUnavailable"


class WorldUnavailableError(TaskLearningError):
    """The world itself is gone (a simulator process exited or stopped answering, a robot
    disconnected): no action can succeed until it is restarted, so callers stop instead of
    trying other actions. The message names what failed."""


@runtime_checkable
class WorldBackend(Protocol):
    """A world a robot perceives and acts in.

    Actions: PickupObject(objectId), PutObject(objectId=<receptacle>), DropHandObject,
    OpenObject(objectId), CloseObject(objectId), ToggleObjectOn/Off(objectId),
    SliceObject(objectId), NavigateToObject(objectId) (not an AI2-THOR action: a bridge implements
    it with GetReachablePositions + Teleport). A failed action sets lastActionSuccess False with an
    AI2-THOR-like errorMessage and leaves the world unchanged.
    """

    name: str

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata of the latest event (the world as it is now)."""
        ...

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        """Run one action; return the metadata after it."""
        ...
