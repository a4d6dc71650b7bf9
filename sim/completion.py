"""The STARS completion measure computed from the physics: where the bodies are, how the doors stand.

Same assertions and report as the symbolic measure (task_learning.world.completion): one per task object
(its centre inside the place volume of one of the receptacles the user wants it in, and not
held by the fingers) and one per closable receptacle (its door or drawer closed). Read from
MuJoCo's body positions and joint values, never from anything the stack reports.
"""
from __future__ import annotations

import mujoco
import numpy as np

from task_learning.world.completion import CompletionReport
from task_learning_sim.fetch_model import FINGER_JOINTS
from task_learning_sim.scene_world import SceneWorld

SOURCE = "mujoco"


def held_items(model: mujoco.MjModel, data: mujoco.MjData) -> set[str]:
    """Ids of the bodies a finger touches (what the gripper holds or brushes)."""
    fingers = {model.joint(name).bodyid[0] for name in FINGER_JOINTS}
    held = set()
    for contact in data.contact[:data.ncon]:
        bodies = (model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2])
        for mine, other in (bodies, bodies[::-1]):
            if mine in fingers and other not in fingers:
                held.add(model.body(other).name)
    return held


def inside(world: SceneWorld, data: mujoco.MjData, item_id: str, receptacle_id: str) -> bool:
    """Whether the item's centre is inside the receptacle's place volume (in that volume's body frame)."""
    place = world.receptacles[receptacle_id].place
    frame = data.body(place.body)
    local = frame.xmat.reshape(3, 3).T @ (data.body(item_id).xpos - frame.xpos)
    return place.contains((float(local[0]), float(local[1]), float(local[2])))


def is_closed(world: SceneWorld, data: mujoco.MjData, receptacle_id: str) -> bool:
    receptacle = world.receptacles[receptacle_id]
    return not receptacle.joint or float(data.joint(receptacle.joint).qpos[0]) < receptacle.closed_below


def physics_completion(world: SceneWorld, model: mujoco.MjModel, data: mujoco.MjData) -> CompletionReport:
    held = held_items(model, data)
    satisfied, failures = 0, []
    for item_id, acceptable in world.scene.preferences.items():
        if item_id not in world.items:
            failures.append(f"{item_id} is not simulated")
        elif item_id in held:
            failures.append(f"{item_id} is still in the gripper")
        elif any(target in world.receptacles and inside(world, data, item_id, target) for target in acceptable):
            satisfied += 1
        else:
            where = np.round(data.body(item_id).xpos, 2).tolist()
            failures.append(f"{item_id} is at {where}, not in {' or '.join(acceptable)}")
    for receptacle_id in world.scene.closable:
        if receptacle_id in world.receptacles and is_closed(world, data, receptacle_id):
            satisfied += 1
        else:
            failures.append(f"{receptacle_id} is open")
    total = world.scene.assertions or len(world.scene.preferences) + len(world.scene.closable)
    return CompletionReport(satisfied, total, failures, source=SOURCE)
