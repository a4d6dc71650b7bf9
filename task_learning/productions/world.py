"""A world backend (AI2-THOR metadata and actions) seen the way the bootstrapped-productions paper's agent sees it.

Perception as in the paper: the robot knows the names, types and positions of the large
receptacles in advance (and whether openable ones are open), but what a receptacle holds only once
it has stood in front of it while it was open (or not openable): that is exploring it. What it
has seen it remembers; what it moves it tracks. Motor actions become AI2-THOR actions: every
action on a thing first navigates to it (NavigateToObject), as the paper's put "on CounterTop4"
from 0.9 m away implies. A failed action returns the world's error message (an affordance error).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from task_learning.productions.knowledge import GRIPPER, EnvKnowledge, Receptacle, Thing, name_equal
from task_learning.productions.language import motor_form
from task_learning.types import ActionCall, ActionOutcome
from task_learning.world import layout
from task_learning.world.backend import WorldBackend
from task_learning.world.outcome import run_action

log = logging.getLogger(__name__)

# receptacles the robot does not treat as places to explore or store things
IGNORED_RECEPTACLES = ("Floor", "Stool", "Chair", "Sink")


class WorldAdapter:
    """ProductionWorld over a WorldBackend (the symbolic world, or the AI2-THOR bridge)."""

    def __init__(self, backend: WorldBackend, on_outcome: Callable[[ActionOutcome], None] | None = None) -> None:
        self.backend = backend
        self.on_outcome = on_outcome  # every AI2-THOR action and how it went (the planner records them)
        self._explored: set[str] = set()
        self._seen: dict[str, str] = {}  # object id -> receptacle id where last seen ('' unknown)
        self.actions = 0  # AI2-THOR actions sent
        self._observe()

    # -- knowledge --------------------------------------------------------------------------
    def _records(self) -> dict[str, dict[str, Any]]:
        return {o["objectId"]: o for o in self.backend.metadata.get("objects") or []}

    def _is_receptacle(self, record: dict[str, Any]) -> bool:
        return bool(record.get("receptacle")) and not record.get("pickupable") \
            and record.get("objectType") not in IGNORED_RECEPTACLES

    def _observe(self) -> None:
        """Explore what stands open in front of the robot: note its contents."""
        records = self._records()
        here = str((self.backend.metadata.get("agent") or {}).get("location") or "")
        record = records.get(here)
        if record is not None and self._is_receptacle(record) and (not record.get("openable") or record.get("isOpen")):
            self._explored.add(here)
            for oid in record.get("receptacleObjectIds") or []:
                child = records.get(oid)
                if child is not None and child.get("pickupable"):
                    self._seen[oid] = here
                    for inner in child.get("receptacleObjectIds") or []:  # an apple in a bowl
                        if records.get(inner, {}).get("pickupable"):
                            self._seen[inner] = here
        held = {o["objectId"] for o in self.backend.metadata.get("inventoryObjects") or []}
        for oid in held:
            self._seen[oid] = GRIPPER
        for oid, where in list(self._seen.items()):
            if where == GRIPPER and oid not in held:
                parents = (records.get(oid) or {}).get("parentReceptacles") or []
                self._seen[oid] = next((p for p in parents if p in records and self._is_receptacle(records[p])), "")

    def knowledge(self) -> EnvKnowledge:
        metadata = self.backend.metadata
        records = self._records()
        agent = metadata.get("agent") or {}
        position = agent.get("position") or {}
        env = EnvKnowledge(location=str(agent.get("location") or ""))
        for oid, record in records.items():
            if self._is_receptacle(record):
                env.receptacles[oid] = Receptacle(
                    name=oid, type=str(record["objectType"]),
                    distance=round(layout.horizontal_distance(position, record.get("position")), 2),
                    openable=bool(record.get("openable")), is_open=bool(record.get("isOpen")),
                    explored=oid in self._explored)
        for oid, where in self._seen.items():
            seen = records.get(oid)
            if seen is None:
                continue
            env.objects[oid] = Thing(name=oid, type=str(seen["objectType"]), location=where,
                                     pickupable=bool(seen.get("pickupable")),
                                     sliceable=bool(seen.get("sliceable")), sliced=bool(seen.get("isSliced")))
        return env

    def motor_options(self) -> list[str]:
        env = self.knowledge()
        options = [f"move to {r}" for r in env.receptacle_names()]
        options += [f"open {r}" for r in env.receptacle_names() if env.receptacles[r].openable and not env.receptacles[r].is_open]
        options += [f"close {r}" for r in env.receptacle_names() if env.receptacles[r].openable and env.receptacles[r].is_open]
        for held in env.held:
            options += [f"put {held} {'in' if env.receptacles[r].openable else 'on'} {r}" for r in env.receptacle_names()]
        if not env.held:
            options += [f"pick up {o}" for o in env.object_names() if env.objects[o].pickupable and not env.objects[o].sliced]
        options += [f"slice {o}" for o in env.object_names() if env.objects[o].sliceable and not env.objects[o].sliced]
        return options

    # -- actions ----------------------------------------------------------------------------
    def _resolve(self, name: str, env: EnvKnowledge) -> str | None:
        name = name.strip().strip("'\"")
        if name in env.objects or name in env.receptacles:
            return name
        found = [n for n in env.object_names() + env.receptacle_names() if env.kind_matches(n, name)]
        return found[0] if found else None

    def _step(self, action: str, **params: Any) -> str:
        self.actions += 1
        object_id = str(params.pop("objectId", ""))
        outcome = run_action(self.backend, ActionCall(action, object_id, tuple(sorted(params.items()))))
        if self.on_outcome:
            self.on_outcome(outcome)
        return "" if outcome.success else outcome.error_message

    def execute(self, action: str) -> str:
        """Run one motor action; '' or the error (the world unchanged)."""
        form = motor_form(action)
        if form is None:
            return f"unknown motor action {action!r}"
        verb, slots = form
        env = self.knowledge()
        names = {k: self._resolve(v, env) for k, v in slots.items() if k in ("object", "target")}
        missing = [slots[k] for k, v in names.items() if v is None]
        if missing:
            return f"unknown object or receptacle: {', '.join(missing)}"
        error = self._run(verb, names, env)
        self._observe()
        return error

    def _run(self, verb: str, names: dict[str, str | None], env: EnvKnowledge) -> str:
        target, obj = names.get("target") or "", names.get("object") or ""
        if verb == "move to":
            return self._step("NavigateToObject", objectId=target)
        if verb in ("open", "close"):
            error = self._step("NavigateToObject", objectId=target)
            return error or self._step("OpenObject" if verb == "open" else "CloseObject", objectId=target)
        if verb == "pick up":
            where = env.objects[obj].location if obj in env.objects else ""
            if where and where != GRIPPER:
                error = self._step("NavigateToObject", objectId=where)
                if error:
                    return error
            return self._step("PickupObject", objectId=obj)
        if verb == "put":
            if obj not in env.held:
                return f"Can't place {obj}: the robot is not holding it."
            error = self._step("NavigateToObject", objectId=target)
            return error or self._step("PutObject", objectId=target)
        if verb == "slice":
            where = env.objects[obj].location if obj in env.objects else ""
            if where and where != GRIPPER:
                error = self._step("NavigateToObject", objectId=where)
                if error:
                    return error
            return self._step("SliceObject", objectId=obj)
        return f"unknown motor action {verb!r}"


def type_matches(record: dict[str, Any], kind: str) -> bool:
    return name_equal(str(record.get("objectType", "")), kind) or name_equal(str(record.get("objectId", "")), kind)
