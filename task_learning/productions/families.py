"""The bootstrapped-productions paper's task families in iTHOR kitchens: instances drawn from a FloorPlan's recorded
metadata, and their goal conditions (for scoring only: the agent and the LLM never see them).

* explore <receptacle>: the receptacle has been explored.
* find a/an <object>: the robot holds one (the paper's goal: the object in view; the learned end
  condition: in the gripper).
* pick and place a/an <object> in/on a/an <receptacle>: one is in/on one, gripper empty.
* slice a/an <object>: one is sliced (a knife is needed: the world refuses otherwise).
* clear the countertops: each of the (five) objects put on the counters at set-up is elsewhere.

Set-up moves objects the way AI2-THOR's SetObjectPoses does (SymbolicWorld.place_object), seeded,
so each trial shuffles where the target is.
"""
from __future__ import annotations

import contextlib
import dataclasses
import random
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from task_learning.errors import TaskLearningError
from task_learning.productions.knowledge import GRIPPER
from task_learning.productions.world import IGNORED_RECEPTACLES, WorldAdapter, type_matches
from task_learning.world.backend import WorldBackend
from task_learning.world.factory import SYMBOLIC, WorldChoice
from task_learning.world.floorplans import canonical, floorplan_source
from task_learning.world.scene import Scene, load_scene
from task_learning.world.symbolic import SymbolicWorld

PATTERNS = {
    "explore": "explore <receptacle>",
    "find": "find a/an <object>",
    "pick_place": "pick and place a/an <object> in/on a/an <receptacle>",
    "slice": "slice a/an <object>",
    "clear": "clear the countertops",
}
_A_AN = re.compile(r"\ba/an (?=([A-Za-z]))")


def readable_task(task: str) -> str:
    """A task as a person reads it: 'slice a/an lettuce' -> 'slice a lettuce', 'find a/an apple' ->
    'find an apple'. Only for what is printed: the task text itself keeps the paper's 'a/an', which
    the production rules' patterns ('slice a/an <object>') match; a pattern is left as it is."""
    return _A_AN.sub(lambda m: "an " if m.group(1).lower() in "aeiou" else "a ", task)


CURRICULUM = ("explore", "find", "pick_place", "slice", "clear")
TEST_FAMILIES = ("find", "slice", "clear")
STORAGE_TYPES = ("Cabinet", "Drawer", "Fridge", "CounterTop", "Shelf")
FIND_TYPES = ("Apple", "Bowl", "Bread", "Cup", "Egg", "Kettle", "Knife", "Lettuce", "Mug", "Pan", "Plate",
              "Pot", "Potato", "SaltShaker", "Spatula", "Spoon", "Tomato")
SLICE_TYPES = ("Apple", "Bread", "Lettuce", "Potato", "Tomato")
PLACE_TARGETS = ("CounterTop", "Fridge", "Cabinet", "SinkBasin", "Drawer")
CLEAR_OBJECTS = 5
BACKENDS = ("symbolic", "ai2thor")  # where the families run (the AI2-THOR-speaking world backends)


class FamilyError(TaskLearningError):
    """An unknown family, or a scene that cannot host one."""


@dataclass
class Instance:
    family: str
    task: str
    scene: str
    moves: list[tuple[str, str]] = field(default_factory=list)  # object id -> receptacle id at set-up
    params: dict[str, Any] = field(default_factory=dict)
    units: int = 1  # objects the instance counts as (clear: 5)


def parse_families(text: str, allowed: tuple[str, ...] = CURRICULUM) -> list[str]:
    names = [n.strip().lower().replace("-", "_") for n in text.split(",") if n.strip()]
    aliases = {"pick_and_place": "pick_place", "place": "pick_place", "clear_countertops": "clear"}
    names = [aliases.get(n, n) for n in names]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise FamilyError(f"unknown task famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown) or '(none)'} "
                          f"(known: {', '.join(allowed)})")
    return names


