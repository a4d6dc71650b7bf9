"""LLM-State on any AI2-THOR-speaking world backend (symbolic, the ai2thor bridge, a ROS proxy).

The household (household.py) takes the paper's primitives directly; every other world in this
project speaks AI2-THOR's metadata, action names and error messages. `ThorWorld` translates, so
the same `LLMStateAgent` runs on either:

* names: the paper's style, lower-case type plus a number ("Fridge|1" -> "fridge1", "Mug|+0.1|..."
  -> "mug1", numbered by objectId within a type), fixed for the episode;
* observation (O_t): objects not shut inside a closed receptacle (AI2-THOR's `visible` in the
  symbolic world: perceivable), kept cumulatively with where they were last seen, IN an openable
  receptacle or ON any other; containers are the openable receptacles, surfaces the other
  receptacles; one room (the scene's location); held objects; objects within reach;
* primitives -> AI2-THOR actions: move -> NavigateToObject (a move to the room is a no-op),
  pickup -> PickupObject, placein/placeon -> PutObject on the target (the named object must be
  the one held), open/close -> OpenObject/CloseObject, switchon/switchoff -> ToggleObjectOn/Off,
  wait -> Pass. A call on a name never seen fails without touching the world.

Goal literals (what the planner reaches) become the goal text the prompts show through
`goal_text`: one clause per literal, joined by "; ".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from task_learning.llm_state.calls import Call
from task_learning.llm_state.household import Observation, StepResult, TaskSpec
from task_learning.types import ActionCall, ActionOutcome, GoalLiteral, Truth
from task_learning.world.backend import WorldBackend
from task_learning.world.outcome import run_action

ACTION_OF = {"move": "NavigateToObject", "pickup": "PickupObject", "placein": "PutObject",
             "placeon": "PutObject", "open": "OpenObject", "close": "CloseObject",
             "switchon": "ToggleObjectOn", "switchoff": "ToggleObjectOff", "wait": "Pass"}
REACH_M = 1.75  # AI2-THOR-style interaction distance used for "You are closed to"
_ID_NUMBER = re.compile(r"^[^|]+\|(\d+)$")


def spoken_type(object_type: str) -> str:
    """"OrangeJuice" -> "orange juice" (for goal text)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", object_type).lower()


def goal_text(literals: Sequence[GoalLiteral], name_of: Callable[[str], str]) -> str:
    """The goal literals as the prompt's goal text, one clause per literal ("put the yogurt1 in
    the fridge1; close the fridge1"); object ids become the episode's names."""
    clauses: list[str] = []
    for lit in literals:
        args = [name_of(a) for a in lit.args]
        true = lit.truth != Truth.FALSE
        pred = lit.predicate
        if pred in ("inside", "on") and len(args) == 2:
            rel = "in" if pred == "inside" else "on"
            clauses.append(f"put the {args[0]} {rel} the {args[1]}" if true
                           else f"take the {args[0]} out of the {args[1]}")
        elif pred in ("open", "closed") and args:
            opened = true if pred == "open" else not true
            clauses.append(f"{'open' if opened else 'close'} the {args[0]}")
        elif pred == "switched_on" and args:
            clauses.append(f"switch {'on' if true else 'off'} the {args[0]}")
        elif pred == "holding" and args:
            clauses.append(f"{'hold' if true else 'put down'} the {args[0]}")
        else:
            clauses.append(f"make {pred}({', '.join(args)}) {'true' if true else 'false'}")
    return "; ".join(clauses)


