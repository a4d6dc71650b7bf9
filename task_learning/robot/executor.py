"""The robot-skills executor: one abstract action in, standard goals out, a SkillResult back.

It implements the perception layer's `SkillClient`, so `FetchWorld` drives a robot's own
interfaces (Nav2, controllers, MoveIt) instead of a private skill server. Each action: refused
while the `MotionGate` is stopped; checked against what the robot believes (an object never seen
is not_visible, a pick with a full hand hand_full, a place with an empty one not_holding, a place
into a closed receptacle receptacle_closed, an open of a door seen open already_open, a close of
one seen closed already_closed); turned into goals by the `SkillSequencer`; sent one at a time
through a `GoalRunner` (the ROS layer's action clients); the first goal that fails
ends the action with its blocking condition (robot.failures). `search` (VisualSearch) looks
around with the head before it gives up.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Protocol

from task_learning.perception.skills import SkillRequest, SkillResult
from task_learning.robot.failures import (
    ALREADY_CLOSED,
    ALREADY_OPEN,
    HAND_FULL,
    NOT_HOLDING,
    NOT_NEAR,
    NOT_VISIBLE,
    RECEPTACLE_CLOSED,
    ROBOT_FAULT,
    WORDS,
    failure_of,
)
from task_learning.robot.gate import MotionGate
from task_learning.robot.goals import GoalOutcome, RobotGoal, Step, TrajectoryGoal, Vec3
from task_learning.robot.placing import Hold, Place, grasp_point, hold_of, release_point
from task_learning.robot.sequences import MANIPULATIONS, TOP_DOWN_BELOW_M, BasePose, SkillSequencer, Unreachable
from task_learning.world.backend import WORLD_UNAVAILABLE

log = logging.getLogger(__name__)


class GoalRunner(Protocol):
    """Sends one goal and blocks until it ends; never raises for a robot-side failure. It
    honours the gate: a goal is not sent while stopped and is cancelled on a stop or interrupt."""

    def run(self, goal: RobotGoal) -> GoalOutcome:
        ...


class RobotView(Protocol):
    """What the robot believes, in `map`: where objects and the base are, what it holds."""

    def object_position(self, object_id: str) -> Vec3 | None:
        ...

    def open_state(self, object_id: str) -> bool | None:
        """Whether the robot believes the door or drawer open (True) or closed (False); None
        when it does not know (never seen it) or the object has none."""
        ...

    def held(self) -> str | None:
        ...

    def base_pose(self) -> BasePose | None:
        ...

    def grasp_yaw(self, object_id: str) -> float | None:
        """The heading (rad, `map`, either sense) across the object's narrow horizontal side, the
        way the fingers close on it; None when not known (a round object, or never measured)."""
        ...

    def grasp_width(self, object_id: str) -> float | None:
        """The object's extent (m) across that narrow side: the gripper opens only that much and
        a margin, not into its neighbours; None when not known (it opens fully)."""
        ...

    def handle_of(self, object_id: str) -> Vec3 | None:
        """Where the hand takes a door or a drawer to open or close it (its handle); None when
        not known (the hand goes to the object's position)."""
        ...

    def height_of(self, object_id: str) -> float | None:
        """How tall the object stands (m); None when not known (the hand goes to its centre)."""
        ...

    def length_of(self, object_id: str) -> float | None:
        """The object's extent (m) along its long level side, the one across which the fingers
        do not close (a round object's diameter): taken from above and turned level, it stands
        that tall in the hand; None when not known."""
        ...

    def place_in(self, object_id: str) -> Place | None:
        """What the robot believes of the receptacle as a place to put things (robot.placing);
        None when not known (the hand goes to the receptacle's position)."""
        ...

    def front_of(self, object_id: str) -> BasePose | None:
        """The centre of the front face of the piece of furniture the object is in or on (of
        the piece itself when `object_id` is furniture), heading out of that face; None when
        not known. The base stands in front of it, square to it."""
        ...

    def wait_for_view(self, timeout_s: float) -> bool:
        """Block until a camera frame taken after this call was used (after the head moved)."""
        ...


@dataclass
class ExecutionLog:
    """Every step sent, for feedback and the contract tests."""

    steps: list[Step] = field(default_factory=list)


class RobotSkillExecutor:
    def __init__(self, sequencer: SkillSequencer, runner: GoalRunner, view: RobotView, gate: MotionGate,
                 *, on_step: Callable[[Step], None] | None = None, view_timeout_s: float = 3.0) -> None:
        self.sequencer = sequencer
        self.profile = sequencer.profile
        self.runner = runner
        self.view = view
        self.gate = gate
        self.on_step = on_step
        self.view_timeout_s = view_timeout_s
        self.log = ExecutionLog()
        self._hold: tuple[str, Hold] | None = None  # what the hand took, and how it sits there

    def execute(self, request: SkillRequest) -> SkillResult:
        subject = request.object_id or "the object"
        refusal = self.gate.refusal()
        if refusal:
            return SkillResult(False, f"{request.skill}({subject}) refused: {refusal}", WORLD_UNAVAILABLE)
        generation = self.gate.generation
        if request.skill == "search":
            return self._search(request, generation)
        position = self.view.object_position(request.object_id)
        if position is None:
            return _fail(NOT_VISIBLE, subject, "never seen by the robot")
        problem = self._precheck(request)
        if problem is not None:
            return problem
        base = self.view.base_pose()
        front = self.view.front_of(request.object_id)
        position = self._target(request.skill, request.object_id, position)
        if request.skill == "navigate":
            return self._run(self.sequencer.navigate(position, base, front, self._reach()), subject, generation)
        if base is None:
            return _fail(ROBOT_FAULT, subject, "the base's pose in the map is unknown (no transform map -> "
                         f"{self.profile.base.base_frame})")
        if request.skill not in MANIPULATIONS:
            return SkillResult(False, f"unknown skill {request.skill!r}", "unsupported")
        try:
            steps = self.sequencer.manipulate(request.skill, position, base, front,
                                              self.view.grasp_yaw(request.object_id),
                                              self.view.grasp_width(request.object_id),
                                              self._reach() if request.skill == "place" else 0.0)
        except Unreachable as exc:
            return _fail(NOT_NEAR, subject, str(exc))
        result = self._run(steps, subject, generation)
        if result.success and request.skill in ("pick", "place"):
            self._hold = (request.object_id, self._taken(request.object_id, position)) \
                if request.skill == "pick" else None
        return result

    def _taken(self, object_id: str, grasp: Vec3) -> Hold:
        """How the object just picked at `grasp` sits in the hand (robot.placing.hold_of): taken
        from above below TOP_DOWN_BELOW_M, as the sequencer does."""
        return hold_of(self.view.height_of(object_id), self.view.length_of(object_id), grasp[2] < TOP_DOWN_BELOW_M)

    def _held(self) -> Hold:
        """How the held object sits in the hand: as recorded when it was picked, else from its
        height alone (not knowing how it was taken)."""
        held = self.view.held()
        if self._hold is not None and self._hold[0] == held:
            return self._hold[1]
        return hold_of(self.view.height_of(held) if held else None, None, None)

    def _reach(self) -> float:
        """How far the held object reaches past the fingertips (0 with an empty hand)."""
        return self._held().past_fingertips if self.view.held() else 0.0

    def _target(self, skill: str, object_id: str, position: Vec3) -> Vec3:
        """Where the hand goes (and the base stands for it, and the head looks): a door's handle
        to open or close it (and on the way to a closable place with the hand empty); the next
        spot of a place to put the held object in (and on the way there with it); a little below
        an object's top to pick it (and on the way to it); else the object's position."""
        held = self.view.held()
        place = self.view.place_in(object_id)
        if skill in ("open", "close") or (skill == "navigate" and place is not None and not held):
            return self.view.handle_of(object_id) or position
        if place is not None and skill in ("place", "navigate"):
            return release_point(place, self._held(), self.profile.arm.place_above_m)
        if place is None and skill in ("pick", "navigate"):
            return grasp_point(position, self.view.height_of(object_id))
        return position

    def _precheck(self, request: SkillRequest) -> SkillResult | None:
        held = self.view.held()
        subject = request.object_id
        if request.skill == "pick" and held:
            return _fail(HAND_FULL, subject, f"already holding {held}")
        if request.skill in ("open", "close") and self.view.open_state(subject) == (request.skill == "open"):
            # as AI2-THOR refuses it; on a robot it is worse than nothing: the hand that pulls an
            # open door's handle swings it, and the put after the "open" finds the door shut
            condition = ALREADY_OPEN if request.skill == "open" else ALREADY_CLOSED
            return _fail(condition, subject, "the robot saw it so; the action would change nothing")
        if request.skill in ("open", "close") and held:
            # the gripper that holds it is the hand that pulls the handle: opening would drop it
            return _fail(HAND_FULL, subject, f"holding {held}; a door takes the hand that holds it: "
                         "put it down first")
        if request.skill == "place" and not held:
            return _fail(NOT_HOLDING, subject, "nothing to put down")
        if request.skill == "place" and self.view.open_state(subject) is False:
            return _fail(RECEPTACLE_CLOSED, subject, f"open it before putting {held} in it")
        return None

    def _search(self, request: SkillRequest, generation: int) -> SkillResult:
        """VisualSearch: where the object was seen, go there; otherwise sweep the head and look
        after each heading; not_visible only when the whole sweep did not find it."""
        subject = request.object_id
        position = self.view.object_position(subject)
        if position is None:
            for step in self.sequencer.look_around():
                result = self._run([step], subject, generation)
                if not result.success:
                    return result
                self.view.wait_for_view(self.view_timeout_s)
                position = self.view.object_position(subject)
                if position is not None:
                    break
            else:
                return _fail(NOT_VISIBLE, subject, f"not found in a look-around of "
                             f"{len(self.profile.head.look_around_pans)} headings")
        target = self._target("navigate", subject, position)
        return self._run(self.sequencer.navigate(target, self.view.base_pose(), self.view.front_of(subject),
                                                 self._reach()), subject, generation)

    def _run(self, steps: list[Step], subject: str, generation: int) -> SkillResult:
        sent: list[Step] = []
        for step in steps:
            if self.gate.generation != generation:
                return _fail(WORLD_UNAVAILABLE, subject, f"stopped before '{step.why}': "
                             f"{self.gate.why_interrupted()}")
            self.log.steps.append(step)
            if self.on_step is not None:
                self.on_step(step)
            outcome = self.runner.run(step.goal)
            sent.append(step)
            failure = failure_of(step.goal, outcome, subject=subject, distro=self.profile.distribution,
                                 holding_min=self.profile.gripper.holding_min)
            if failure is not None:
                log.info("%s: %s failed: %s", subject, step.why, failure.message)
                if _moves_arm(step):
                    self._back_out(sent, generation)
                elif step.goal.kind == "gripper" or (step.goal.kind == "trajectory" and step.goal.purpose == "gripper"):
                    self.sequencer.arm_lost()  # the plan's later arm goals were not run
                return SkillResult(False, f"{failure.message} (while '{step.why}')", failure.condition)
            if self.gate.generation != generation:  # interrupted as the goal ended
                return _fail(WORLD_UNAVAILABLE, subject, f"stopped after '{step.why}': "
                             f"{self.gate.why_interrupted()}")
        return SkillResult(True)

    def _back_out(self, sent: list[Step], generation: int) -> None:
        """An arm goal failed (blocked in a piece, most often): retrace the way the arm came in
        this action, so that the next action does not start from inside the furniture. Best
        effort: what it achieves is logged, the action's failure stands either way."""
        recovery = self.sequencer.back_out(sent)
        self.sequencer.arm_lost()
        for step in recovery:
            if self.gate.generation != generation:
                return
            self.log.steps.append(step)
            if self.on_step is not None:
                self.on_step(step)
            outcome = self.runner.run(step.goal)
            if outcome.status != "succeeded":
                log.info("backing out failed: %s %s", outcome.status, outcome.message)
                return
        if recovery:
            self.sequencer.backed_out()


def _moves_arm(step: Step) -> bool:
    return isinstance(step.goal, TrajectoryGoal) and step.goal.purpose == "arm"


def _fail(condition: str, subject: str, detail: str) -> SkillResult:
    return SkillResult(False, f"{subject} {WORDS[condition]}: {detail}", condition)
