"""A world state to analyse against when no perception runs: a scene's symbolic world.

The scene API (load_scene, SymbolicWorld, resolve_object) belongs to task_learning.world; this
module only looks it up, so the CLI and the node need no knowledge of where it lives. Until
SymbolicWorld / resolve_object exist, the scene's initial object records and a minimal resolver
(id, a type naming exactly one object, "<type> in|on <place>") stand in.
"""
from __future__ import annotations

import copy
import importlib
from typing import Any, Callable

from task_learning.errors import UnknownObjectError
from task_learning.names import normalize_name
from task_learning.types import WorldState
from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata

_WORLD_MODULES = ("task_learning.world", "task_learning.world.symbolic", "task_learning.world.scene",
                  "task_learning.world.resolve", "task_learning.world.objects")


def _world_api(name: str) -> Callable[..., Any] | None:
    for module_name in _WORLD_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found = getattr(module, name, None)
        if callable(found):
            return found
    return None


def scene_metadata(scene_name: str) -> dict[str, Any]:
    """AI2-THOR-style metadata of the scene's symbolic world at its start."""
    scene = load_scene(scene_name)
    symbolic = _world_api("SymbolicWorld")
    if symbolic is not None:
        return copy.deepcopy(symbolic(scene).metadata)
    return {"sceneName": scene.name, "objects": copy.deepcopy(scene.objects),
            "agent": {"location": scene.location}, "inventoryObjects": []}


def scene_world_state(scene_name: str) -> WorldState:
    return world_state_from_metadata(scene_metadata(scene_name))


def resolve_object(metadata: dict[str, Any], name: str) -> str:
    """Object id named by `name` (the world helper's resolver when present)."""
    resolver = _world_api("resolve_object")
    if resolver is not None:
        return str(resolver(metadata, name))
    return _minimal_resolve(metadata, name)


def _minimal_resolve(metadata: dict[str, Any], name: str) -> str:
    objects = metadata.get("objects") or []
    for obj in objects:
        if obj["objectId"] == name:
            return obj["objectId"]
    wanted = normalize_name(name)
    place = ""
    for sep in (" in ", " on "):
        if sep in f" {wanted} ":
            wanted, _, place = wanted.partition(sep.strip() and sep)
            wanted, place = wanted.strip(), place.strip()
            if place.startswith("the "):
                place = place[4:]
            break
    if wanted.startswith("the "):
        wanted = wanted[4:]
    matches = [o for o in objects if normalize_name(o["objectType"]) == wanted]
    if place:
        place_ids = {o["objectId"] for o in objects if normalize_name(o["objectType"]) == place}
        matches = [o for o in matches if place_ids.intersection(o.get("parentReceptacles") or [])]
    if len(matches) != 1:
        what = "no object" if not matches else f"{len(matches)} objects"
        raise UnknownObjectError(f"{what} named {name!r} in scene {metadata.get('sceneName', '')!r}")
    return matches[0]["objectId"]
