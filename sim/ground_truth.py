"""The world's ground truth as plain data, published on `sim/ground_truth` for tests, the skills
check (scripts/sim_skills_check.py) and a run's diagnosis log (`truth.jsonl`, written by
`task-learning run --backend mujoco` beside the belief, for a reader): where every object is and
how tall, where each receptacle's place volume, handle and door stand, where the base is. A robot
has no such topic: no node of the stack reads it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from task_learning_sim.completion import held_items, inside, is_closed
from task_learning_sim.simulator import Simulator


def _r(values: Any) -> list[float]:
    return [round(float(v), 4) for v in values]


def _object(sim: Simulator, item_id: str) -> dict[str, Any]:
    geom = sim.data.geom(item_id)
    half_z = float(np.abs(geom.xmat.reshape(3, 3)[2]) @ _half_extent(sim, item_id))
    centre = sim.data.body(item_id).xpos
    return {"position": _r(centre), "top": round(float(centre[2]) + half_z, 4),
            "bottom": round(float(centre[2]) - half_z, 4), "narrow_yaw": _narrow_yaw(sim, item_id),
            "narrow_width": round(_narrow_width(sim, item_id), 4), "long_width": round(_long_width(sim, item_id), 4)}


def _narrow_width(sim: Simulator, item_id: str) -> float:
    """The object's extent across its narrowest level side (a cylinder's diameter)."""
    axes = sim.data.geom(item_id).xmat.reshape(3, 3)
    half = _half_extent(sim, item_id)
    level = [i for i in range(3) if abs(axes[2, i]) < 0.5] or [0, 1]
    return 2 * float(min(half[i] for i in level))


def _long_width(sim: Simulator, item_id: str) -> float:
    """The object's extent along its longest level side (a standing cylinder's diameter)."""
    axes = sim.data.geom(item_id).xmat.reshape(3, 3)
    half = _half_extent(sim, item_id)
    level = [i for i in range(3) if abs(axes[2, i]) < 0.5] or [0, 1]
    return 2 * float(max(half[i] for i in level))


def _narrow_yaw(sim: Simulator, item_id: str) -> float | None:
    """The heading of the object's narrowest horizontal side (a box's local axis that lies
    level and is shortest), None for a cylinder (round: any heading) or a box on a corner."""
    if int(sim.model.geom(item_id).type[0]) == 5:
        return None
    axes = sim.data.geom(item_id).xmat.reshape(3, 3)
    half = _half_extent(sim, item_id)
    level = [i for i in range(3) if abs(axes[2, i]) < 0.5]
    if not level:
        return None
    narrow = min(level, key=lambda i: half[i])
    return round(float(np.arctan2(axes[1, narrow], axes[0, narrow])), 4)


def _half_extent(sim: Simulator, item_id: str) -> np.ndarray:
    size = sim.model.geom(item_id).size
    if int(sim.model.geom(item_id).type[0]) == 5:  # cylinder: radius, half height
        return np.array([size[0], size[0], size[1]])
    return np.asarray(size[:3])


def _receptacle(sim: Simulator, receptacle_id: str) -> dict[str, Any]:
    receptacle = sim.world.receptacles[receptacle_id]
    place = receptacle.place
    frame = sim.data.body(place.body)
    rotation = frame.xmat.reshape(3, 3)
    low, high = np.array(place.low), np.array(place.high)
    centre = frame.xpos + rotation @ ((low + high) / 2)
    out: dict[str, Any] = {
        "form": receptacle.form, "yaw": round(receptacle.pose[2], 4),
        "place": {"centre": _r(centre[:2]), "floor": round(float(frame.xpos[2] + low[2]), 4),
                  "top": round(float(frame.xpos[2] + high[2]), 4), "half": _r((high - low)[:2] / 2)},
        "rim": round(_rim(sim, receptacle_id), 4),
        "front": _r(np.array(receptacle.pose[:2]) + receptacle.depth / 2 * np.array(
            [np.cos(receptacle.pose[2]), np.sin(receptacle.pose[2])])),
    }
    if receptacle.joint:
        out["handle"] = _r(sim.data.geom(f"{receptacle_id}/handle").xpos)
        out["joint"] = round(float(sim.data.joint(receptacle.joint).qpos[0]), 4)
        out["closed"] = is_closed(sim.world, sim.data, receptacle_id)
    return out


def _rim(sim: Simulator, receptacle_id: str) -> float:
    """The height of the piece's highest point (its geoms are level boxes): what a level
    approach must pass over."""
    body = sim.model.body(receptacle_id)
    first, count = int(body.geomadr[0]), int(body.geomnum[0])
    return max(float(sim.data.geom_xpos[g][2] + sim.model.geom_size[g][2]) for g in range(first, first + count))


def ground_truth(sim: Simulator) -> dict[str, Any]:
    """The snapshot (call with the simulator's lock held)."""
    objects = {item: _object(sim, item) for item in sim.world.items}
    for item, record in objects.items():
        record["in"] = next((r for r in sim.world.receptacles if inside(sim.world, sim.data, item, r)), "")
    return {"sim_time_s": round(sim.time, 3), "base": _r(sim.base_pose()),
            "held": sorted(held_items(sim.model, sim.data) & set(sim.world.items)),
            "objects": objects,
            "receptacles": {r: _receptacle(sim, r) for r in sim.world.receptacles}}
