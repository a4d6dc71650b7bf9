"""Where the hand takes and lets go (robot.placing), and the executor's use of it."""
from __future__ import annotations

import math

import pytest

from task_learning.perception.skills import SkillRequest
from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.gate import MotionGate
from task_learning.robot.goals import NavigateGoal, PointHeadGoal
from task_learning.robot.placing import (
    GRASP_BELOW_TOP_M,
    LYING_HALF_M,
    PADS_ABOVE_BOTTOM_M,
    RELEASE_CLEARANCE_M,
    Place,
    grasp_point,
    release_point,
    spot,
)
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import SkillSequencer
from test.robot.helpers import FakeView, ScriptedRunner

# a table 1.2 m wide, 0.6 m deep, its top at 0.9 m, its front facing +x, centred at (2, 0)
TABLE = Place(2.0, 0.0, 0.0, 0.3, 0.6, 0.9, 1.25, 0.9)
# a compartment behind a door, floor 0.9 m, ceiling 1.25 m
CUPBOARD = Place(2.0, 0.0, 0.0, 0.18, 0.38, 0.9, 1.25, 0.9, enclosed=True)
# a bin on the floor with walls 0.3 m high; a dish rack whose walls' rim is at 0.9 m
BIN = Place(0.0, 2.0, -math.pi / 2, 0.18, 0.18, 0.05, 0.65, 0.3)
RACK = Place(0.0, 2.0, -math.pi / 2, 0.22, 0.32, 0.75, 1.25, 0.9)


def test_a_grasp_is_just_below_the_top_and_never_at_the_floor():
    assert grasp_point((1.0, 2.0, 0.5), 0.2)[2] == pytest.approx(0.6 - GRASP_BELOW_TOP_M)
    flat = grasp_point((1.0, 2.0, 0.51), 0.02)  # a 2 cm tall plate: the pads stay above its bottom
    assert flat[2] == pytest.approx(0.5 + PADS_ABOVE_BOTTOM_M)
    assert grasp_point((1.0, 2.0, 0.5), None) == (1.0, 2.0, 0.5)


def test_a_release_clears_the_floor_the_rim_or_half_a_compartment():
    above = 0.05
    on_table = release_point(TABLE, 0.2, above)
    assert on_table[2] + above == pytest.approx(0.9 + 0.2 - GRASP_BELOW_TOP_M + RELEASE_CLEARANCE_M)
    in_bin = release_point(BIN, 0.2, above)
    assert in_bin[2] + above == pytest.approx(0.3 + 0.2 - GRASP_BELOW_TOP_M + RELEASE_CLEARANCE_M)
    in_rack = release_point(RACK, 0.2, above)  # high walls, reached level: it goes in lying down
    assert in_rack[2] + above == pytest.approx(0.9 + LYING_HALF_M + RELEASE_CLEARANCE_M)
    short = release_point(CUPBOARD, 0.05, above)
    assert short[2] + above == pytest.approx((0.9 + 1.25) / 2)  # the forearm clears the floor


def test_spots_fill_the_deepest_row_first_three_abreast():
    spots = [spot(Place(**{**TABLE.__dict__, "holding": k})) for k in range(4)]
    assert len({s for s in spots[:3]}) == 3 and all(s[0] < 2.0 for s in spots[:3])  # behind the centre line
    assert spots[3][0] > spots[0][0]  # the next row is nearer the front (+x)
    assert all(abs(s[1]) <= 0.6 - 0.06 for s in spots)


def test_the_executor_puts_the_held_object_at_the_places_next_spot_and_looks_there_on_arrival():
    view = FakeView(objects={"Mug|1": (0.5, 0.0, 0.95), "CounterTop|1": (2.0, 0.0, 0.9)}, holding="Mug|1",
                    heights={"Mug|1": 0.1}, places={"CounterTop|1": TABLE})
    runner = ScriptedRunner()
    executor = RobotSkillExecutor(SkillSequencer(load_profile("fetch")), runner, view, MotionGate())
    assert executor.execute(SkillRequest("navigate", "CounterTop|1")).success
    look = next(g for g in runner.goals if isinstance(g, PointHeadGoal))
    target = release_point(TABLE, 0.1, load_profile("fetch").arm.place_above_m)
    assert look.target == pytest.approx(target)
    drive = next(g for g in runner.goals if isinstance(g, NavigateGoal))
    assert math.hypot(drive.position[0] - target[0], drive.position[1] - target[1]) < 1.3
