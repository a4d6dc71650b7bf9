"""The arm's inverse kinematics on the robot's own kinematic model (URDF), for robots without MoveIt.

ikpy (PyPI `ikpy`) rather than Pinocchio or mink: it builds a kinematic chain straight from a URDF
(what `/robot_description` publishes), handles revolute and prismatic joints (Fetch's torso lift,
Stretch's lift and telescoping arm) with their limits, solves position and axis targets with
scipy's optimiser, and needs nothing compiled beyond numpy and scipy. Pinocchio is the stronger
dynamics library but leaves the IK loop to the caller; mink solves on MuJoCo models, not a URDF.
A solution is accepted only when its forward kinematics lands within the profile's tolerance of
the target: an unreachable target is "no solution", never a best effort sent to the arm.
"""
from __future__ import annotations

import os
import tempfile
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from task_learning.errors import TaskLearningError

if TYPE_CHECKING:
    from task_learning.robot.profile import ArmSpec

# how far a solution's tip frame may be turned from the one asked for (a grasp still closes
# across the object at that angle)
ORIENTATION_TOLERANCE_RAD = 0.2


def _angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """The angle (rad) of the rotation taking frame `b` to frame `a` (3x3 matrices)."""
    cosine = (float(np.trace(b.T @ a)) - 1.0) / 2.0
    return float(np.arccos(min(max(cosine, -1.0), 1.0)))


class KinematicsError(TaskLearningError):
    """The URDF cannot give the profile's chain (a link or joint it names is missing)."""


def chain_path(urdf: str, root: str, tip: str) -> list[str]:
    """The URDF elements from `root` to `tip`, alternating link, joint, link, ..., as ikpy's
    `base_elements` takes them; KinematicsError naming what is missing."""
    try:
        robot = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise KinematicsError(f"robot description is not valid URDF XML: {exc}") from None
    parent_joint: dict[str, tuple[str, str]] = {}
    links = {link.get("name", "") for link in robot.iter("link")}
    for element in robot.iter("joint"):
        parent, child = element.find("parent"), element.find("child")
        if parent is not None and child is not None:
            parent_joint[child.get("link", "")] = (element.get("name", ""), parent.get("link", ""))
    for name in (root, tip):
        if name not in links:
            raise KinematicsError(f"robot description has no link {name!r}")
    path = [tip]
    link = tip
    while link != root:
        if link not in parent_joint:
            raise KinematicsError(f"link {tip!r} does not descend from {root!r} in the robot description")
        joint, link = parent_joint[link]
        path[:0] = [link, joint]
    return path