@dataclass
class ThorWorld:
    """The world interface LLMStateAgent needs (observe, execute, check, hands, map_name) over
    an AI2-THOR-speaking backend. `goal_check` decides success (the planner's literals)."""

    backend: WorldBackend
    goal_check: Callable[[Mapping[str, Any]], bool]
    room: str = ""  # "": the agent's location in the metadata ("kitchen" -> "kitchen1")
    hands: int = 1  # AI2-THOR's agent holds one object
    map_name: str = "ai2thor"
    on_outcome: Callable[[ActionOutcome], None] | None = None
    names: dict[str, str] = field(default_factory=dict)  # objectId -> name
    ids: dict[str, str] = field(default_factory=dict)  # name -> objectId
    _seen: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (IN|ON, parent name)

    def __post_init__(self) -> None:
        metadata = self.backend.metadata
        if not self.room:
            location = str((metadata.get("agent") or {}).get("location") or "room")
            self.room = (re.sub(r"[^a-z0-9]", "", location.lower()) or "room") + "1"
        self._name_objects(metadata)

    # ------------------------------------------------------------------ names
    def _name_objects(self, metadata: Mapping[str, Any]) -> None:
        by_type: dict[str, list[str]] = {}
        for obj in metadata.get("objects") or []:
            if obj["objectId"] not in self.names:
                by_type.setdefault(str(obj["objectType"]), []).append(str(obj["objectId"]))
        for object_type, ids in by_type.items():
            stem = re.sub(r"[^a-z0-9]", "", object_type.lower())
            used = {n for n in self.ids if re.sub(r"\d+$", "", n) == stem}
            for object_id in sorted(ids, key=_id_order):
                match = _ID_NUMBER.match(object_id)
                number = int(match.group(1)) if match else 1
                while f"{stem}{number}" in used:
                    number += 1
                name = f"{stem}{number}"
                used.add(name)
                self.names[object_id] = name
                self.ids[name] = object_id

    def name_of(self, object_id: str) -> str:
        return self.names.get(object_id, object_id)

    # ------------------------------------------------------------------ O_t
    def observe(self) -> Observation:
        metadata = self.backend.metadata
        self._name_objects(metadata)
        objects = {o["objectId"]: o for o in metadata.get("objects") or []}
        held: list[str] = []
        near: list[str] = []
        containers: list[str] = []
        surfaces: list[str] = []
        for object_id, obj in sorted(objects.items(), key=lambda item: self.name_of(item[0])):
            name = self.name_of(object_id)
            if obj.get("isPickedUp"):
                held.append(name)
                self._seen.pop(name, None)
                continue
            if not obj.get("visible", True):
                continue  # shut inside a closed receptacle: not observed now
            parents = [p for p in obj.get("parentReceptacles") or [] if p in objects]
            if parents:
                parent = objects[parents[0]]
                self._seen[name] = ("IN" if parent.get("openable") else "ON", self.name_of(parents[0]))
            else:
                self._seen[name] = ("IN", self.room)
            if obj.get("receptacle"):
                (containers if obj.get("openable") else surfaces).append(name)
            distance = obj.get("distance")
            if isinstance(distance, (int, float)) and distance <= REACH_M:
                near.append(name)
        return Observation(objects=tuple((n, rel, p) for n, (rel, p) in sorted(self._seen.items())),
                           containers=tuple(containers), surfaces=tuple(surfaces), rooms=(self.room,),
                           holding=tuple(held), close_to=tuple(near), room=self.room)

    # ------------------------------------------------------------------ a_t
    def execute(self, call: Call) -> StepResult:
        action = ACTION_OF.get(call.name)
        if action is None:
            return StepResult(False, f"{call.name} is not a primitive")
        if call.name == "wait" or (call.name == "move" and call.args and call.args[0] == self.room):
            return self._run(ActionCall("Pass"))
        unknown = [a for a in call.args if a not in self.ids]
        if unknown:
            return StepResult(False, f"no object named {unknown[0]}")
        if call.name in ("placein", "placeon"):
            held = [o["objectId"] for o in self.backend.metadata.get("objects") or [] if o.get("isPickedUp")]
            if self.ids[call.args[0]] not in held:
                return StepResult(False, f"not holding {call.args[0]}")
            return self._run(ActionCall(action, self.ids[call.args[1]]))
        return self._run(ActionCall(action, self.ids[call.args[0]]))

    def _run(self, call: ActionCall) -> StepResult:
        outcome = run_action(self.backend, call)
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        return StepResult(outcome.success, outcome.error_message)

    def check(self, _task: TaskSpec) -> bool:
        return bool(self.goal_check(self.backend.metadata))


def _id_order(object_id: str) -> tuple[int, str]:
    match = _ID_NUMBER.match(object_id)
    return (int(match.group(1)) if match else 10**9, object_id)
