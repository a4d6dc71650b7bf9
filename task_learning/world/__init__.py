"""World backends (symbolic twin of AI2-THOR, AI2-THOR itself, a real Fetch) behind one protocol.

The scene API is importable from here as well as from its modules (lazily, so importing
`task_learning.world.backend` stays cheap): load_scene, Scene, SymbolicWorld, make_backend,
CompletionReport, resolve_object, describe_object, generate_scene. The completion function lives in
`task_learning.world.completion` (import it from there: the package attribute `completion` is
that submodule).
"""
from task_learning import lazy_exports

_EXPORTS = {
    "Scene": "task_learning.world.scene",
    "Subtask": "task_learning.world.scene",
    "load_scene": "task_learning.world.scene",
    "scene_from_metadata": "task_learning.world.scene",
    "load_metadata_scenes": "task_learning.world.scene",
    "SymbolicWorld": "task_learning.world.symbolic",
    "make_backend": "task_learning.world.factory",
    "CompletionReport": "task_learning.world.completion",
    "resolve_object": "task_learning.world.resolve",
    "describe_object": "task_learning.world.resolve",
    "generate_scene": "task_learning.world.generate",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
