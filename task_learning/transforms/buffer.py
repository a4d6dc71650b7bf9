"""A tf buffer without tf2_ros: transforms between a robot's frames at a given time.

tf2_ros is not installable from PyPI; this is the part of it the stack needs, ROS-free (the ROS
side, nodes/plumbing/tf_listener.py, feeds it from /tf and /tf_static). As in tf2:

- every child frame keeps a time-ordered cache of its transforms to its parent, `cache_s` long
  (10 s) measured back from its newest; a static transform (/tf_static) is kept for ever and holds
  at every time;
- a lookup at a time between two samples interpolates translation linearly and rotation by slerp;
  a time outside a frame's samples is refused (no extrapolation), naming the frames, the requested
  time and the range the buffer has;
- a lookup at time 0 means the latest time every frame on the path has data for;
- a lookup walks the tree from both frames to their common ancestor.

Times are integer nanoseconds (ROS time: the node clock, sim time under use_sim_time). The rigid
transform maths is scipy's (`RigidTransform`, `Rotation`, `Slerp`).
"""
from __future__ import annotations

import bisect
import math
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.spatial.transform import RigidTransform, Rotation, Slerp

from task_learning.errors import TaskLearningError

NS_PER_S = 1_000_000_000
DEFAULT_CACHE_S = 10.0
MAX_TREE_DEPTH = 100  # a longer walk up the tree is a loop in the published parents


class TransformUnavailable(TaskLearningError):
    """A lookup the buffer cannot answer; the message is one line naming frames and times."""


def seconds(stamp_ns: int) -> str:
    return f"{stamp_ns / NS_PER_S:.3f} s"