def load_kitchen(floorplan: str) -> Scene:
    """A FloorPlan's recorded objects as a scene in which slicing needs a knife."""
    name = canonical(floorplan)
    if name is None:
        raise FamilyError(f"expected a FloorPlan name like FloorPlan1, got {floorplan!r}")
    scene = load_scene(floorplan_source(name))
    scene.name = name
    scene.slice_requires_knife = True
    return scene


def _storage(scene: Scene, backend: str = "symbolic") -> list[str]:
    """Where set-up may put a target. On `ai2thor` only receptacles the bridge's SetObjectPoses can
    put an object in (a free spot where the receptacle under the point is that receptacle: not
    the recorded drawers and shelves that sit within another receptacle's box)."""
    found = [o["objectId"] for o in scene.objects if o.get("objectType") in STORAGE_TYPES and not o.get("pickupable")]
    if backend == "symbolic":
        return found
    from task_learning.world.thor.geometry import free_spot

    objects: list[Mapping[str, Any]] = list(scene.objects)
    return [r for r in found if free_spot(r, objects) is not None]


def _of_type(scene: Scene, kind: str) -> list[dict[str, Any]]:
    return [o for o in scene.objects if o.get("objectType") == kind and o.get("pickupable")]


def _places(scene: Scene) -> list[dict[str, Any]]:
    """The receptacles an explore task may name."""
    return [o for o in scene.objects if o.get("receptacle") and not o.get("pickupable")
            and o.get("objectType") not in IGNORED_RECEPTACLES]


def variable_domain(family: str, scene: Scene) -> list[str]:
    """The values a family's variable takes in a scene, as the kinds `make_instance` accepts:
    explore: the receptacle types there; find and pick and place: the FIND_TYPES there; slice:
    the SLICE_TYPES there; clear (no variable): one value, ''. Bootstrapping draws each once."""
    if family == "explore":
        return sorted({str(o["objectType"]) for o in _places(scene)})
    if family in ("find", "pick_place", "slice"):
        return [k for k in (SLICE_TYPES if family == "slice" else FIND_TYPES) if _of_type(scene, k)]
    if family == "clear":
        return [""]
    raise FamilyError(f"unknown task family {family!r} (known: {', '.join(PATTERNS)})")


def make_instance(family: str, scene: Scene, rng: random.Random, *, kind: str | None = None,
                  backend: str = "symbolic") -> Instance:
    """One instance of a family in a scene (kind: the object type to use, for explore the
    receptacle type; else drawn) whose set-up the world `backend` can make."""
    storage = _storage(scene, backend)
    if family == "explore":
        types = {str(o["objectId"]): str(o["objectType"]) for o in _places(scene)}
        places = sorted(oid for oid, t in types.items() if not kind or t == kind)
        if not places:
            raise FamilyError(f"{scene.name} has no {kind or 'receptacle'} to explore")
        chosen_place = rng.choice(places)
        return Instance(family, f"explore {chosen_place}", scene.name,
                        params={"receptacle": chosen_place, "kind": types[chosen_place]})
    if family in ("find", "slice", "pick_place"):
        pool = SLICE_TYPES if family == "slice" else FIND_TYPES
        kinds = [k for k in pool if _of_type(scene, k)]
        if not kinds:
            raise FamilyError(f"{scene.name} has nothing to {family}")
        kind = kind or rng.choice(kinds)
        target = rng.choice(_of_type(scene, kind))
        moves = [(target["objectId"], rng.choice(storage))]
        if family == "find":
            return Instance(family, f"find a/an {kind.lower()}", scene.name, moves, {"kind": kind})
        if family == "slice":
            return Instance(family, f"slice a/an {kind.lower()}", scene.name, moves, {"kind": kind})
        present = {o.get("objectType") for o in scene.objects}
        place = rng.choice([p for p in PLACE_TARGETS if p in present])
        return Instance(family, f"pick and place a/an {kind.lower()} in/on a/an {place.lower()}", scene.name,
                        [(target["objectId"], rng.choice([s for s in storage if not s.startswith(place + "|")]))],
                        {"kind": kind, "place": place})
    if family == "clear":
        counters = [o["objectId"] for o in scene.objects if o.get("objectType") == "CounterTop"]
        floor = next((o["objectId"] for o in scene.objects if o.get("objectType") == "Floor"), None)
        things = sorted(o["objectId"] for o in scene.objects if o.get("pickupable"))
        chosen = rng.sample(things, min(CLEAR_OBJECTS, len(things)))
        moves = [(oid, rng.choice(counters)) for oid in chosen]
        # the other things on the counters are set aside (on the floor, which the robot ignores)
        if floor is not None:
            moves = [(o["objectId"], floor) for o in scene.objects if o.get("pickupable")
                     and o["objectId"] not in chosen
                     and any(p.startswith("CounterTop|") for p in o.get("parentReceptacles") or [])] + moves
        return Instance(family, "clear the countertops", scene.name, moves, {"objects": chosen}, units=len(chosen))
    raise FamilyError(f"unknown task family {family!r} (known: {', '.join(PATTERNS)})")


