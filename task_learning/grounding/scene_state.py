"""A world state to analyse against when no perception runs: a scene's symbolic world at its start.

Thin glue over the world API (task_learning.world: load_scene, SymbolicWorld, resolve_object) so
the CLI, the node and the tests build the analysed state the same way.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

from task_learning.types import WorldState
from task_learning.world import SymbolicWorld, load_scene
from task_learning.world.resolve import resolve_object as _resolve_object
from task_learning.world.state import world_state_from_metadata


def scene_metadata(scene_name: str) -> dict[str, Any]:
    """AI2-THOR-style metadata of the scene's symbolic world at its start (seed None: as written)."""
    return copy.deepcopy(SymbolicWorld(load_scene(scene_name)).metadata)


def scene_world_state(scene_name: str) -> WorldState:
    return world_state_from_metadata(scene_metadata(scene_name))


def resolve_object(metadata: Mapping[str, Any], name: str) -> str:
    """Object id for a user's name: an id, a type naming one object, '<type> in|on <place>'."""
    return _resolve_object(metadata, name)
