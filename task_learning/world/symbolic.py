"""The built-in symbolic world: an offline twin of AI2-THOR with a one-armed mobile robot.

It speaks AI2-THOR's metadata and action names, so the stack cannot tell it from the simulator
except that it needs no GPU, is deterministic, and fails actions for the reasons a real one-armed
robot would: one held object; objects inside closed receptacles are invisible and cannot be taken;
the robot must be near an object (within 1.75 m, e.g. after NavigateToObject) to act on it;
nothing goes into a closed receptacle or a full one; non-pickupable objects stay put.
A failed action changes nothing (checks all run before any mutation).

Metadata notes: `visible` means "perceivable" (not shut inside a closed receptacle), not "in the
camera frame"; `errorCode` carries a short machine-readable reason for failures (e.g.
"receptacle_closed"), which BCR uses as the blocking condition; `agent.location` is the object the
robot last navigated to (the scene's location at start). Lists are never null here.
"""
from __future__ import annotations

import copy
import logging
import math
import random
from typing import Any, Callable, Iterable

from task_learning.world import layout
from task_learning.world.effects import RULES, StateRule, apply_rules
from task_learning.world.look import SEARCH_ACTION, look_around_plan
from task_learning.world.scene import Scene, make_object_record

log = logging.getLogger(__name__)

KNIFE_TYPES = ("Knife", "ButterKnife", "SteakKnife", "ParingKnife")
OBJECT_ACTIONS = (
    "PickupObject",
    "PutObject",
    "OpenObject",
    "CloseObject",
    "ToggleObjectOn",
    "ToggleObjectOff",
    "SliceObject",
    "NavigateToObject",
)
# Moving the camera: rotations, looking up/down and teleporting (AI2-THOR's names and parameters);
# VisualSearch is the look-around BCR uses (the BCR paper), built from them (world/look.py).
VIEW_ACTIONS = ("RotateLeft", "RotateRight", "LookUp", "LookDown", "Teleport", "TeleportFull")
ACTIONS = OBJECT_ACTIONS + ("DropHandObject", "Pass", "Done", SEARCH_ACTION) + VIEW_ACTIONS
# parameters each action accepts besides objectId (AI2-THOR names)
_EXTRA_PARAMS = {
    "PickupObject": {"forceAction", "manualInteract"},
    "PutObject": {"forceAction", "placeStationary"},
    "OpenObject": {"forceAction", "openness"},
    "CloseObject": {"forceAction"},
    "ToggleObjectOn": {"forceAction"},
    "ToggleObjectOff": {"forceAction"},
    "SliceObject": {"forceAction"},
    "NavigateToObject": set(),
    "DropHandObject": {"forceAction"},
    "Pass": set(),
    "Done": set(),
    SEARCH_ACTION: {"objectId"},
    "RotateLeft": {"degrees"},
    "RotateRight": {"degrees"},
    "LookUp": {"degrees"},
    "LookDown": {"degrees"},
    "Teleport": {"position", "rotation", "horizon", "standing", "forceAction"},
    "TeleportFull": {"position", "rotation", "horizon", "standing", "forceAction"},
}


