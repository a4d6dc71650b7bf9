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
    HAND_BELOW_M,
    LYING_HALF_M,
    PADS_ABOVE_BOTTOM_M,
    RELEASE_CLEARANCE_M,
    SPOT_NEAREST_M,
    Hold,
    Place,
    grasp_point,
    hold_of,
    release_point,
    spot,
)
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import FACE_MARGIN_M, LEVEL_START_M, BasePose, SkillSequencer
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


def test_how_an_object_sits_in_the_hand_depends_on_how_it_was_taken():
    carton = hold_of(0.3, 0.1, from_above=True)  # a carton standing on end in a bag, taken from above
    assert carton.ahead == pytest.approx(0.3 - GRASP_BELOW_TOP_M)  # turned level, it reaches past the fingers
    assert carton.below_down == pytest.approx(0.3 - GRASP_BELOW_TOP_M) and carton.below_level == pytest.approx(0.05)
    pot = hold_of(0.06, 0.1, from_above=True)  # a pot of hummus: level, it is a wheel 0.1 m across
    assert pot.ahead == pytest.approx(PADS_ABOVE_BOTTOM_M) and pot.below_level == pytest.approx(0.05)
    mug = hold_of(0.1, 0.08, from_above=False)  # taken level from a table, it stands as it stood
    assert mug.below_level == pytest.approx(0.1 - GRASP_BELOW_TOP_M) and mug.ahead == pytest.approx(0.04)
    assert hold_of(0.2, None, None) == Hold(0.0, 0.2 - GRASP_BELOW_TOP_M, 0.2 - GRASP_BELOW_TOP_M)
    assert pot.past_fingertips == 0.0 and carton.past_fingertips == pytest.approx(carton.ahead - PADS_ABOVE_BOTTOM_M)


def test_a_release_clears_the_floor_the_rim_or_the_hands_housing():
    above = 0.05
    on_table = release_point(TABLE, hold_of(0.2, 0.08, False), above)
    assert on_table[2] + above == pytest.approx(0.9 + 0.2 - GRASP_BELOW_TOP_M + RELEASE_CLEARANCE_M)
    in_bin = release_point(BIN, hold_of(0.2, 0.08, True), above)
    assert in_bin[2] + above == pytest.approx(0.3 + 0.2 - GRASP_BELOW_TOP_M + RELEASE_CLEARANCE_M)
    in_rack = release_point(RACK, hold_of(0.2, 0.08, True), above)  # high walls, reached level: lying down
    assert in_rack[2] + above == pytest.approx(0.9 + LYING_HALF_M + RELEASE_CLEARANCE_M)
    lying = release_point(CUPBOARD, hold_of(0.2, 0.18, True), above)  # from a bag into a compartment: level
    assert lying[2] + above == pytest.approx(0.9 + 0.09 + RELEASE_CLEARANCE_M)
    short = release_point(CUPBOARD, hold_of(0.05, 0.06, True), above)  # the hand's housing clears the floor
    assert short[2] + above == pytest.approx(0.9 + HAND_BELOW_M + RELEASE_CLEARANCE_M)


def test_a_long_held_object_goes_into_the_nearest_row_and_over_filled_rows_behind_it():
    above = 0.05
    fridge = Place(2.0, 0.0, 0.0, 0.315, 0.33, 0.7, 1.15, 0.7, enclosed=True)
    carton = hold_of(0.3, 0.1, True)
    first = release_point(fridge, carton, above)
    assert first[0] == pytest.approx(2.0 + 0.315 - SPOT_NEAREST_M)  # not the deepest row: the arm reaches no deeper
    assert first[2] + above == pytest.approx(0.7 + HAND_BELOW_M + RELEASE_CLEARANCE_M)  # nothing behind: low
    late = release_point(Place(**{**fridge.__dict__, "holding": 6}), carton, above)
    assert late[2] + above == pytest.approx((0.7 + 1.15) / 2)  # over the rows filled behind it
    pot = release_point(Place(**{**fridge.__dict__, "holding": 4}), hold_of(0.06, 0.1, True), above)
    assert pot[0] == pytest.approx(spot(Place(**{**fridge.__dict__, "holding": 4}))[0])  # short: its row
    assert pot[2] + above == pytest.approx(0.7 + HAND_BELOW_M + RELEASE_CLEARANCE_M)  # and let go low


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
    target = release_point(TABLE, hold_of(0.1, None, None), load_profile("fetch").arm.place_above_m)
    assert look.target == pytest.approx(target)
    drive = next(g for g in runner.goals if isinstance(g, NavigateGoal))
    assert math.hypot(drive.position[0] - target[0], drive.position[1] - target[1]) < 1.3


def test_the_executor_releases_a_picked_object_as_the_pick_left_it_in_the_hand():
    """Picked from above in a bag, a carton standing on end is carried level into a compartment
    as a plank reaching past the fingers: the place goes by how the pick took it."""
    fridge = Place(2.0, 0.0, 0.0, 0.315, 0.33, 0.7, 1.15, 0.7, enclosed=True)
    view = FakeView(objects={"Eggs|1": (0.6, 0.0, 0.17), "Fridge|1": (2.0, 0.0, 0.7)}, heights={"Eggs|1": 0.3},
                    lengths={"Eggs|1": 0.1}, places={"Fridge|1": fridge}, yaws={"Eggs|1": 0.0},
                    fronts={"Fridge|1": BasePose(2.315, 0.0, 0.0)})
    profile = load_profile("fetch").model_copy(update={"arm": load_profile("fetch").arm.model_copy(
        update={"mode": "moveit"})})
    runner = ScriptedRunner()
    executor = RobotSkillExecutor(SkillSequencer(profile), runner, view, MotionGate())
    assert executor.execute(SkillRequest("pick", "Eggs|1")).success
    view.holding = "Eggs|1"
    runner.goals.clear()
    assert executor.execute(SkillRequest("navigate", "Fridge|1")).success
    look = next(g for g in runner.goals if isinstance(g, PointHeadGoal))
    assert look.target == pytest.approx(release_point(fridge, hold_of(0.3, 0.1, True), profile.arm.place_above_m))
    drive = next(g for g in runner.goals if isinstance(g, NavigateGoal))
    reach = 0.3 - GRASP_BELOW_TOP_M - PADS_ABOVE_BOTTOM_M  # past the fingertips
    assert drive.position[0] == pytest.approx(2.315 + LEVEL_START_M + reach + FACE_MARGIN_M)  # it starts out of the face
