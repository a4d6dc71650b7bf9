"""The completion measure of the STARS paper: satisfied goal assertions / total.

One assertion per task object (it rests in/on one of the user's acceptable destinations, directly
or inside something that does) and one per closable container (it is closed). Tidy kitchen
35 + 5 = 40, store groceries 15 + 3 = 18, organize office 12 + 2 = 14.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from task_learning.world.catalog import relation_for, spoken_name
from task_learning.world.scene import Scene


@dataclass
class CompletionReport:
    """`source`: what the assertions were read from when not the world's metadata (a simulator's
    physics: "mujoco"); reported as `completion_source`."""
    satisfied: int
    total: int
    failures: list[str] = field(default_factory=list)
    source: str = ""

    @property
    def percent(self) -> float:
        return 100.0 * self.satisfied / self.total if self.total else 100.0

    def to_dict(self) -> dict[str, Any]:
        return {"satisfied": self.satisfied, "total": self.total, "percent": round(self.percent, 1),
                "failures": list(self.failures), **({"completion_source": self.source} if self.source else {})}

    def __str__(self) -> str:
        return f"{self.satisfied}/{self.total} ({self.percent:.1f} %)"


def _ancestors(object_id: str, by_id: Mapping[str, Mapping[str, Any]]) -> list[str]:
    chain: list[str] = []
    current = by_id.get(object_id)
    while current is not None:
        parents = current.get("parentReceptacles") or []
        if not parents or parents[0] in chain:
            break
        chain.extend(p for p in parents if p not in chain)
        current = by_id.get(parents[0])
    return chain


def _place_phrase(object_id: str, by_id: Mapping[str, Mapping[str, Any]]) -> str:
    record = by_id.get(object_id)
    if record is None:
        return object_id
    return f"{relation_for(record['objectType'], record)} the {spoken_name(record['objectType'])} ({object_id})"


def completion(scene: Scene, metadata: Mapping[str, Any]) -> CompletionReport:
    """Score the world described by `metadata` against the scene's preferences."""
    by_id = {o["objectId"]: o for o in metadata.get("objects") or []}
    held = {o["objectId"] for o in metadata.get("inventoryObjects") or []}
    satisfied = 0
    failures: list[str] = []
    for object_id, acceptable in scene.preferences.items():
        record = by_id.get(object_id)
        wanted = " or ".join(_place_phrase(a, by_id) for a in acceptable)
        name = f"{spoken_name(record['objectType'])} {object_id}" if record else object_id
        if record is None:
            failures.append(f"{object_id} is missing from the world; it should be {wanted}")
            continue
        if object_id in held or record.get("isPickedUp"):
            failures.append(f"the {name} is still held; it should be {wanted}")
            continue
        chain = _ancestors(object_id, by_id)
        if any(a in chain for a in acceptable):
            satisfied += 1
            continue
        where = _place_phrase(chain[0], by_id) if chain else "on the floor"
        failures.append(f"the {name} is {where}; it should be {wanted}")
    for object_id in scene.closable:
        record = by_id.get(object_id)
        if record is None:
            failures.append(f"{object_id} is missing from the world; it should be closed")
        elif record.get("isOpen"):
            failures.append(f"the {spoken_name(record['objectType'])} {object_id} is open; it should be closed")
        else:
            satisfied += 1
    return CompletionReport(satisfied=satisfied, total=scene.assertions or
                            len(scene.preferences) + len(scene.closable), failures=failures)