def make_world(instance: Instance, scene: Scene) -> tuple[SymbolicWorld, WorldAdapter]:
    world = SymbolicWorld(scene)
    for oid, rid in instance.moves:
        world.place_object(oid, rid)
    return world, WorldAdapter(world)


@contextlib.contextmanager
def instance_world(instance: Instance, scene: Scene,
                   where: WorldChoice = SYMBOLIC) -> Iterator[tuple[WorldBackend, WorldAdapter]]:
    """The instance's world on a backend: `symbolic` (the recorded FloorPlan in process) or
    `ai2thor` (the ai2thor Controller and the simulator its settings name, the instance's set-up
    sent as SetObjectPoses by the bridge); closed on leaving."""
    backend = where.backend
    if backend == "symbolic":
        yield make_world(instance, scene)
        return
    if backend not in BACKENDS:
        raise FamilyError(f"unknown world backend {backend!r} for the task families (known: {', '.join(BACKENDS)})")
    from task_learning.world.factory import make_backend

    world = make_backend(backend, dataclasses.replace(scene, start_moves=dict(instance.moves)),
                         ai2thor_settings=where.ai2thor)
    try:
        yield world, WorldAdapter(world)
    finally:
        close = getattr(world, "close", None)
        if callable(close):
            close()


def successes(instance: Instance, world: WorldBackend, adapter: WorldAdapter) -> int:
    """How many of the instance's units reached the goal condition (scoring only)."""
    records = {o["objectId"]: o for o in world.metadata["objects"]}
    held = {o["objectId"] for o in world.metadata.get("inventoryObjects") or []}
    p = instance.params
    if instance.family == "explore":
        return int(adapter.knowledge().receptacles.get(p["receptacle"]) is not None
                   and adapter.knowledge().receptacles[p["receptacle"]].explored)
    if instance.family == "find":
        return int(any(type_matches(records[h], p["kind"]) for h in held))
    if instance.family == "slice":
        return int(any(type_matches(r, p["kind"]) and r.get("isSliced") for r in records.values()))
    if instance.family == "pick_place":
        return int(not held and any(
            type_matches(r, p["kind"]) and any(type_matches(records.get(q, {}), p["place"])
                                               for q in r.get("parentReceptacles") or [])
            for r in records.values()))
    if instance.family == "clear":
        return sum(1 for oid in p["objects"] if oid not in held and not any(
            q.startswith("CounterTop|") for q in records[oid].get("parentReceptacles") or []))
    return 0


__all__ = ["CURRICULUM", "canonical", "GRIPPER", "Instance", "PATTERNS", "TEST_FAMILIES", "load_kitchen", "make_instance",
           "instance_world", "make_world", "parse_families", "successes", "variable_domain"]