@dataclass(frozen=True)
class StampedTransform:
    """`transform` maps points in `child` to `parent` (tf2's lookupTransform(parent, child))."""

    parent: str
    child: str
    stamp_ns: int
    transform: RigidTransform

    @property
    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous matrix T_parent_child."""
        return np.asarray(self.transform.as_matrix(), dtype=float)

    @property
    def translation(self) -> tuple[float, float, float]:
        x, y, z = (float(v) for v in self.transform.translation)
        return (x, y, z)

    @property
    def quaternion(self) -> tuple[float, float, float, float]:
        """(x, y, z, w), as in geometry_msgs/Quaternion."""
        x, y, z, w = (float(v) for v in self.transform.rotation.as_quat())
        return (x, y, z, w)


@dataclass(frozen=True)
class _Sample:
    stamp_ns: int
    parent: str
    translation: np.ndarray
    rotation: Rotation


class FrameCache:
    """The samples of one child frame, oldest first; the parent may differ between samples."""

    def __init__(self, child: str, cache_ns: int, static: bool) -> None:
        self.child = child
        self.cache_ns = cache_ns
        self.static = static
        self._stamps: list[int] = []
        self._samples: list[_Sample] = []

    def insert(self, sample: _Sample) -> None:
        if self.static:
            self._stamps, self._samples = [sample.stamp_ns], [sample]
            return
        at = bisect.bisect_left(self._stamps, sample.stamp_ns)
        if at < len(self._stamps) and self._stamps[at] == sample.stamp_ns:
            self._samples[at] = sample  # a re-sent stamp replaces the sample
        else:
            self._stamps.insert(at, sample.stamp_ns)
            self._samples.insert(at, sample)
        cut = bisect.bisect_left(self._stamps, self._stamps[-1] - self.cache_ns)
        if cut:
            del self._stamps[:cut], self._samples[:cut]

    @property
    def oldest_ns(self) -> int:
        return self._stamps[0]

    @property
    def newest_ns(self) -> int:
        return self._stamps[-1]

    def latest_parent(self) -> str:
        return self._samples[-1].parent

    def span(self) -> str:
        if self.static:
            return f"'{self.child}' is static"
        return (f"'{self.child}' (parent '{self.latest_parent()}') has transforms from "
                f"{seconds(self.oldest_ns)} to {seconds(self.newest_ns)}")

    def at(self, stamp_ns: int) -> tuple[str, RigidTransform]:
        """(parent, T_parent_child) at `stamp_ns`; ExtrapolationError outside the samples."""
        if self.static:
            sample = self._samples[-1]
            return sample.parent, RigidTransform.from_components(sample.translation, sample.rotation)
        if stamp_ns > self.newest_ns or stamp_ns < self.oldest_ns:
            direction = "future" if stamp_ns > self.newest_ns else "past"
            raise _Extrapolation(direction, self)
        at = bisect.bisect_left(self._stamps, stamp_ns)
        after = self._samples[at]
        if after.stamp_ns == stamp_ns:
            return after.parent, RigidTransform.from_components(after.translation, after.rotation)
        before = self._samples[at - 1]
        if before.parent != after.parent:  # re-parented between the two: the older holds (tf2 does so)
            return before.parent, RigidTransform.from_components(before.translation, before.rotation)
        alpha = (stamp_ns - before.stamp_ns) / (after.stamp_ns - before.stamp_ns)
        translation = (1.0 - alpha) * before.translation + alpha * after.translation
        rotations = Rotation.concatenate([before.rotation, after.rotation])
        rotation = Slerp([0.0, 1.0], rotations)([alpha])[0]
        return before.parent, RigidTransform.from_components(translation, rotation)


class _Extrapolation(Exception):
    def __init__(self, direction: str, cache: FrameCache) -> None:
        super().__init__(direction)
        self.direction = direction
        self.cache = cache


def _frame_name(name: str) -> str:
    """tf2 strips a leading slash; an empty name is refused."""
    stripped = name.strip().lstrip("/")
    if not stripped:
        raise ValueError(f"empty frame name {name!r}")
    return stripped


class TransformBuffer:
    """Thread-safe: a subscription feeds it in one thread while perception looks up in another."""

    def __init__(self, cache_s: float = DEFAULT_CACHE_S) -> None:
        if not cache_s > 0:
            raise ValueError(f"cache_s must be positive, got {cache_s}")
        self.cache_ns = int(cache_s * NS_PER_S)
        self._frames: dict[str, FrameCache] = {}
        self._lock = threading.Lock()

    def set_transform(self, parent: str, child: str, stamp_ns: int, translation: Sequence[float],
                      rotation_xyzw: Sequence[float], *, static: bool = False) -> None:
        """Add T_parent_child at `stamp_ns` (ValueError naming the problem for a bad one: empty or
        equal frame names, a non-finite number, a zero quaternion)."""
        parent, child = _frame_name(parent), _frame_name(child)
        if parent == child:
            raise ValueError(f"transform from '{child}' to itself")
        values = [float(v) for v in (*translation, *rotation_xyzw)]
        if len(values) != 7 or not all(math.isfinite(v) for v in values):
            raise ValueError(f"transform {parent} -> {child}: translation and quaternion must be 7 finite numbers")
        quaternion = np.asarray(values[3:])
        if np.linalg.norm(quaternion) < 1e-9:
            raise ValueError(f"transform {parent} -> {child}: quaternion of zero length")
        sample = _Sample(int(stamp_ns), parent, np.asarray(values[:3]), Rotation.from_quat(quaternion))
        with self._lock:
            cache = self._frames.get(child)
            if cache is None or cache.static != static:
                cache = self._frames[child] = FrameCache(child, self.cache_ns, static)
            cache.insert(sample)

    def frames(self) -> list[str]:
        """Every frame the buffer knows, children and parents."""
        with self._lock:
            return self._known()

    def can_transform(self, target: str, source: str, stamp_ns: int = 0) -> str:
        """'' when lookup would succeed, else its reason."""
        try:
            self.lookup(target, source, stamp_ns)
        except TransformUnavailable as exc:
            return str(exc)
        return ""

    def lookup(self, target: str, source: str, stamp_ns: int = 0) -> StampedTransform:
        """T_target_source at `stamp_ns` (0: the latest common time); TransformUnavailable with
        the reason otherwise."""
        target, source = _frame_name(target), _frame_name(source)
        with self._lock:
            what = f"lookup {target} -> {source}"
            for frame in (target, source):
                if frame not in self._frames and not self._is_parent(frame):
                    raise TransformUnavailable(f"{what}: frame '{frame}' does not exist "
                                               f"(known: {', '.join(self._known()) or 'none'})")
            if target == source:
                return StampedTransform(target, source, stamp_ns, RigidTransform.identity())
            ancestor = self._common_ancestor(target, source, what)
            when = self._latest_common_ns(target, source, ancestor, what) if stamp_ns == 0 else stamp_ns
            try:
                T_ancestor_source = self._walk_up(source, ancestor, when, what)
                T_ancestor_target = self._walk_up(target, ancestor, when, what)
            except _Extrapolation as exc:
                raise TransformUnavailable(f"{what} at {seconds(when)}: extrapolation into the "
                                           f"{exc.direction}: {exc.cache.span()}") from None
            return StampedTransform(target, source, when, T_ancestor_target.inv() * T_ancestor_source)

    # -- the tree -------------------------------------------------------------------------------

    def _known(self) -> list[str]:
        names = set(self._frames)
        names.update(cache.latest_parent() for cache in self._frames.values())
        return sorted(names)

    def _is_parent(self, frame: str) -> bool:
        return any(cache.latest_parent() == frame for cache in self._frames.values())

    def _chain(self, frame: str) -> list[str]:
        """`frame` and its ancestors up to the root, along each frame's newest parent."""
        chain = [frame]
        while chain[-1] in self._frames:
            parent = self._frames[chain[-1]].latest_parent()
            if parent in chain or len(chain) > MAX_TREE_DEPTH:
                raise TransformUnavailable(f"the tree has a loop at '{parent}'")
            chain.append(parent)
        return chain

    def _common_ancestor(self, target: str, source: str, what: str) -> str:
        up_source = self._chain(source)
        up_target = self._chain(target)
        for frame in up_target:
            if frame in up_source:
                return frame
        raise TransformUnavailable(f"{what}: the frames are not connected ('{source}' leads to "
                                   f"'{up_source[-1]}', '{target}' to '{up_target[-1]}')")

    def _walk_up(self, frame: str, ancestor: str, stamp_ns: int, what: str) -> RigidTransform:
        """T_ancestor_frame at `stamp_ns`, composed along the parents the samples name."""
        T_current_frame = RigidTransform.identity()
        current, steps = frame, 0
        while current != ancestor:
            if current not in self._frames or steps > MAX_TREE_DEPTH:
                raise TransformUnavailable(f"{what} at {seconds(stamp_ns)}: '{frame}' does not lead to "
                                           f"'{ancestor}' at that time")
            parent, T_parent_current = self._frames[current].at(stamp_ns)
            T_current_frame = T_parent_current * T_current_frame
            current, steps = parent, steps + 1
        return T_current_frame

    def _caches_below(self, frame: str, ancestor: str) -> list[FrameCache]:
        chain = self._chain(frame)
        return [self._frames[name] for name in chain[: chain.index(ancestor)]]

    def _latest_common_ns(self, target: str, source: str, ancestor: str, what: str) -> int:
        """The newest time every non-static frame between the two has data for (tf2's time 0);
        0 when every frame on the path is static."""
        moving = [c for c in self._caches_below(target, ancestor) + self._caches_below(source, ancestor)
                  if not c.static]
        if not moving:
            return 0
        newest = min(c.newest_ns for c in moving)
        oldest = max(c.oldest_ns for c in moving)
        if newest < oldest:
            spans = "; ".join(c.span() for c in moving)
            raise TransformUnavailable(f"{what} at the latest common time: no time all frames have data for ({spans})")
        return newest
