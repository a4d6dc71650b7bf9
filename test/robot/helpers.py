"""Test doubles of the robot-skills core: a scripted goal runner and a believed world."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from task_learning.robot.goals import GoalOutcome, RobotGoal, Vec3
from task_learning.robot.placing import Place
from task_learning.robot.sequences import BasePose

DATA = Path(__file__).resolve().parent.parent / "data" / "robot"
TEST_URDF = (DATA / "three_joint_arm.urdf").read_text()


@dataclass
class ScriptedRunner:
    """Records every goal; answers with `script(goal)` (default: success)."""

    script: Callable[[RobotGoal], GoalOutcome] | None = None
    goals: list[RobotGoal] = field(default_factory=list)

    def run(self, goal: RobotGoal) -> GoalOutcome:
        self.goals.append(goal)
        if self.script is not None:
            return self.script(goal)
        if goal.kind == "gripper":
            return GoalOutcome("succeeded", gripper=(0.04, True, False))
        return GoalOutcome("succeeded", code=1 if goal.kind == "move_group" else 0)


@dataclass
class FakeView:
    objects: dict[str, Vec3] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    holding: str | None = None
    base: BasePose | None = BasePose(0.0, 0.0, 0.0)
    appears_after_views: dict[str, int] = field(default_factory=dict)  # object -> views until seen
    hidden: dict[str, Vec3] = field(default_factory=dict)
    views: int = 0
    yaws: dict[str, float] = field(default_factory=dict)
    fronts: dict[str, BasePose] = field(default_factory=dict)
    heights: dict[str, float] = field(default_factory=dict)
    places: dict[str, Place] = field(default_factory=dict)
    lengths: dict[str, float] = field(default_factory=dict)

    def object_position(self, object_id: str) -> Vec3 | None:
        return self.objects.get(object_id)

    def open_state(self, object_id: str) -> bool | None:
        return False if object_id in self.closed else True if object_id in self.opened else None

    def held(self) -> str | None:
        return self.holding

    def base_pose(self) -> BasePose | None:
        return self.base

    def grasp_yaw(self, object_id: str) -> float | None:
        return self.yaws.get(object_id)

    def grasp_width(self, object_id: str) -> float | None:
        return None

    def handle_of(self, object_id: str) -> Vec3 | None:
        return None

    def height_of(self, object_id: str) -> float | None:
        return self.heights.get(object_id)

    def length_of(self, object_id: str) -> float | None:
        return self.lengths.get(object_id)

    def place_in(self, object_id: str) -> Place | None:
        return self.places.get(object_id)

    def front_of(self, object_id: str) -> BasePose | None:
        return self.fronts.get(object_id)

    def wait_for_view(self, timeout_s: float) -> bool:
        self.views += 1
        for oid, n in self.appears_after_views.items():
            if self.views >= n and oid in self.hidden:
                self.objects[oid] = self.hidden.pop(oid)
        return True
