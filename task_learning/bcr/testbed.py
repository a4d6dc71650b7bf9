"""The BCR testbed around any world backend: the paper's failure points (the BCR paper §V-D) that a
plain symbolic world does not have. Only the BCR experiments use it (runner.make_world).

* `VisualSearch(objectId)`: the backend's own look-around (rotations, LookUp/LookDown; every
  backend has it, world/look.py); here it also clears a blocked view.
* A door hides what is behind it: opening a fridge from where NavigateToObject put the robot
  (right at the fridge) may leave the door between the camera and the shelves (seeded, per
  opening). Until the robot looks around or moves to another object, what is inside the fridge is
  not visible, and picking from it or placing into it fails with an AI2-THOR-like error.

Objects in the way of a placement come from the world itself (a full receptacle answers "No
valid positions to place object found").
"""
from __future__ import annotations

import copy
import random
from typing import Any

from task_learning.world.backend import WorldBackend
from task_learning.world.look import SEARCH_ACTION

DOOR_TYPES = ("Fridge",)


class FailurePointWorld:
    """WorldBackend wrapper adding door occlusion (probability `door_block_p`) that the
    backend's VisualSearch clears."""

    def __init__(self, inner: WorldBackend, seed: int | None = None,
                 door_block_p: float = 0.5, door_types: tuple[str, ...] = DOOR_TYPES) -> None:
        self.inner = inner
        self.name = f"{getattr(inner, 'name', 'world')}+bcr"
        self.door_block_p = door_block_p
        self.door_types = door_types
        self._rng = random.Random(0 if seed is None else seed)  # reproducible either way
        self._blocking_door: str | None = None  # the open door between camera and shelves
        self._last: dict[str, Any] | None = None  # an overriding result for the last step

    # ---- WorldBackend ----------------------------------------------------------------------
    @property
    def metadata(self) -> dict[str, Any]:
        base = self.inner.metadata
        if self._blocking_door is not None:
            agent = base.get("agent") or {}
            if agent.get("location") != self._blocking_door:
                self._blocking_door = None  # the robot moved: a fresh viewpoint
        out = self._occlude(base) if self._blocking_door else base
        if self._last is not None:
            out = dict(out)
            out.update(self._last)
        return out

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        self._last = None
        target = str(params.get("objectId", ""))
        if action == SEARCH_ACTION:
            result = self.inner.step(action, **params)
            if result.get("lastActionSuccess"):
                self._blocking_door = None
            return self.metadata
        if self._blocking_door and action in ("PickupObject", "PutObject") \
                and self._behind_door(target):
            message = (f"Target object {target} is not visible: the open door of "
                       f"{self._blocking_door} blocks the view from here.")
            self._last = {"lastAction": action, "lastActionSuccess": False,
                          "errorMessage": message, "errorCode": "not_visible",
                          "actionReturn": None}
            return self.metadata
        result = self.inner.step(action, **params)
        if action == "OpenObject" and result.get("lastActionSuccess"):
            record = next((o for o in result.get("objects") or []
                           if o.get("objectId") == target), None)
            at_door = (result.get("agent") or {}).get("location") == target
            if record and record.get("objectType") in self.door_types and at_door \
                    and self._rng.random() < self.door_block_p:
                self._blocking_door = target
        if action == "CloseObject" and target == self._blocking_door:
            self._blocking_door = None
        return self.metadata

    # ---- helpers ---------------------------------------------------------------------------
    def _behind_door(self, object_id: str, objects: dict[str, Any] | None = None) -> bool:
        door = self._blocking_door
        if not door:
            return False
        if object_id == door:
            return True
        if objects is None:
            objects = {o["objectId"]: o for o in self.inner.metadata.get("objects") or []}
        seen = set()
        current = objects.get(object_id)
        while current is not None and current.get("parentReceptacles"):
            parent = current["parentReceptacles"][0]
            if parent == door:
                return True
            if parent in seen:
                break
            seen.add(parent)
            current = objects.get(parent)
        return False

    def _occlude(self, metadata: dict[str, Any]) -> dict[str, Any]:
        out = copy.copy(metadata)
        objects = []
        by_id = {o["objectId"]: o for o in metadata.get("objects") or []}
        for obj in metadata.get("objects") or []:
            if obj.get("objectId") == self._blocking_door:
                obj = dict(obj)
                obj["isInteractable"] = False  # its inside cannot be reached from here
            elif self._behind_door(obj["objectId"], by_id):
                obj = dict(obj)
                obj["visible"] = False
                obj["isInteractable"] = False
            objects.append(obj)
        out["objects"] = objects
        return out