class ActionFailed(Exception):
    """Raised inside an action's checks; becomes lastActionSuccess False, nothing changed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SymbolicWorld:
    """WorldBackend over a Scene. `seed` varies starting placements (the receptacle among a
    scene's allowed alternatives, the order of things in each receptacle) reproducibly;
    seed None keeps the scene exactly as written."""

    name = "symbolic"

    def __init__(self, scene: Scene, seed: int | None = None,
                 rules: Iterable[StateRule] = RULES) -> None:
        self.scene = scene
        self.seed = seed
        self.rules = tuple(rules)
        self._objects: dict[str, dict[str, Any]] = {o["objectId"]: copy.deepcopy(o) for o in scene.objects}
        self._order: list[str] = [o["objectId"] for o in scene.objects]
        self._capacities = dict(scene.capacities)
        self._centre = dict(scene.agent.get("position") or {"x": 0.0, "y": 0.9, "z": 0.0})
        self._agent: dict[str, Any] = {
            "name": "agent",
            "position": dict(self._centre),
            "rotation": layout.vec(0.0, 0.0, 0.0),
            "cameraHorizon": 0.0,
            "isStanding": True,
            "location": scene.location,
        }
        self._held: str | None = None
        for oid, record in self._objects.items():
            if record.get("isPickedUp"):
                self._held = oid
        self._last: dict[str, Any] = {
            "lastAction": "", "lastActionSuccess": True, "errorMessage": "", "errorCode": "",
            "actionReturn": None,
        }
        self._cache: dict[str, Any] | None = None
        self.steps = 0
        if seed is not None:
            self._vary_placements(random.Random(seed))
        apply_rules(self._objects, self.rules)

    # -- WorldBackend ---------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        if self._cache is None:
            self._cache = self._build_metadata()
        return self._cache

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        self.steps += 1
        result: Any = None
        try:
            handler = self._handler(action)
            self._check_params(action, params)
            result = handler(params)
        except ActionFailed as failure:
            log.debug("%s(%s) failed: %s", action, params.get("objectId", ""), failure.message)
            self._last = {"lastAction": str(action), "lastActionSuccess": False,
                          "errorMessage": failure.message, "errorCode": failure.code, "actionReturn": None}
        else:
            apply_rules(self._objects, self.rules)
            self._last = {"lastAction": action, "lastActionSuccess": True, "errorMessage": "",
                          "errorCode": "", "actionReturn": result}
        self._cache = None
        return self.metadata

    # -- queries the bridge and tests use --------------------------------------------------------

    @property
    def held_object(self) -> str | None:
        return self._held

    def is_near(self, object_id: str) -> bool:
        return self._distance(object_id) <= layout.REACH_M

    def enclosing_closed(self, object_id: str) -> str | None:
        """The closed receptacle that hides this object, if any (checked up the containment)."""
        current = self._objects[object_id]
        seen = {object_id}
        while current["parentReceptacles"]:
            parent_id: str = current["parentReceptacles"][0]
            if parent_id in seen:
                break
            seen.add(parent_id)
            parent = self._objects[parent_id]
            if parent.get("openable") and not parent.get("isOpen"):
                return parent_id
            current = parent
        return None

    # -- metadata -------------------------------------------------------------------------------

    def _hidden(self) -> set[str]:
        """Everything shut inside a closed receptacle (at any depth)."""
        hidden: set[str] = set()
        stack = [child for record in self._objects.values()
                 if record.get("openable") and not record.get("isOpen")
                 for child in record["receptacleObjectIds"]]
        while stack:
            oid = stack.pop()
            if oid not in hidden:
                hidden.add(oid)
                stack.extend(self._objects[oid]["receptacleObjectIds"])
        return hidden

    def _build_metadata(self) -> dict[str, Any]:
        objects = []
        hidden = self._hidden()
        agent_x = float(self._agent["position"]["x"])
        agent_z = float(self._agent["position"]["z"])
        for oid in self._order:
            record = self._objects[oid]
            out = dict(record)
            out["position"] = dict(record["position"])
            out["rotation"] = dict(record.get("rotation") or layout.vec(0.0, 0.0, 0.0))
            out["parentReceptacles"] = list(record["parentReceptacles"])
            out["receptacleObjectIds"] = list(record["receptacleObjectIds"])
            if isinstance(record.get("salientMaterials"), list):
                out["salientMaterials"] = list(record["salientMaterials"])
            visible = oid not in hidden
            position = record.get("position")
            distance = 0.0 if oid == self._held or not position else math.hypot(
                float(position["x"]) - agent_x, float(position["z"]) - agent_z)
            out["visible"] = visible
            out["distance"] = round(distance, 4)
            out["isInteractable"] = visible and distance <= layout.REACH_M
            objects.append(out)
        agent = dict(self._agent)
        agent["position"] = dict(self._agent["position"])
        agent["rotation"] = dict(self._agent["rotation"])
        inventory = []
        if self._held is not None:
            inventory.append({"objectId": self._held, "objectType": self._objects[self._held]["objectType"]})
        return {
            "objects": objects,
            "agent": agent,
            "inventoryObjects": inventory,
            "sceneName": self.scene.name,
            "lastAction": self._last["lastAction"],
            "lastActionSuccess": self._last["lastActionSuccess"],
            "errorMessage": self._last["errorMessage"],
            "errorCode": self._last["errorCode"],
            "actionReturn": self._last["actionReturn"],
        }

    def _distance(self, object_id: str) -> float:
        if object_id == self._held:
            return 0.0
        return layout.horizontal_distance(self._agent["position"], self._objects[object_id].get("position"))

    # -- dispatch and checks --------------------------------------------------------------------

    def _handler(self, action: Any) -> Callable[[dict[str, Any]], Any]:
        handlers = {
            "PickupObject": self._pickup,
            "PutObject": self._put,
            "DropHandObject": self._drop,
            "OpenObject": self._open,
            "CloseObject": self._close,
            "ToggleObjectOn": lambda p: self._toggle(p, True),
            "ToggleObjectOff": lambda p: self._toggle(p, False),
            "SliceObject": self._slice,
            "NavigateToObject": self._navigate,
            "Pass": lambda p: None,
            "Done": lambda p: None,
            SEARCH_ACTION: self._visual_search,
            "RotateLeft": lambda p: self._turn(-self._degrees(p, 90.0), 0.0),
            "RotateRight": lambda p: self._turn(self._degrees(p, 90.0), 0.0),
            "LookUp": lambda p: self._turn(0.0, -self._degrees(p, 30.0)),
            "LookDown": lambda p: self._turn(0.0, self._degrees(p, 30.0)),
            "Teleport": self._teleport,
            "TeleportFull": self._teleport,
        }
        if not isinstance(action, str) or action not in handlers:
            raise ActionFailed("InvalidAction", f"Invalid action: {action!r} (the symbolic world knows "
                               f"{', '.join(ACTIONS)})")
        return handlers[action]

    def _check_params(self, action: str, params: dict[str, Any]) -> None:
        allowed = set(_EXTRA_PARAMS[action]) | ({"objectId"} if action in OBJECT_ACTIONS else set())
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ActionFailed("InvalidArgument", f"{action} got unexpected parameter(s): {', '.join(unknown)}")
        if action in OBJECT_ACTIONS and not params.get("objectId"):
            raise ActionFailed("MissingArguments", f"{action} requires an objectId")

    def _target(self, params: dict[str, Any]) -> dict[str, Any]:
        object_id = params.get("objectId")
        if not isinstance(object_id, str) or object_id not in self._objects:
            raise ActionFailed("invalid_object", f"Object ID appears to be invalid. ({object_id!r} is not in the scene)")
        return self._objects[object_id]

    def _require_reachable(self, record: dict[str, Any], params: dict[str, Any]) -> None:
        """AI2-THOR's visibility and distance checks (skipped with forceAction, as there)."""
        oid = record["objectId"]
        if oid == self._held or params.get("forceAction"):
            return
        hidden_by = self.enclosing_closed(oid)
        if hidden_by is not None:
            raise ActionFailed("not_visible", f"Target object {oid} is not visible: it is inside {hidden_by}, "
                               "which is closed.")
        if self._distance(oid) > layout.REACH_M:
            raise ActionFailed("not_near", f"{oid} is too far away to be interacted with "
                               f"({self._distance(oid):.2f} m; navigate to it first)")

    # -- actions --------------------------------------------------------------------------------

    def _pickup(self, params: dict[str, Any]) -> None:
        target = self._target(params)
        oid = target["objectId"]
        if self._held == oid:
            raise ActionFailed("already_holding", f"Agent is already holding {oid}.")
        if self._held is not None:
            raise ActionFailed("hand_full", f"Agent is already holding {self._held}; it can hold only one "
                               "object at a time.")
        if not target.get("pickupable"):
            raise ActionFailed("not_pickupable", f"{oid} must have the property CanPickup to be picked up.")
        if target.get("isSliced") and target.get("sliceable"):
            raise ActionFailed("not_pickupable", f"{oid} has been sliced; pick up one of its slices instead.")
        self._require_reachable(target, params)
        self._detach(oid)
        target["isPickedUp"] = True
        self._held = oid
        self._move_subtree(oid, self._hand_position())

    def _put(self, params: dict[str, Any]) -> None:
        if self._held is None:
            raise ActionFailed("not_holding", "Can't place an object if Agent isn't holding anything.")
        receptacle = self._target(params)
        rid = receptacle["objectId"]
        held = self._held
        if rid == held or self._is_inside(rid, held):
            raise ActionFailed("invalid_target", f"Cannot put {held} into itself.")
        if not receptacle.get("receptacle"):
            raise ActionFailed("not_receptacle", f"This target object is NOT a receptacle! ({rid})")
        self._require_reachable(receptacle, params)
        if receptacle.get("openable") and not receptacle.get("isOpen"):
            raise ActionFailed("receptacle_closed", f"{rid} is closed: open it before putting {held} in it.")
        limit = self._capacities.get(rid)
        if limit is not None and len(receptacle["receptacleObjectIds"]) >= limit:
            raise ActionFailed("receptacle_full", f"No valid positions to place object found ({rid} holds "
                               f"{', '.join(receptacle['receptacleObjectIds'])})")
        held_record = self._objects[held]
        held_record["isPickedUp"] = False
        held_record["parentReceptacles"] = [rid]
        receptacle["receptacleObjectIds"].append(held)
        self._held = None
        self._move_subtree(held, layout.slot_position(receptacle, len(receptacle["receptacleObjectIds"]) - 1))

    def _drop(self, params: dict[str, Any]) -> None:
        if self._held is None:
            raise ActionFailed("not_holding", "Can't drop an object if Agent isn't holding anything.")
        held = self._held
        record = self._objects[held]
        record["isPickedUp"] = False
        self._held = None
        floor = next((o for o in self._objects.values() if o["objectType"] == "Floor"), None)
        position = dict(self._agent["position"])
        position["y"] = 0.0
        if floor is not None:
            record["parentReceptacles"] = [floor["objectId"]]
            floor["receptacleObjectIds"].append(held)
        self._move_subtree(held, position)

    def _open(self, params: dict[str, Any]) -> None:
        target = self._target(params)
        oid = target["objectId"]
        if not target.get("openable"):
            raise ActionFailed("not_openable", f"{oid} is not an Openable object")
        openness = params.get("openness", 1.0)
        if not isinstance(openness, (int, float)) or not 0.0 < float(openness) <= 1.0:
            raise ActionFailed("InvalidArgument", f"openness must be in (0, 1], got {openness!r}")
        self._require_reachable(target, params)
        if target.get("isOpen") and float(target.get("openness") or 1.0) == float(openness):
            raise ActionFailed("already_open", f"{oid} is already open.")
        if target.get("toggleable") and target.get("isToggled"):
            raise ActionFailed("must_be_off", f"Target must be OFF to open! ({oid} is on)")
        target["isOpen"] = True
        target["openness"] = float(openness)

    def _close(self, params: dict[str, Any]) -> None:
        target = self._target(params)
        oid = target["objectId"]
        if not target.get("openable"):
            raise ActionFailed("not_openable", f"{oid} is not an Openable object")
        self._require_reachable(target, params)
        if not target.get("isOpen"):
            raise ActionFailed("already_closed", f"{oid} is already closed.")
        target["isOpen"] = False
        target["openness"] = 0.0

    def _toggle(self, params: dict[str, Any], on: bool) -> None:
        target = self._target(params)
        oid = target["objectId"]
        if not target.get("toggleable"):
            raise ActionFailed("not_toggleable", f"{oid} is not toggleable")
        self._require_reachable(target, params)
        if on and target.get("isToggled"):
            raise ActionFailed("already_on", f"can't toggle object on if it's already on! ({oid})")
        if not on and not target.get("isToggled"):
            raise ActionFailed("already_off", f"can't toggle object off if it's already off! ({oid})")
        if on and target.get("openable") and target.get("isOpen"):
            raise ActionFailed("must_be_closed", f"{oid} must be closed to be turned on.")
        if on and target.get("isBroken"):
            raise ActionFailed("broken", f"{oid} is broken and cannot be turned on.")
        target["isToggled"] = on

    def _slice(self, params: dict[str, Any]) -> None:
        target = self._target(params)
        oid = target["objectId"]
        if not target.get("sliceable"):
            raise ActionFailed("not_sliceable", f"{target.get('name', oid)} Does not have the CanBeSliced property!")
        if target.get("isSliced"):
            raise ActionFailed("already_sliced", f"{oid} is already sliced.")
        if oid == self._held:
            raise ActionFailed("slice_held", f"Cannot slice {oid} while holding it; put it down first.")
        self._require_reachable(target, params)
        if self.scene.slice_requires_knife:
            held_type = self._objects[self._held]["objectType"] if self._held else ""
            if held_type not in KNIFE_TYPES:
                raise ActionFailed("needs_knife", "Slice: ObjectInteraction only supported for held object Knife "
                                   f"(holding {held_type or 'nothing'})")
        kind = self.scene.types.get(target["objectType"])
        piece_type_name = kind.sliced_type if kind and kind.sliced_type else f"{target['objectType']}Sliced"
        count = kind.slice_count if kind and kind.slice_count else 1
        piece_type = self.scene.types.get(piece_type_name)
        target["isSliced"] = True
        parents = list(target["parentReceptacles"])
        for k in range(count):
            piece_id = f"{oid}|{piece_type_name}_{k}"
            if piece_type is not None:
                piece = make_object_record(piece_type, piece_id)
            else:
                piece = copy.deepcopy(target)
                piece.update({"objectId": piece_id, "objectType": piece_type_name, "sliceable": False,
                              "isSliced": False, "receptacleObjectIds": []})
            piece["name"] = f"{target.get('name', oid)}_{piece_type_name}_{k}"
            piece["temperature"] = target.get("temperature", "RoomTemp")
            piece["parentReceptacles"] = list(parents)
            for parent in parents:
                self._objects[parent]["receptacleObjectIds"].append(piece_id)
            position = dict(target["position"])
            position["x"] = float(position["x"]) + 0.03 * (k + 1)
            piece["position"] = position
            self._objects[piece_id] = piece
            self._order.append(piece_id)

    def _navigate(self, params: dict[str, Any]) -> dict[str, float]:
        target = self._target(params)
        oid = target["objectId"]
        if oid != self._held:
            self._agent["position"] = layout.standing_point(target["position"], self._centre)
            if self._held is not None:
                self._move_subtree(self._held, self._hand_position())
        self._agent["location"] = oid
        return dict(self._agent["position"])

    # -- the camera: rotations, looking up/down, teleporting, looking around -------------------

    @staticmethod
    def _degrees(params: dict[str, Any], default: float) -> float:
        value = params.get("degrees", default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ActionFailed("InvalidArgument", f"degrees must be a number, got {value!r}")
        return float(value)

    def _turn(self, yaw: float, pitch: float) -> None:
        """Rotate by `yaw` degrees and tilt the camera by `pitch` (positive: down), within
        AI2-THOR's horizon limits (-30 up to 60 down)."""
        horizon = float(self._agent["cameraHorizon"]) + pitch
        if pitch and not layout.MIN_HORIZON - 1e-3 <= horizon <= layout.MAX_HORIZON + 1e-3:
            raise ActionFailed("horizon_limit", f"can't look {'down' if pitch > 0 else 'up'} beyond "
                               f"{layout.MAX_HORIZON if pitch > 0 else layout.MIN_HORIZON:g} degrees")
        rotation = dict(self._agent["rotation"])
        rotation["y"] = round((float(rotation.get("y", 0.0)) + yaw) % 360.0, 4)
        self._agent["rotation"] = rotation
        self._agent["cameraHorizon"] = round(min(max(horizon, layout.MIN_HORIZON), layout.MAX_HORIZON), 4)

    def _teleport(self, params: dict[str, Any]) -> None:
        position = params.get("position")
        if position is None:
            raise ActionFailed("MissingArguments", "Teleport requires a position {x, y, z}")
        if not isinstance(position, dict) or not all(isinstance(position.get(a), (int, float)) for a in "xz"):
            raise ActionFailed("InvalidArgument", f"position must be {{x, y, z}}, got {position!r}")
        rotation = params.get("rotation", self._agent["rotation"])
        if isinstance(rotation, (int, float)):
            rotation = {"x": 0.0, "y": float(rotation), "z": 0.0}
        horizon = params.get("horizon", self._agent["cameraHorizon"])
        if not isinstance(rotation, dict) or not isinstance(horizon, (int, float)):
            raise ActionFailed("InvalidArgument", "rotation must be {x, y, z} (or a yaw) and horizon a number")
        if not layout.MIN_HORIZON <= float(horizon) <= layout.MAX_HORIZON:
            raise ActionFailed("horizon_limit", f"horizon must be within [{layout.MIN_HORIZON:g}, "
                               f"{layout.MAX_HORIZON:g}] degrees, got {horizon}")
        height = position.get("y")
        self._agent["position"] = layout.vec(float(position["x"]),
                                             float(height) if isinstance(height, (int, float)) else
                                             float(self._centre.get("y", 0.9)), float(position["z"]))
        self._agent["rotation"] = layout.vec(0.0, float(rotation.get("y", 0.0)) % 360.0, 0.0)
        self._agent["cameraHorizon"] = round(float(horizon), 4)
        self._agent["isStanding"] = bool(params.get("standing", True))
        self._agent["location"] = ""  # teleported: not at an object the robot navigated to
        if self._held is not None:
            self._move_subtree(self._held, self._hand_position())

    def _visual_search(self, params: dict[str, Any]) -> None:
        """Look around: a full turn, then face `objectId` (if given) with the camera tilted onto
        it; each move an AI2-THOR rotation or LookUp/LookDown, as a bridge runs them."""
        target = self._target(params)["position"] if params.get("objectId") else None
        for action, degrees in look_around_plan(self.metadata["agent"], target):
            self._handler(action)({"degrees": degrees})
            self._cache = None

    def place_object(self, object_id: str, receptacle_id: str) -> None:
        """Put an object in/on a receptacle directly (scene set-up, AI2-THOR's SetObjectPoses),
        without the robot: no reach or hand checks, the containment kept consistent."""
        if object_id not in self._objects or receptacle_id not in self._objects:
            raise KeyError(object_id if object_id not in self._objects else receptacle_id)
        if object_id == self._held:
            self._held = None
            self._objects[object_id]["isPickedUp"] = False
        self._detach(object_id)
        receptacle = self._objects[receptacle_id]
        self._objects[object_id]["parentReceptacles"] = [receptacle_id]
        receptacle["receptacleObjectIds"].append(object_id)
        self._move_subtree(object_id, layout.slot_position(receptacle, len(receptacle["receptacleObjectIds"]) - 1))
        apply_rules(self._objects, self.rules)
        self._cache = None

    # -- containment helpers --------------------------------------------------------------------

    def _detach(self, oid: str) -> None:
        record = self._objects[oid]
        for parent in record["parentReceptacles"]:
            children = self._objects[parent]["receptacleObjectIds"]
            if oid in children:
                children.remove(oid)
        record["parentReceptacles"] = []

    def _is_inside(self, oid: str, ancestor: str) -> bool:
        current = self._objects[oid]
        seen = set()
        while current["parentReceptacles"]:
            parent = current["parentReceptacles"][0]
            if parent == ancestor:
                return True
            if parent in seen:
                return False
            seen.add(parent)
            current = self._objects[parent]
        return False

    def _hand_position(self) -> dict[str, float]:
        position = dict(self._agent["position"])
        position["y"] = float(position.get("y", 0.9))
        return position

    def _move_subtree(self, oid: str, position: dict[str, float]) -> None:
        record = self._objects[oid]
        record["position"] = dict(position)
        for slot, child in enumerate(record["receptacleObjectIds"]):
            self._move_subtree(child, layout.slot_position(record, slot))

    # -- seeded variation -----------------------------------------------------------------------

    def _vary_placements(self, rng: random.Random) -> None:
        for oid, options in sorted(self.scene.placement_options.items()):
            self._detach(oid)
            free = [r for r in options if self._capacities.get(r) is None
                    or len(self._objects[r]["receptacleObjectIds"]) < self._capacities[r]]
            choice = rng.choice(free or options)
            self._objects[oid]["parentReceptacles"] = [choice]
            self._objects[choice]["receptacleObjectIds"].append(oid)
            slot = len(self._objects[choice]["receptacleObjectIds"]) - 1
            self._move_subtree(oid, layout.slot_position(self._objects[choice], slot))
        for record in self._objects.values():
            rng.shuffle(record["receptacleObjectIds"])
        movable = [i for i, oid in enumerate(self._order) if self._objects[oid]["parentReceptacles"]]
        ids = [self._order[i] for i in movable]
        rng.shuffle(ids)
        for i, oid in zip(movable, ids):
            self._order[i] = oid
