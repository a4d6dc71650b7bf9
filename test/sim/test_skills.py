"""The robot-skills layer in physics (scripts/sim_skills_check.py's plan, in process): the
RobotSkillExecutor's goals run by the simulator's controllers on a small scene. Positions come
from the simulator's ground truth (tests only). The whole scenes' figures are the script's
(docs/sim.md); here a door, a drawer, a friction grasp and the grasp weld."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.gate import MotionGate
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import SkillSequencer
from task_learning.world.scene import load_scene
from task_learning_sim.completion import physics_completion
from task_learning_sim.ground_truth import ground_truth
from task_learning_sim.scene_world import build_world
from task_learning_sim.simulator import Simulator
from task_learning_sim.urdf import fetch_urdf
from test.sim.direct_runner import DirectGoalRunner

ROOT = Path(__file__).resolve().parents[2]
SMALL = Path(__file__).parent / "data" / "small_kitchen.yaml"
FETCH = load_profile("fetch")


def _check_module():
    spec = importlib.util.spec_from_file_location("sim_skills_check", ROOT / "scripts" / "sim_skills_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("sim_skills_check", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return sys.modules["sim_skills_check"]


def _robot(grasp_weld: bool = False):
    world = build_world(load_scene(SMALL))
    sim = Simulator(world, grasp_weld=grasp_weld)
    kinematics = ArmKinematics.from_urdf(fetch_urdf(sim.model), FETCH.arm.root_link, FETCH.arm.tip_link,
                                         FETCH.arm.joints, FETCH.arm.tolerance_m)
    check = _check_module()
    view = check.GroundTruthView(lambda: ground_truth(sim), FETCH.arm.place_above_m)
    executor = RobotSkillExecutor(SkillSequencer(FETCH, kinematics), DirectGoalRunner(sim), view, MotionGate())
    return sim, check, view, executor


def test_ground_truth_is_plain_json_with_objects_places_handles_and_the_base():
    sim = Simulator(build_world(load_scene(SMALL)))
    truth = json.loads(json.dumps(ground_truth(sim)))
    can = truth["objects"]["CanOfBeans|1"]
    assert can["in"] == "Bag|1" and can["top"] - can["bottom"] == pytest.approx(0.11, abs=0.005)
    cupboard = truth["receptacles"]["Cupboard|1"]
    assert cupboard["form"] == "cabinet" and cupboard["closed"] and len(cupboard["handle"]) == 3
    assert truth["receptacles"]["Bag|1"]["rim"] == pytest.approx(0.3) and "handle" not in truth["receptacles"]["Bag|1"]
    assert truth["base"] == [0.0, 0.0, 0.0]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_drawer_opens_and_closes_through_the_executor_with_the_handle_assist_counted():
    sim, check, view, executor = _robot()
    settle = lambda: sim.run_for(0.5)  # noqa: E731
    assert check._door(executor, view, "open", "Drawer|1", settle) == "ok"
    slide = sim.data.joint("Drawer|1/slide").qpos[0]
    assert slide > 0.1  # out as far as the hand pulled it
    assert check._door(executor, view, "close", "Drawer|1", settle) == "ok"
    assert sim.data.joint("Drawer|1/slide").qpos[0] < 0.01
    assert sim.assists.counts == {"door_handle": 2}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_can_goes_from_the_bag_into_the_cupboard_with_the_grasp_weld_and_the_door_closed_after():
    sim, check, view, executor = _robot(grasp_weld=True)
    report = check.run_plan(executor, view, sim.world.scene.preferences, list(sim.world.scene.closable),
                            lambda: sim.run_for(0.5), say=lambda _line: None)
    assert [(o.object, o.success) for o in report.objects] == [("CanOfBeans|1", True)], report
    assert report.doors == {"open Cupboard|1": "ok", "close Cupboard|1": "ok"}
    completion = physics_completion(sim.world, sim.model, sim.data)
    assert completion.percent == 100.0, completion.failures
    assert sim.assists.counts == {"door_handle": 2, "grasp_weld": 1}
    assert not sim.data.eq_active.any()  # the weld ended when the gripper opened


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_friction_grasp_lifts_the_can_out_of_the_bag_with_no_assist():
    sim, check, view, executor = _robot()
    view.focus = "object"
    go = check._go(executor, view, "CanOfBeans|1", "object", lambda: sim.run_for(0.5))
    assert go.success, go.error_message
    picked = executor.execute(check.SkillRequest("pick", "CanOfBeans|1"))
    assert picked.success, picked.error_message
    sim.run_for(1.0)
    truth = ground_truth(sim)
    assert truth["objects"]["CanOfBeans|1"]["bottom"] > 0.25 and truth["held"] == ["CanOfBeans|1"]
    assert not sim.assists.counts
