"""Shared helpers for the world tests: drive the symbolic world like a planner would."""
from __future__ import annotations

import copy
from typing import Any

from task_learning.world.symbolic import SymbolicWorld


def objects_by_id(metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["objectId"]: o for o in metadata["objects"]}


def world_part(metadata: dict[str, Any]) -> dict[str, Any]:
    """The part of the metadata that describes the world (not the last action's result)."""
    return copy.deepcopy({k: metadata[k] for k in ("objects", "agent", "inventoryObjects")})


def ok(world: SymbolicWorld, action: str, **params: Any) -> dict[str, Any]:
    metadata = world.step(action, **params)
    assert metadata["lastActionSuccess"], f"{action}({params}) failed: {metadata['errorMessage']}"
    return metadata


def fails(world: SymbolicWorld, action: str, code: str, **params: Any) -> dict[str, Any]:
    """Run an action that must fail with `code`, and check that it changed nothing."""
    before = world_part(world.metadata)
    metadata = world.step(action, **params)
    assert not metadata["lastActionSuccess"], f"{action}({params}) unexpectedly succeeded"
    assert metadata["errorCode"] == code, (metadata["errorCode"], metadata["errorMessage"])
    assert metadata["errorMessage"]
    assert metadata["lastAction"] == action
    assert world_part(metadata) == before, "a failed action changed the world"
    return metadata


def move(world: SymbolicWorld, object_id: str, destination: str) -> None:
    """Navigate, pick up, navigate, open if needed, put (leaves the destination open)."""
    ok(world, "NavigateToObject", objectId=object_id)
    ok(world, "PickupObject", objectId=object_id)
    ok(world, "NavigateToObject", objectId=destination)
    dest = objects_by_id(world.metadata)[destination]
    if dest["openable"] and not dest["isOpen"]:
        ok(world, "OpenObject", objectId=destination)
    ok(world, "PutObject", objectId=destination)


def close_all(world: SymbolicWorld, ids: list[str]) -> None:
    for object_id in ids:
        if objects_by_id(world.metadata)[object_id]["isOpen"]:
            ok(world, "NavigateToObject", objectId=object_id)
            ok(world, "CloseObject", objectId=object_id)
