"""Recorded AI2-THOR metadata written by the tests themselves, in the shipped fixtures' format
(the 42 object keys of ai2thor 5.x; see ../shared/fixtures/ai2thor/SOURCE.md): four floor plans,
one of each iTHOR room type, as a user might record them outside the project (not a test module).

- `rooms.json`: scene number -> list of objects (the format of floorplans_6scenes_objects.json),
  holding the kitchen FloorPlan7, the living room FloorPlan205 and the bedroom FloorPlan318;
- `FloorPlan412_physics_objects.json`: objectId -> object, one scene (the format of
  FloorPlan1_physics_objects.json), the bathroom.

Geometry is consistent (bounding boxes around positions, small objects resting on their
receptacle) so the stand-in simulator can navigate, place and render them.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

FLAGS = ("receptacle", "toggleable", "breakable", "canFillWithLiquid", "dirtyable", "canBeUsedUp", "cookable",
         "isHeatSource", "isColdSource", "sliceable", "openable", "pickupable", "moveable")


def object_id(kind: str, x: float, y: float, z: float) -> str:
    return f"{kind}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"


def record(kind: str, at: tuple[float, float, float], size: tuple[float, float, float], *,
           parents: list[str] | None = None, **flags: Any) -> dict[str, Any]:
    """One object as AI2-THOR records it (all 42 keys), at rest."""
    x, y, z = at
    oid = object_id(kind, x, y, z)
    out: dict[str, Any] = {
        "name": f"{kind}_{zlib.crc32(oid.encode()):08x}",
        "position": {"x": x, "y": y, "z": z}, "rotation": {"x": 0.0, "y": 0.0, "z": 0.0},
        "visible": False, "isInteractable": False, "isToggled": False, "isBroken": False,
        "isFilledWithLiquid": False, "fillLiquid": None, "isDirty": False, "isUsedUp": False, "isCooked": False,
        "temperature": "RoomTemp", "isSliced": False, "isOpen": False, "openness": 0.0, "isPickedUp": False,
        "mass": 0.2 if flags.get("pickupable") else 0.0, "salientMaterials": None, "receptacleObjectIds": [],
        "distance": 1.0, "objectType": kind, "objectId": oid, "assetId": f"{kind}_1",
        "parentReceptacles": parents, "controlledObjects": None, "isMoving": False,
        "axisAlignedBoundingBox": {"center": {"x": x, "y": y, "z": z},
                                   "size": {"x": size[0], "y": size[1], "z": size[2]}},
        "objectOrientedBoundingBox": None,
    }
    for flag in FLAGS:
        out[flag] = bool(flags.get(flag, False))
    return out


class Room:
    """Objects of one floor plan, added furniture first; `on` puts a small object on (or in) a
    receptacle added before, and keeps both containment lists in step."""

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.add("Floor", (0.0, 0.0, 0.0), (6.0, 0.02, 6.0), receptacle=True)

    def add(self, kind: str, at: tuple[float, float, float], size: tuple[float, float, float],
            **flags: Any) -> str:
        item = record(kind, at, size, parents=None, **flags)
        self.objects.append(item)
        return str(item["objectId"])

    def on(self, kind: str, holder_id: str, dx: float = 0.0, **flags: Any) -> str:
        holder = next(o for o in self.objects if o["objectId"] == holder_id)
        box = holder["axisAlignedBoundingBox"]
        inside = holder["openable"]
        top = box["center"]["y"] + (0.0 if inside else box["size"]["y"] / 2 + 0.05)
        at = (round(box["center"]["x"] + dx, 2), round(top, 2), box["center"]["z"])
        item = record(kind, at, (0.08, 0.1, 0.08), parents=[holder_id], pickupable=True, **flags)
        holder["receptacleObjectIds"].append(item["objectId"])
        self.objects.append(item)
        return str(item["objectId"])


def kitchen() -> Room:
    room = Room()
    counter = room.add("CounterTop", (1.5, 0.9, 0.0), (0.7, 0.1, 2.0), receptacle=True)
    room.add("Fridge", (-1.5, 0.9, 1.5), (0.8, 1.8, 0.8), receptacle=True, openable=True)
    room.add("Cabinet", (1.5, 1.9, -1.6), (0.6, 0.6, 0.4), receptacle=True, openable=True)
    room.add("Drawer", (1.5, 0.6, 1.2), (0.5, 0.2, 0.5), receptacle=True, openable=True)
    room.add("Sink", (-1.5, 0.9, -1.5), (0.6, 0.3, 0.6), receptacle=True)
    room.add("LightSwitch", (0.0, 1.3, -2.9), (0.1, 0.1, 0.05), toggleable=True)
    room.on("Apple", counter, -0.2, sliceable=True)
    room.on("Tomato", counter, 0.0, sliceable=True)
    room.on("Mug", counter, 0.2, receptacle=True, canFillWithLiquid=True, dirtyable=True, breakable=True)
    return room


def living_room() -> Room:
    room = Room()
    sofa = room.add("Sofa", (-1.8, 0.4, 0.0), (0.9, 0.8, 2.0), receptacle=True)
    table = room.add("CoffeeTable", (0.0, 0.3, 0.0), (1.0, 0.4, 0.6), receptacle=True)
    stand = room.add("TVStand", (2.2, 0.3, 0.0), (0.5, 0.6, 1.6), receptacle=True)
    room.on("Television", stand, 0.0, toggleable=True, breakable=True)
    room.add("ArmChair", (0.0, 0.4, 2.0), (0.9, 0.8, 0.9), receptacle=True)
    room.on("RemoteControl", sofa, 0.0, toggleable=True)
    room.on("Pillow", sofa, 0.2)
    room.on("Book", table, -0.2, openable=True)
    room.on("Newspaper", table, 0.2)
    room.on("Laptop", table, 0.0, openable=True, toggleable=True, breakable=True)
    return room


def bedroom() -> Room:
    room = Room()
    bed = room.add("Bed", (-1.5, 0.3, 0.0), (2.0, 0.6, 1.6), receptacle=True)
    desk = room.add("Desk", (1.8, 0.4, -1.5), (1.2, 0.8, 0.6), receptacle=True)
    room.add("Dresser", (1.8, 0.5, 1.5), (1.0, 1.0, 0.5), receptacle=True)
    room.add("Drawer", (1.8, 0.4, 0.8), (0.5, 0.2, 0.5), receptacle=True, openable=True)
    room.on("Pillow", bed, -0.4)
    room.on("AlarmClock", desk, -0.3)
    room.on("CellPhone", bed, 0.3, toggleable=True, breakable=True)
    room.on("KeyChain", desk, 0.3)
    room.on("Book", bed, 0.0, openable=True)
    return room


def bathroom() -> Room:
    room = Room()
    room.add("Toilet", (-1.8, 0.4, -1.8), (0.6, 0.8, 0.7), receptacle=True, openable=True)
    counter = room.add("CounterTop", (1.8, 0.8, 0.0), (0.6, 0.1, 1.4), receptacle=True)
    room.add("SinkBasin", (1.8, 0.8, -0.4), (0.4, 0.2, 0.4), receptacle=True)
    holder = room.add("TowelHolder", (0.0, 1.2, 2.8), (0.6, 0.1, 0.1), receptacle=True)
    room.on("Towel", holder)
    room.on("SoapBar", counter, 0.0)
    room.on("SprayBottle", counter, 0.2)
    room.on("ToiletPaper", counter, -0.2, canBeUsedUp=True)
    return room


ROOMS = {"7": ("kitchen", kitchen), "205": ("living room", living_room), "318": ("bedroom", bedroom)}
PLAIN = ("FloorPlan412", "bathroom", bathroom)


def write_recordings(folder: Path) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Writes rooms.json and FloorPlan412_physics_objects.json into `folder`; returns scene spec
    (as `--scene` takes it) -> (room type, the objects written)."""
    specs: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    several = {}
    for key, (kind, build) in ROOMS.items():
        several[key] = build().objects
        specs[f"{folder / 'rooms.json'}#{key}"] = (kind, several[key])
    (folder / "rooms.json").write_text(json.dumps(several, indent=1), encoding="utf-8")
    name, kind, build = PLAIN
    objects = build().objects
    plain = folder / f"{name}_physics_objects.json"
    plain.write_text(json.dumps({o["objectId"]: o for o in objects}, indent=1), encoding="utf-8")
    specs[str(plain)] = (kind, objects)
    return specs


def write_kitchen_task(folder: Path) -> Path:
    """A floor plan scene (YAML) in the recorded kitchen FloorPlan7: fruit to the fridge, the mug
    to the cabinet, the fridge to end closed."""
    objects = {o["objectType"]: o["objectId"] for o in kitchen().objects}
    scene = folder / "tidy_my_kitchen.yaml"
    scene.write_text(f"""name: tidy_my_kitchen
task: tidy kitchen
floorplan: rooms.json#7
location: kitchen
context:
  - Fruit and vegetables are kept in the fridge.
  - Clean dishes are kept in the cabinets.
subtasks:
  - name: clear the counter
    instruction: Put away an object that is on the counter.
    places: ["{objects['CounterTop']}"]
closable: ["{objects['Fridge']}"]
task_objects:
  - {{object: "{objects['Apple']}", preferred: "{objects['Fridge']}"}}
  - {{object: "{objects['Tomato']}", preferred: "{objects['Fridge']}"}}
  - {{object: "{objects['Mug']}", preferred: "{objects['Cabinet']}"}}
""", encoding="utf-8")
    return scene
