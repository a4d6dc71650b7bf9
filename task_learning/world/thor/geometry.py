"""Where things are in an AI2-THOR scene, from object bounding boxes: which receptacle a point
rests in or on, a free spot on a receptacle, and where an agent can stand.

The bridge uses `free_spot` to place objects at reset (SetObjectPoses); the stand-in simulator
uses `receptacle_at` to tell where a placed object landed and `reachable_positions` to answer
GetReachablePositions. Both follow one rule, so a placement lands where it was aimed; Unity's
physics lands it on the same receptacle, a spot chosen free of everything else on it.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

Record = Mapping[str, Any]
Bounds = tuple[tuple[float, float, float], tuple[float, float, float]]

ABOVE_M = 0.35  # how far above a receptacle's box a point still rests on it
AGENT_RADIUS_M = 0.2
FLOOR_TYPES = ("Floor",)
# Things on walls or ceilings do not block the floor (their boxes start above this height); a
# surface (a counter top's slab) stands for the furniture body under it up to a higher one.
BLOCKS_BELOW_M = 1.0
SURFACE_BLOCKS_BELOW_M = 1.4


def bounds(record: Record) -> Bounds | None:
    box = record.get("axisAlignedBoundingBox")
    if not isinstance(box, Mapping) or not isinstance(box.get("center"), Mapping) \
            or not isinstance(box.get("size"), Mapping):
        return None
    c, s = box["center"], box["size"]
    lo = tuple(float(c[a]) - float(s[a]) / 2 for a in "xyz")
    hi = tuple(float(c[a]) + float(s[a]) / 2 for a in "xyz")
    return lo, hi  # type: ignore[return-value]


def _contains(b: Bounds, point: Mapping[str, float], above: float = ABOVE_M) -> bool:
    (x0, y0, z0), (x1, y1, z1) = b
    x, y, z = float(point["x"]), float(point["y"]), float(point["z"])
    return x0 < x < x1 and z0 < z < z1 and y0 - 0.05 <= y <= y1 + above


def _area(b: Bounds) -> float:
    return (b[1][0] - b[0][0]) * (b[1][2] - b[0][2])


def receptacle_at(point: Mapping[str, float], objects: Iterable[Record], exclude: str = "") -> str | None:
    """The receptacle a point rests in/on: the one with the smallest footprint whose box holds
    it (or that it is just above); None if none does."""
    best: tuple[float, str] | None = None
    for record in objects:
        if not record.get("receptacle") or record["objectId"] == exclude:
            continue
        b = bounds(record)
        if b is None or not _contains(b, point):
            continue
        if best is None or _area(b) < best[0]:
            best = (_area(b), str(record["objectId"]))
    return best[1] if best else None


def free_spot(receptacle_id: str, objects: list[Record], step: float = 0.05) -> dict[str, float] | None:
    """A point in (containers) or on (surfaces) a receptacle where `receptacle_at` finds that
    receptacle and nothing else stands: the free grid point nearest its centre."""
    by_id = {str(o["objectId"]): o for o in objects}
    record = by_id.get(receptacle_id)
    b = bounds(record) if record is not None else None
    if record is None or b is None:
        return None
    (x0, y0, z0), (x1, y1, z1) = b
    inside = bool(record.get("openable"))
    y = (y0 + y1) / 2 if inside else y1 + 0.02
    cx, cz = (x0 + x1) / 2, (z0 + z1) / 2
    others = [bounds(o) for o in objects if o["objectId"] != receptacle_id]
    candidates = []
    nx, nz = max(1, int((x1 - x0) / step)), max(1, int((z1 - z0) / step))
    for i in range(1, nx):
        for j in range(1, nz):
            candidates.append((x0 + i * (x1 - x0) / nx, z0 + j * (z1 - z0) / nz))
    candidates.append((cx, cz))
    candidates.sort(key=lambda p: math.hypot(p[0] - cx, p[1] - cz))
    for x, z in candidates:
        point = {"x": round(x, 4), "y": round(y, 4), "z": round(z, 4)}
        if receptacle_at(point, objects) != receptacle_id:
            continue
        if any(o is not None and _contains(o, point, above=0.0) for o in others):
            continue
        return point
    return None


def reachable_positions(objects: Iterable[Record], grid_size: float, y: float = 0.9) -> list[dict[str, float]]:
    """Grid points (spacing `grid_size`) on the floor where the agent's body touches no piece of
    furniture: the floor's extent, minus footprints grown by the agent's radius."""
    records = list(objects)
    boxes = [(r, bounds(r)) for r in records]
    floor = [b for r, b in boxes if b is not None and r["objectType"] in FLOOR_TYPES]
    known = [b for _, b in boxes if b is not None]
    if floor:
        (x0, _, z0), (x1, _, z1) = floor[0]
    elif known:
        x0, z0 = min(b[0][0] for b in known) - 1.0, min(b[0][2] for b in known) - 1.0
        x1, z1 = max(b[1][0] for b in known) + 1.0, max(b[1][2] for b in known) + 1.0
    else:
        xs = [float((r.get("position") or {}).get("x", 0.0)) for r in records] or [0.0]
        zs = [float((r.get("position") or {}).get("z", 0.0)) for r in records] or [0.0]
        x0, x1, z0, z1 = min(xs) - 1.5, max(xs) + 1.5, min(zs) - 1.5, max(zs) + 1.5
    blockers = []
    for record, b in boxes:
        if record["objectType"] in FLOOR_TYPES or record.get("parentReceptacles") and \
                not all(p.startswith("Floor|") for p in record["parentReceptacles"]):
            continue
        if b is None:
            if record.get("parentReceptacles"):
                continue
            p = record.get("position") or {}
            px, pz = float(p.get("x", 0.0)), float(p.get("z", 0.0))
            b = ((px - 0.4, 0.0, pz - 0.4), (px + 0.4, 0.9, pz + 0.4))
        limit = SURFACE_BLOCKS_BELOW_M if record.get("receptacle") and not record.get("openable") else BLOCKS_BELOW_M
        if b[0][1] > limit or record.get("pickupable"):
            continue
        blockers.append(((b[0][0] - AGENT_RADIUS_M, b[0][2] - AGENT_RADIUS_M),
                         (b[1][0] + AGENT_RADIUS_M, b[1][2] + AGENT_RADIUS_M)))
    points = []
    grid = max(float(grid_size), 0.05)
    i0, i1 = math.ceil((x0 + AGENT_RADIUS_M) / grid), math.floor((x1 - AGENT_RADIUS_M) / grid)
    j0, j1 = math.ceil((z0 + AGENT_RADIUS_M) / grid), math.floor((z1 - AGENT_RADIUS_M) / grid)
    for i in range(i0, i1 + 1):
        for j in range(j0, j1 + 1):
            x, z = i * grid, j * grid
            if any(a[0] < x < c[0] and a[1] < z < c[1] for a, c in blockers):
                continue
            points.append({"x": round(x, 4), "y": round(y, 4), "z": round(z, 4)})
    return points
