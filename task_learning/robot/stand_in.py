"""A world backend that moves a robot through the robot-skills layer and takes its world from a
scene's layout instead of a camera: the perception stand-in of the fake-server tests and demos.

Each action first runs as standard goals on the robot (the executor: Nav2, controllers, MoveIt,
against fakes or a simulator); only when they all succeed does the scene's symbolic world apply
the action by its rules (what is held, open, inside what). Object positions (in `map`, z up) are
the synthetic layout's (perception.synthetic: furniture on a ring, objects in slots), the same
geometry the synthetic camera renders. What it is not: perception. Nothing here sees the robot's
motion; a goal that reports success is believed. Use it to test the robot interfaces and the
task-learning loop together, never to measure perception.
"""
from __future__ import annotations

from typing import Any, Callable

from task_learning.perception.skills import ACTION_TO_SKILL, SkillRequest
from task_learning.perception.synthetic import SimulatedRobot
from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.goals import NavigateGoal, Vec3
from task_learning.robot.placing import Place
from task_learning.robot.sequences import BasePose
from task_learning.world.scene import Scene

NO_OPS = ("Pass", "Done")


class StandInRobotWorld:
    name = "robot_stand_in"

    def __init__(self, scene: Scene, make_executor: Callable[["StandInRobotWorld"], RobotSkillExecutor],
                 base_pose: Callable[[], BasePose | None] | None = None) -> None:
        """`base_pose`: where the base is in `map` (a tf lookup on a graph); default: where the
        last navigation goal that succeeded took it."""
        self.scene = scene
        self.robot = SimulatedRobot(scene)
        self._base_pose = base_pose
        self._sent_base = BasePose(0.0, 0.0, 0.0)  # where the last navigation goal took the base
        self.executor = make_executor(self)

    # -- RobotView ------------------------------------------------------------------------------

    def object_position(self, object_id: str) -> Vec3 | None:
        lay = self.robot.layout
        if object_id not in lay.slots and object_id not in lay.T_body:
            return None
        p = lay.true_position(object_id)
        return (float(p[0]), float(p[1]), float(p[2]))

    def open_state(self, object_id: str) -> bool | None:
        record = self._record(object_id)
        return bool(record.get("isOpen")) if record and record.get("openable") else None

    def held(self) -> str | None:
        return self.robot.world.held_object

    def base_pose(self) -> BasePose | None:
        if self._base_pose is not None:
            return self._base_pose()
        return self._sent_base

    def grasp_yaw(self, object_id: str) -> float | None:
        return None

    def grasp_width(self, object_id: str) -> float | None:
        return None

    def handle_of(self, object_id: str) -> Vec3 | None:
        return None

    def height_of(self, object_id: str) -> float | None:
        return None

    def length_of(self, object_id: str) -> float | None:
        return None

    def place_in(self, object_id: str) -> Place | None:
        return None

    def front_of(self, object_id: str) -> BasePose | None:
        return None

    def wait_for_view(self, timeout_s: float) -> bool:
        return True  # the layout is always known

    def _record(self, object_id: str) -> dict[str, Any] | None:
        return next((o for o in self.robot.world.metadata["objects"] if o["objectId"] == object_id), None)

    # -- WorldBackend ---------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        return self.robot.world.metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        object_id = str(params.get("objectId") or "")
        skill = ACTION_TO_SKILL.get(action)
        if action in NO_OPS or skill is None:
            return self.robot.world.step(action, **params)
        target = (self.held() or "") if skill == "place" else ""
        result = self.executor.execute(SkillRequest(skill, object_id, target))
        if not result.success:
            metadata = dict(self.robot.world.metadata)
            metadata.update(lastAction=action, lastActionSuccess=False, errorMessage=result.error_message,
                            errorCode=result.error_code)
            return metadata
        if skill in ("navigate", "search"):
            goal = next(s.goal for s in reversed(self.executor.log.steps) if isinstance(s.goal, NavigateGoal))
            self._sent_base = BasePose(goal.position[0], goal.position[1], goal.yaw)
        self.robot.execute(SkillRequest("navigate" if skill == "search" else skill, object_id, target))
        return self.robot.world.metadata
