"""Backend selection by name: the seam where `ai2thor` and `fetch` plug in later."""
from __future__ import annotations

from task_learning.errors import TaskLearningError
from task_learning.world.backend import WorldBackend
from task_learning.world.scene import Scene, load_scene

BACKENDS = ("symbolic", "ai2thor", "fetch")
_NOT_YET = {
    "ai2thor": "not available: the AI2-THOR bridge is not implemented yet (it also needs the Unity "
               "simulator build, which this machine cannot download); use backend 'symbolic'",
    "fetch": "not available in-process: it runs in the perception node (backend:=fetch), which owns the "
             "camera subscriptions and the skill client; with the simulated robot: `task-learning run "
             "--backend fetch --synthetic`",
}


class BackendUnavailableError(TaskLearningError):
    """The requested world backend cannot be created here."""


def make_backend(name: str, scene: Scene | str, seed: int | None = None) -> WorldBackend:
    """A world backend by name ('symbolic' is the default everywhere); `scene` is a Scene or
    anything `load_scene` accepts."""
    key = (name or "symbolic").strip().lower()
    if key not in BACKENDS:
        raise BackendUnavailableError(f"unknown world backend {name!r} (known: {', '.join(BACKENDS)})")
    if key in _NOT_YET:
        raise BackendUnavailableError(f"world backend {key!r} {_NOT_YET[key]}")
    from task_learning.world.symbolic import SymbolicWorld

    return SymbolicWorld(scene if isinstance(scene, Scene) else load_scene(scene), seed=seed)
