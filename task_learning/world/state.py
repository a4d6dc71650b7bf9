"""Typed views of AI2-THOR metadata: what perception publishes and grounding reads."""
from __future__ import annotations

import time
from typing import Any, Mapping

from task_learning.types import WorldObject, WorldState


def _vec(value: Any) -> tuple[float, float, float]:
    if isinstance(value, Mapping):
        return (float(value.get("x", 0.0)), float(value.get("y", 0.0)), float(value.get("z", 0.0)))
    return (0.0, 0.0, 0.0)


def object_from_metadata(record: Mapping[str, Any]) -> WorldObject:
    """One AI2-THOR object dict -> WorldObject. null lists (seen in real metadata) become []."""
    return WorldObject(
        object_id=str(record["objectId"]),
        object_type=str(record["objectType"]),
        name=str(record.get("name") or record["objectType"]),
        parent_receptacles=list(record.get("parentReceptacles") or []),
        receptacle_object_ids=list(record.get("receptacleObjectIds") or []),
        position=_vec(record.get("position")),
        rotation=_vec(record.get("rotation")),
        distance=float(record.get("distance") or 0.0),
        visible=bool(record.get("visible", True)),
        properties=dict(record),
    )


def world_state_from_metadata(metadata: Mapping[str, Any], stamp: float | None = None) -> WorldState:
    """The whole event metadata -> WorldState (scene, objects, agent, held objects)."""
    agent = metadata.get("agent") or {}
    held = [str(o["objectId"]) for o in (metadata.get("inventoryObjects") or [])]
    return WorldState(
        scene=str(metadata.get("sceneName", "")),
        objects=[object_from_metadata(o) for o in (metadata.get("objects") or [])],
        robot_location=str(agent.get("location", "")),
        robot_position=_vec(agent.get("position")),
        robot_rotation=_vec(agent.get("rotation")),
        held_object_ids=held,
        stamp=time.time() if stamp is None else stamp,
    )


def metadata_from_world_state(state: WorldState) -> dict[str, Any]:
    """A WorldState as AI2-THOR-like metadata again (what `world_state_from_metadata` reads): the
    objects' own records, the agent's location and pose, the held objects."""
    def vec(value: tuple[float, float, float]) -> dict[str, float]:
        return {"x": value[0], "y": value[1], "z": value[2]}

    return {"sceneName": state.scene, "objects": [dict(o.properties) for o in state.objects],
            "agent": {"location": state.robot_location, "position": vec(state.robot_position),
                      "rotation": vec(state.robot_rotation)},
            "inventoryObjects": [{"objectId": object_id} for object_id in state.held_object_ids]}
