"""The simulator's documented assists: what physics alone does not yet make reliable, done for the
robot where a real robot's gripper would do it, each counted by name (`counts`, in `sim/status`'s
`assists`) and listed in docs/sim.md "What is assisted".

- `grasp_weld` (optional, off unless asked for): when a gripper close ends with both fingers
  touching an object, the object is welded to gripper_link where it is; the weld ends when the
  gripper is commanded to open. A friction grasp is what runs without it.
- `door_handle`: when a gripper close ends with gripper_link within HANDLE_REACH_M of a door's or
  drawer's handle, the gripper holds it: while held, a closed door turns (a drawer slides) so that
  the handle follows the gripper's pull; when the gripper opens after moving MOVED_M or more, a
  closed door is driven fully open (a drawer stays as far out as it was pulled), an open door or
  drawer fully closed.
  The joint is set kinematically (its panel does not collide with the robot: sim/furniture.py);
  the handle does not collide while held or driven, nor until the hand is HANDLE_CLEAR_M away.
  A driven door or drawer then stays where it was driven (a hold-open stay) until the hand holds
  its handle again: an object carried past an open door does not push it closed.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import mujoco
import numpy as np

from task_learning_sim.fetch_model import FINGER_JOINTS
from task_learning_sim.furniture import Receptacle

HANDLE_REACH_M = 0.05
HANDLE_CLEAR_M = 0.25
MOVED_M = 0.03
DOOR_OPEN_RAD = 1.75
DRIVE_RAD_S = 1.0
DRIVE_M_S = 0.25
GRIPPER = "gripper_link"


@dataclass
class HandleHold:
    receptacle: Receptacle
    grip_start: np.ndarray
    joint_start: float
    radius: float  # hinge to handle, m (a door)
    normal: np.ndarray  # the piece's front, out of it (world)


def add_grasp_welds(spec: mujoco.MjSpec, items: list[str]) -> None:
    """One inactive weld per object between gripper_link and it (before compiling)."""
    for item in items:
        spec.add_equality(name=f"{item}/grasp", type=mujoco.mjtEq.mjEQ_WELD, objtype=mujoco.mjtObj.mjOBJ_BODY,
                          name1=GRIPPER, name2=item, active=False)


class Assists:
    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, receptacles: dict[str, Receptacle],
                 items: list[str], *, grasp_weld: bool) -> None:
        self.model, self.data = model, data
        self.closable = [r for r in receptacles.values() if r.joint]
        self.items = items
        self.grasp_weld = grasp_weld
        self.counts: Counter[str] = Counter()
        self.hold: HandleHold | None = None
        self.welded = ""
        self.drives: dict[str, float] = {}  # joint -> target
        # joint -> where a drive left it: it stays there (a door's hold-open stay) until the hand
        # holds its handle again, and what the robot carries does not push it closed meanwhile
        self.stays: dict[str, float] = {}
        self.untouchable: set[str] = set()  # pieces whose handle stays soft until the hand is away
        self._fingers = {model.joint(j).bodyid[0] for j in FINGER_JOINTS}

    def gripper_closed(self) -> None:
        """A gripper close ended: hold a handle within reach, or weld an object both fingers touch."""
        grip = self.data.body(GRIPPER).xpos.copy()
        for receptacle in self.closable:
            handle = self.data.geom(f"{receptacle.id}/handle").xpos
            if float(np.linalg.norm(handle - grip)) <= HANDLE_REACH_M:
                self._hold(receptacle, grip)
                return
        if self.grasp_weld:
            item = self._pinched()
            if item:
                self._weld(item)

    def gripper_opening(self) -> None:
        """The gripper is commanded open: the weld ends; a held door or drawer that moved with
        the gripper is driven the rest of the way."""
        if self.welded:
            self.data.eq_active[self.model.equality(f"{self.welded}/grasp").id] = 0
            self.welded = ""
        hold, self.hold = self.hold, None
        if hold is None:
            return
        moved = float(np.linalg.norm(self.data.body(GRIPPER).xpos - hold.grip_start))
        receptacle = hold.receptacle
        if moved < MOVED_M:
            self.untouchable.add(receptacle.id)
        else:
            was_closed = hold.joint_start < receptacle.closed_below
            # a door swings on fully open (away from the hand); a drawer stays as far out as the
            # hand pulled it (driven further, it would push its handle into the hand)
            opened = DOOR_OPEN_RAD if receptacle.form == "cabinet" else float(self.data.joint(receptacle.joint).qpos[0])
            self.drives[receptacle.joint] = opened if was_closed else 0.0

    def tick(self, dt: float) -> None:
        if self.hold is not None and self.hold.joint_start < self.hold.receptacle.closed_below:
            self._follow(self.hold)
        for joint, target in list(self.drives.items()):
            rate = DRIVE_RAD_S if self.model.joint(joint).type == mujoco.mjtJoint.mjJNT_HINGE else DRIVE_M_S
            value = float(self.data.joint(joint).qpos[0])
            step = max(-rate * dt, min(rate * dt, target - value))
            self._set(joint, value + step)
            if abs(target - value - step) < 1e-6:
                del self.drives[joint]
                self.stays[joint] = target
                self.untouchable.add(next(r.id for r in self.closable if r.joint == joint))
        for joint, target in self.stays.items():
            self._set(joint, target)
        grip = self.data.body(GRIPPER).xpos
        for receptacle in [r for r in self.closable if r.id in self.untouchable]:
            if float(np.linalg.norm(self.data.geom(f"{receptacle.id}/handle").xpos - grip)) > HANDLE_CLEAR_M:
                self.untouchable.discard(receptacle.id)  # the hand is away: the handle is solid again
                self._handle_collides(receptacle, True)

    # ---- internals -----------------------------------------------------------------------------
    def _handle_collides(self, receptacle: Receptacle, collides: bool) -> None:
        """A held or driven handle moves with the gripper or on its own: it does not push the
        fingers around meanwhile."""
        geom = self.model.geom(f"{receptacle.id}/handle")
        geom.contype[0] = geom.conaffinity[0] = 1 if collides else 0

    def _hold(self, receptacle: Receptacle, grip: np.ndarray) -> None:
        self.counts["door_handle"] += 1
        self._handle_collides(receptacle, False)
        joint = self.data.joint(receptacle.joint)
        anchor = self.data.xanchor[self.model.joint(receptacle.joint).id]
        handle = self.data.geom(f"{receptacle.id}/handle").xpos
        yaw = receptacle.pose[2]
        self.drives.pop(receptacle.joint, None)
        self.stays.pop(receptacle.joint, None)
        self.hold = HandleHold(receptacle, grip.copy(), float(joint.qpos[0]),
                               float(np.linalg.norm((handle - anchor)[:2])),
                               np.array([math.cos(yaw), math.sin(yaw), 0.0]))

    def _follow(self, hold: HandleHold) -> None:
        """The closed door (drawer) opened as far as the gripper pulled its handle out."""
        pulled = float((self.data.body(GRIPPER).xpos - hold.grip_start) @ hold.normal)
        joint = hold.receptacle.joint
        if hold.receptacle.form == "cabinet":
            value = math.asin(min(max(pulled / hold.radius, 0.0), 1.0))
        else:
            value = max(pulled, 0.0)
        self._set(joint, max(hold.joint_start, value))

    def _set(self, joint: str, value: float) -> None:
        low, high = self.model.joint(joint).range
        self.data.joint(joint).qpos[0] = min(max(value, low), high)
        self.data.joint(joint).qvel[0] = 0.0

    def _pinched(self) -> str:
        touching: dict[str, set[int]] = {}
        for contact in self.data.contact[:self.data.ncon]:
            a, b = int(self.model.geom_bodyid[contact.geom1]), int(self.model.geom_bodyid[contact.geom2])
            for mine, other in ((a, b), (b, a)):
                if mine in self._fingers:
                    touching.setdefault(self.model.body(other).name, set()).add(mine)
        return next((name for name, fingers in touching.items() if name in self.items and len(fingers) == 2), "")

    def _weld(self, item: str) -> None:
        """Weld `item` to the gripper at their present relative pose."""
        grip, body = self.data.body(GRIPPER), self.data.body(item)
        rel_pos = grip.xmat.reshape(3, 3).T @ (body.xpos - grip.xpos)
        rel_quat = np.zeros(4)
        conj = np.array([grip.xquat[0], -grip.xquat[1], -grip.xquat[2], -grip.xquat[3]])
        mujoco.mju_mulQuat(rel_quat, conj, body.xquat)
        eq = self.model.equality(f"{item}/grasp")
        eq.data[:3] = 0.0
        eq.data[3:6] = rel_pos
        eq.data[6:10] = rel_quat
        eq.data[10] = 1.0
        self.data.eq_active[eq.id] = 1
        self.welded = item
        self.counts["grasp_weld"] += 1
