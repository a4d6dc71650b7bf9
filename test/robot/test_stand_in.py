"""The stand-in world: the robot's goals first, then the scene's rules; a robot failure is the
action's failure with its blocking condition; STARS+O learns store_groceries through it."""
from __future__ import annotations

import pytest

from task_learning.robot import failures as f
from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.gate import MotionGate
from task_learning.robot.goals import GoalOutcome
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import SkillSequencer
from task_learning.robot.stand_in import StandInRobotWorld
from task_learning.world.scene import load_scene
from test.robot.helpers import DATA, ScriptedRunner

FETCH = load_profile("fetch")


@pytest.fixture(scope="module")
def fetch_kinematics() -> ArmKinematics:
    return ArmKinematics.from_urdf((DATA / "fetch.urdf").read_text(), FETCH.arm.root_link, FETCH.arm.tip_link,
                                   FETCH.arm.joints, FETCH.arm.tolerance_m)


def stand_in(runner, kinematics, scene="store_groceries"):
    def make(view):
        return RobotSkillExecutor(SkillSequencer(FETCH, kinematics), runner, view, MotionGate())

    return StandInRobotWorld(load_scene(scene), make)


def test_an_action_runs_on_the_robot_then_in_the_scene(fetch_kinematics):
    runner = ScriptedRunner()
    world = stand_in(runner, fetch_kinematics)
    item = next(o["objectId"] for o in world.metadata["objects"] if o.get("pickupable") and o.get("visible"))
    assert world.step("NavigateToObject", objectId=item)["lastActionSuccess"]
    # the arm to its carry pose, the base, the head at the object
    assert [g.kind for g in runner.goals] == ["trajectory", "navigate", "point_head"]
    after = world.step("PickupObject", objectId=item)
    assert after["lastActionSuccess"], after["errorMessage"]
    assert world.held() == item and any(g.kind == "gripper" for g in runner.goals)


def test_a_robot_failure_leaves_the_scene_unchanged(fetch_kinematics):
    runner = ScriptedRunner(lambda goal: GoalOutcome("aborted", code=206) if goal.kind == "navigate"
                            else GoalOutcome("succeeded", code=0))
    world = stand_in(runner, fetch_kinematics)
    item = next(o["objectId"] for o in world.metadata["objects"] if o.get("pickupable"))
    after = world.step("NavigateToObject", objectId=item)
    assert not after["lastActionSuccess"] and after["errorCode"] == f.NOT_REACHABLE
    assert "GOAL_OCCUPIED" in after["errorMessage"] and not world.robot.world.is_near(item)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # every action's IK (turned gripper, straight approaches): ~55 s at load ~4, 650 s at load 13 (2 cores)
def test_stars_o_learns_store_groceries_through_the_robot_layer(fetch_kinematics, monkeypatch):
    """The task-learning loop in process, every action as standard goals to a scripted robot:
    the offline stand-in model (not a language model) and the simulated operator."""
    from task_learning.planning import session

    runner = ScriptedRunner()
    monkeypatch.setattr(session, "make_backend", lambda *_a, **_k: stand_in(runner, fetch_kinematics))
    metrics, _ = session.run_in_process(session.RunSpec(scene="store_groceries", condition="STARS+O"))
    assert metrics.completion == 100.0, (metrics.satisfied, metrics.assertions)
    kinds = {g.kind for g in runner.goals}
    assert {"navigate", "point_head", "trajectory", "gripper"} <= kinds
