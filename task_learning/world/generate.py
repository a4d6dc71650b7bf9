"""Generated scenes of any size, for benchmarks and stress tests (not from the paper).

Furniture of the kitchen and office catalogue types stands on a ring; N pickupable objects are
spread over the furniture by a seeded random generator, each with one preferred destination, so
the completion measure and every world action work on them like on the paper's scenes.
"""
from __future__ import annotations

import random
from typing import Any

from task_learning.world.catalog import load_object_types
from task_learning.world.scene import Scene, scene_from_dict

_FURNITURE = ("DiningTable", "CounterTop", "DishRack", "GarbageCan", "RecyclingBin", "Pantry",
              "Cupboard", "Fridge", "Dishwasher", "Drawer", "Sink", "Desk", "FilingCabinet", "Bookshelf")


def generate_scene(n_objects: int = 500, *, n_furniture: int = 20, seed: int = 0,
                   name: str | None = None, learnable: bool = False) -> Scene:
    """A scene with `n_furniture` furniture objects and `n_objects` pickupable objects.

    By default each object gets its own random destination, one piece of furniture: fine for
    timing the world and the completion measure, but not a task a learner of goals per object
    type can finish once there are several objects of a type or several pieces of one kind of
    furniture ("in the fridge" cannot say which of two fridges in one room). `learnable` draws
    one kind of furniture per object type instead, and any piece of that kind will do, which is
    what a household's habits look like and what the STARS paper's scenes are."""
    if n_objects < 0 or n_furniture < 1:
        raise ValueError("need n_objects >= 0 and n_furniture >= 1")
    rng = random.Random(seed)
    types = load_object_types()
    small = sorted(t.name for t in types.values()
                   if t.flag("pickupable") and not t.flag("receptacle") and not t.sliced_type)
    counters: dict[str, int] = {}

    def next_id(type_name: str) -> str:
        counters[type_name] = counters.get(type_name, 0) + 1
        return f"{type_name}|{counters[type_name]}"

    furniture = []
    for i in range(n_furniture):
        type_name = _FURNITURE[i % len(_FURNITURE)]
        furniture.append({"type": type_name, "id": next_id(type_name)})
    open_places = [f["id"] for f in furniture]
    kinds = sorted({f["type"] for f in furniture})
    habit: dict[str, str] = {}  # learnable: object type -> the kind of furniture it belongs in
    objects: list[dict[str, Any]] = []
    for _ in range(n_objects):
        type_name = rng.choice(small)
        if learnable and len(kinds) > 1:
            kind = habit.setdefault(type_name, rng.choice(kinds))
            goal: Any = [f["id"] for f in furniture if f["type"] == kind]
            start = rng.choice([f["id"] for f in furniture if f["type"] != kind])
        else:
            start, goal = rng.sample(open_places, 2) if len(open_places) > 1 else (open_places[0],) * 2
        objects.append({"type": type_name, "id": next_id(type_name), "at": start, "preferred": goal})
    closable = [f["id"] for f in furniture if types[f["type"]].flag("openable")]
    data: dict[str, Any] = {
        "name": name or f"generated_{n_objects}",
        "task": "tidy up",
        "location": "house",
        "objects": furniture + objects,
        "closable": closable,
        "subtasks": [{"name": "tidy", "instruction": "Tidy an object that is out of place.",
                      "places": [f["id"] for f in furniture if not types[f["type"]].flag("openable")]}],
    }
    return scene_from_dict(data, source=f"<generated n={n_objects} seed={seed}>", default_name=data["name"])
