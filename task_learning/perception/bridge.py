"""`FetchWorld`: the WorldBackend of a robot with an RGB-D head camera and a skill server.

Frames come in (from ROS topics, a bag, or the synthetic robot) through `process`; the belief
world state goes out as AI2-THOR metadata (`metadata`); actions go to the skill server through a
`SkillClient` (`step`). Thread-safe: a node feeds frames from one thread while a service callback
runs an action in another.

What keeps it safe and honest:
- a frame set that fails its checks (no camera info, sizes that differ, older than `max_age_s`,
  no camera pose) is not used, and the reason is the world state's `perceptionStatus`; so is an
  unregistered marker id, and the age of the newest frame when frames stop;
- actions are refused (acting blind is not an option), with the reason as the failed action's
  message, before any frame was used, while frame sets are refused for a lasting problem, and
  when no frame was used for `block_after_s`;
- a skill server that is down or times out is a failed action with that reason, never a success;
- after a successful skill the action returns only once a frame taken after it was processed
  (or `frame_timeout_s` passed, which the status says), so the next decision sees its effect.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping

import numpy as np

from task_learning.perception.belief import BeliefWorld
from task_learning.perception.detect import Detections, MarkerDetector
from task_learning.perception.frames import RGBDFrame, check_frame
from task_learning.perception.objects import LocatedObjects, ObjectDetector, locate
from task_learning.perception.registry import MarkerRegistry
from task_learning.perception.skills import ACTION_TO_SKILL, SkillClient, SkillRequest, SkillResult
from task_learning.world.catalog import ObjectType, load_object_types
from task_learning.world.scene import Scene

log = logging.getLogger(__name__)


class FetchWorld:
    name = "fetch"
    # metadata and status may be read while `step` runs in another thread (a skill takes up to a
    # minute): the perception node keeps publishing world_state meanwhile
    concurrent_reads = True

    def __init__(self, registry: MarkerRegistry, skills: SkillClient | None, *, scene: Scene | None = None,
                 types: Mapping[str, ObjectType] | None = None, max_age_s: float = 1.0,
                 frame_timeout_s: float = 5.0, half_life_s: float = 120.0, block_after_s: float = 5.0,
                 clock: Callable[[], float], detector: MarkerDetector | None = None,
                 frame_id: str = "map", object_detector: ObjectDetector | None = None,
                 min_object_score: float = 0.5) -> None:
        """`clock` is the time frames are stamped in, in seconds: the node clock on a robot (sim
        time under use_sim_time), the bag's time in a replay; ages, staleness and confidence use
        it. `frame_id` names the world frame (REP-103 `map`) the published poses are in.
        `object_detector`: a learned detector run beside the markers on every used frame; its
        boxes placed in 3D with depth are `last_located` (markers stay what makes the world)."""
        catalogue = dict(load_object_types())
        if scene is not None:
            catalogue.update(scene.types)
        catalogue.update(types or {})
        self.registry = registry
        self.skills = skills
        self.scene = scene
        self.max_age_s = max_age_s
        self.frame_timeout_s = frame_timeout_s
        self.block_after_s = block_after_s
        self.clock = clock
        self.detector = detector or MarkerDetector(registry)
        self.object_detector = object_detector
        self.min_object_score = min_object_score
        self.last_located: LocatedObjects | None = None
        self.belief = BeliefWorld(registry, catalogue, scene_name=scene.name if scene else "",
                                  location=scene.location if scene else "", half_life_s=half_life_s)
        self.belief.frame_id = frame_id
        self.frames = 0
        self.last_frame_stamp = 0.0
        self.last_detections = Detections()
        self._frame_status = "no frames received yet"
        self._lasting = True
        self._skill_status = ""
        self._cond = threading.Condition()
        self._cache: tuple[tuple[int, str, int], dict[str, Any]] | None = None

    # -- perception -----------------------------------------------------------------------------

    def process(self, frame: RGBDFrame, *, T_world_base: np.ndarray | None = None) -> str:
        """Use one frame set; returns '' or why it was not used (also the world's status)."""
        problem = check_frame(frame, now=self.clock(), max_age_s=self.max_age_s)
        if problem:
            with self._cond:
                self._frame_status = problem
                self._lasting = not problem.startswith("stale")  # a late frame under load passes
                self._cond.notify_all()
            return problem
        detections = self.detector.detect(frame)
        located = (locate(self.object_detector.detect(frame.color), frame, min_score=self.min_object_score)
                   if self.object_detector is not None else None)
        assert frame.T_world_camera is not None
        with self._cond:
            self.belief.update(detections, frame.T_world_camera, frame.stamp, frame.depth, frame.camera,
                               T_world_base)
            self.last_detections = detections
            self.last_located = located
            self.frames += 1
            self.last_frame_stamp = frame.stamp
            unregistered = sorted(set(detections.unregistered))
            self._frame_status = (f"unregistered marker id(s) {', '.join(map(str, unregistered))} ignored "
                                  f"(add them to the registry {self.registry.source})" if unregistered else "")
            self._lasting = False
            self._cond.notify_all()
        for reason in detections.rejected:
            log.debug("rejected %s", reason)
        return ""

    def report_problem(self, problem: str, lasting: bool = True) -> None:
        """A problem found before a frame set could be assembled (e.g. by the ROS glue); a
        lasting one (no camera info, unusable images) stops actions until a good frame."""
        with self._cond:
            self._frame_status = problem
            self._lasting = lasting

    def status(self) -> str:
        """'' when healthy, else one line (the most pressing problem first)."""
        with self._cond:
            parts = []
            if self._frame_status:
                parts.append(self._frame_status)
            elif self.frames and self.max_age_s > 0 and self.clock() - self.last_frame_stamp > self.max_age_s:
                parts.append(f"stale frames: the newest is {self.clock() - self.last_frame_stamp:.1f} s old "
                             f"(limit {self.max_age_s:g} s)")
            if self._skill_status:
                parts.append(self._skill_status)
            return "; ".join(parts)

    def perception_ok(self) -> tuple[bool, str]:
        """Whether the robot may act: it has used a frame within `block_after_s` and the latest
        frame set was not refused for a problem that will not go away by itself (no camera info,
        sizes that differ, no pose). A late frame now and then under load does not stop it."""
        status = self.status()
        with self._cond:
            if not self.frames:
                return False, status or "no frames used yet"
            if self._frame_status and self._lasting:
                return False, status
            age = self.clock() - self.last_frame_stamp
            if self.block_after_s > 0 and age > self.block_after_s:
                return False, status or f"no frame used for {age:.1f} s"
        return True, status

    @property
    def metadata(self) -> dict[str, Any]:
        status = self.status()
        with self._cond:
            key = (self.belief.version, status, int(self.clock()))
            if self._cache is None or self._cache[0] != key:
                self.belief.status = status
                self._cache = (key, self.belief.metadata(self.clock()))
            return self._cache[1]

    def wait_for_frame(self, after: float, timeout_s: float) -> bool:
        """Block until a frame stamped at or after `after` (clock time) has been processed, at
        most `timeout_s` of wall time (a timeout, not a stamp)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.last_frame_stamp < after:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    # -- acting ---------------------------------------------------------------------------------

    def _fail(self, action: str, message: str, code: str) -> dict[str, Any]:
        with self._cond:
            self.belief.last_action, self.belief.last_success = action, False
            self.belief.last_error = (message, code)
            self.belief.version += 1
        return self.metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        skill = ACTION_TO_SKILL.get(action)
        object_id = str(params.get("objectId") or "")
        if action in ("Pass", "Done"):  # AI2-THOR's no-ops: nothing to send to the robot
            with self._cond:
                self.belief.last_action, self.belief.last_success = action, True
                self.belief.last_error = ("", "")
                self.belief.version += 1
            return self.metadata
        if skill is None:
            return self._fail(action, f"{action} is not one of the skills this robot offers "
                              f"({', '.join(sorted(ACTION_TO_SKILL))})", "unsupported")
        ok, status = self.perception_ok()
        if not ok and self.frames and self.wait_for_frame(self.clock(), self.frame_timeout_s):
            ok, status = self.perception_ok()  # frames were only late: act on the fresh one
        if not ok:
            return self._fail(action, f"{action} refused: perception is not healthy ({status})",
                              "perception_unavailable")
        if self.skills is None:
            return self._fail(action, f"{action} failed: no skill server configured", "skill_server_down")
        if object_id not in self.belief.tracks and skill != "search":  # a search looks for the unseen
            return self._fail(action, f"{action}: {object_id or 'no object'} has not been seen by the robot",
                              "not_visible")
        target = self.belief.held or "" if skill == "place" else ""
        result = self.skills.execute(SkillRequest(skill, object_id, target))
        finished = self.clock()  # a frame from before now may not show the skill's effect
        if not result.success:
            if result.error_code in ("skill_server_down", "skill_timeout"):
                with self._cond:
                    self._skill_status = f"skill server: {result.error_message}"
            return self._fail(action, result.error_message or f"{skill} failed", result.error_code)
        with self._cond:
            self._skill_status = ""
            self.belief.robot_did(skill, object_id, "" if skill != "place" else object_id)
            self.belief.last_action, self.belief.last_success = action, True
            self.belief.last_error = ("", "")
        if not self.wait_for_frame(finished, self.frame_timeout_s):
            with self._cond:
                self._frame_status = (f"no camera frame within {self.frame_timeout_s:g} s after {action}; "
                                      "the world state may not show its effect")
                self._lasting = False
        return self.metadata


def skill_result_unavailable(reason: str) -> SkillResult:
    return SkillResult(False, reason, "skill_server_down")
