"""Backend selection by name: the seam where `ai2thor` and `fetch` plug in."""
from __future__ import annotations

from dataclasses import dataclass

from task_learning.errors import TaskLearningError
from task_learning.world.backend import WorldBackend
from task_learning.world.scene import Scene, load_scene
from task_learning.world.thor.settings import ThorSettings

BACKENDS = ("symbolic", "ai2thor", "fetch", "robot_stand_in")
_NOT_YET = {
    "robot_stand_in": "not available in-process: it runs in the perception node (backend:=robot_stand_in "
                      "robot:=PROFILE), which owns the robot's action clients (robot.launch.py)",
    "fetch": "not available in-process: it runs in the perception node (backend:=fetch), which owns the "
             "camera subscriptions and the skill client; with the simulated robot: `task-learning run "
             "--backend fetch --synthetic`",
}


class BackendUnavailableError(TaskLearningError):
    """The requested world backend cannot be created here."""


@dataclass(frozen=True)
class WorldChoice:
    """Which world a run's instances are set in: a backend's name, and for `ai2thor` the
    Controller's settings (None: the perception node's parameter file). One object where a name
    and an untyped settings value were threaded through every layer down to make_backend."""

    backend: str = "symbolic"
    ai2thor: ThorSettings | None = None


SYMBOLIC = WorldChoice()  # the default everywhere: the recorded scenes, in process


def make_backend(name: str, scene: Scene | str, seed: int | None = None, *,
                 ai2thor_settings: ThorSettings | None = None) -> WorldBackend:
    """A world backend by name ('symbolic' is the default everywhere); `scene` is a Scene or
    anything `load_scene` accepts. `ai2thor_settings` (a ThorSettings) configures the AI2-THOR
    Controller; default: the perception node's parameter file."""
    key = (name or "symbolic").strip().lower()
    if key not in BACKENDS:
        raise BackendUnavailableError(f"unknown world backend {name!r} (known: {', '.join(BACKENDS)})")
    if key in _NOT_YET:
        raise BackendUnavailableError(f"world backend {key!r} {_NOT_YET[key]}")
    if key == "ai2thor":
        if seed is not None:
            raise BackendUnavailableError("world backend 'ai2thor' takes no seed: the simulator places the "
                                          "objects (leave --seed / the seed parameter unset)")
        from task_learning.world.thor.bridge import Ai2ThorWorld

        return Ai2ThorWorld(scene if isinstance(scene, Scene) else load_scene(scene), ai2thor_settings)
    from task_learning.world.symbolic import SymbolicWorld

    return SymbolicWorld(scene if isinstance(scene, Scene) else load_scene(scene), seed=seed)