@dataclass
class ArmKinematics:
    """The chain root_link -> tip_link of a URDF; `joints` are the ones IK may move (the rest
    of the chain stays at 0, or at the positions given as the seed)."""

    chain: object
    joints: tuple[str, ...]
    tolerance_m: float

    @classmethod
    def for_arm(cls, urdf: str, arm: "ArmSpec") -> "ArmKinematics":
        """The chain a robot profile's arm names: its root and tip links, its joints, its tolerance."""
        return cls.from_urdf(urdf, arm.root_link, arm.tip_link, arm.joints, arm.tolerance_m)

    @classmethod
    def from_urdf(cls, urdf: str, root: str, tip: str, joints: Sequence[str], tolerance_m: float = 0.02) -> "ArmKinematics":
        from ikpy.chain import Chain

        path = chain_path(urdf, root, tip)
        missing = [j for j in joints if j not in path[1::2]]
        if missing:
            raise KinematicsError(f"joint(s) {', '.join(missing)} are not on the chain {root} -> {tip}")
        fd, name = tempfile.mkstemp(suffix=".urdf")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(urdf)
            with warnings.catch_warnings():  # ikpy warns about every fixed link it keeps inactive
                warnings.simplefilter("ignore")
                probe = Chain.from_urdf_file(name, base_elements=path, symbolic=False)
        finally:
            os.unlink(name)
        # ikpy goes on past the last element it is given, down the first child of each link to a
        # leaf (on a Fetch: past gripper_link into the gripper camera's frames, 6.27 cm off):
        # the chain ends at the joint into `tip` (ikpy names its links after the joints).
        names = [link.name for link in probe.links]
        if path[-2] not in names:
            raise KinematicsError(f"ikpy's chain {root} -> {tip} lacks the joint {path[-2]!r}")
        links = probe.links[: names.index(path[-2]) + 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chain = Chain(links, active_links_mask=[link.name in joints for link in links], name=f"{root}->{tip}")
        return cls(chain, tuple(joints), tolerance_m)

    def _links(self) -> list[str]:
        return [link.name for link in self.chain.links]  # type: ignore[attr-defined]

    def forward(self, positions: Sequence[float]) -> np.ndarray:
        """The tip's position in the root link for the `joints` at `positions`."""
        return self.forward_frame(positions)[:3, 3]

    def forward_frame(self, positions: Sequence[float]) -> np.ndarray:
        """The tip's 4x4 pose in the root link for the `joints` at `positions`."""
        return np.asarray(self.chain.forward_kinematics(self._full(positions)))  # type: ignore[attr-defined]

    def _full(self, positions: Sequence[float]) -> list[float]:
        by_name = dict(zip(self.joints, positions))
        return [float(by_name.get(name, 0.0)) for name in self._links()]

    def solve(self, target: Sequence[float], seed: Sequence[float] | None = None,
              axis: Sequence[float] | None = None, orientation: np.ndarray | None = None
              ) -> tuple[float, ...] | None:
        """Joint positions (in `joints` order) putting the tip at `target` (root-link frame, m),
        its x axis along `axis` when given, or its whole frame turned as the 3x3 `orientation`
        (columns: the tip's x, y, z axes in the root link); None when the best solution misses
        the position by more than the tolerance or the orientation by more than
        ORIENTATION_TOLERANCE_RAD (the target is out of reach that way)."""
        starts = [seed] if seed is not None else self._starts()
        for start in starts:
            solution = self._solve_from(target, start, axis, orientation)
            if solution is not None:
                return solution
        return None

    def _starts(self) -> list[Sequence[float]]:
        """Starting poses for a solve without a seed: all joints at 0, then the middle of their
        limits, a few fixed spreads between, then poses scattered (with a fixed seed) over the
        limits: the optimiser is local, a turned target found from one start is missed from another."""
        bounds = [self._bounds(j) for j in self.joints]
        middle = [(lo + hi) / 2 if np.isfinite(lo) and np.isfinite(hi) else 0.0 for lo, hi in bounds]
        spreads = [[m + f * ((hi - lo) / 2 if np.isfinite(hi - lo) else 1.0) for m, (lo, hi) in zip(middle, bounds)]
                   for f in (-0.4, 0.4)]
        rng = np.random.default_rng(0)  # fixed: the same target always gets the same answer
        spans = [(lo, hi) if np.isfinite(hi - lo) else (-np.pi, np.pi) for lo, hi in bounds]
        scattered = [[float(rng.uniform(lo, hi)) for lo, hi in spans] for _ in range(4)]
        return [[0.0] * len(self.joints), middle, *spreads, *scattered]

    def _bounds(self, joint: str) -> tuple[float, float]:
        low, high = self.chain.links[self._links().index(joint)].bounds  # type: ignore[attr-defined]
        return (-np.inf if low is None else float(low), np.inf if high is None else float(high))

    def _solve_from(self, target: Sequence[float], start: Sequence[float], axis: Sequence[float] | None,
                    orientation: np.ndarray | None) -> tuple[float, ...] | None:
        initial = [self._clamp(i, v) for i, v in enumerate(self._full(start))]
        kwargs: dict[str, object] = {"initial_position": initial}
        if orientation is not None:
            kwargs.update(target_orientation=np.asarray(orientation), orientation_mode="all")
        elif axis is not None:
            kwargs.update(target_orientation=list(axis), orientation_mode="X")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full = self.chain.inverse_kinematics(list(target), **kwargs)  # type: ignore[attr-defined]
        names = self._links()
        solution = tuple(float(full[names.index(j)]) for j in self.joints)
        frame = self.forward_frame(solution)
        if float(np.linalg.norm(frame[:3, 3] - np.asarray(target))) > self.tolerance_m:
            return None
        if orientation is not None and _angle_between(frame[:3, :3], np.asarray(orientation)) > ORIENTATION_TOLERANCE_RAD:
            return None
        return solution

    def _clamp(self, index: int, value: float) -> float:
        low, high = self.chain.links[index].bounds  # type: ignore[attr-defined]
        low = -np.inf if low is None else low
        high = np.inf if high is None else high
        return float(min(max(value, low), high))
