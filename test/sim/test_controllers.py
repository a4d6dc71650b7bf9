"""The simulated Fetch's controllers in physics (ROS-free): the base drives with bounded speed,
stops on contact and on cancel; trajectories are tracked and checked as joint_trajectory_controller
checks them; the head turns toward a point; the gripper stalls on what it closes on."""
from __future__ import annotations

import math

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
from task_learning.world.scene import load_scene  # noqa: E402
from task_learning_sim.base_controller import BACK_OUT_M, MAX_SPEED_M_S, NAV_CODES, NavOutcome, back_out  # noqa: E402
from task_learning_sim.fetch_model import ARM_JOINTS, TORSO_JOINT  # noqa: E402
from task_learning_sim.scene_world import build_world  # noqa: E402
from task_learning_sim.simulator import Simulator  # noqa: E402
from task_learning_sim.trajectory_controller import Trajectory, TrajectoryCode, TrajectoryRefused, TrajectoryRun, check  # noqa: E402

ARM = [TORSO_JOINT, *ARM_JOINTS]


@pytest.fixture
def sim():
    return Simulator(build_world(load_scene("store_groceries")))


def _until(sim, done, limit_s):
    deadline = sim.time + limit_s
    while not done() and sim.time < deadline:
        sim.run_for(0.05)
    assert done(), f"not done within {limit_s} s of simulated time"


def test_a_goal_one_metre_ahead_moves_the_base_one_metre_within_the_speed_limit(sim):
    goal = sim.navigate(1.0, 0.0, 0.0)
    fastest = 0.0
    while goal.outcome is NavOutcome.RUNNING and sim.time < 20:
        sim.run_for(0.05)
        fastest = max(fastest, float(np.hypot(*(sim.data.joint(j).qvel[0] for j in ("base_x_joint", "base_y_joint")))))
    assert goal.outcome is NavOutcome.SUCCEEDED
    x, y, yaw = sim.base_pose()
    assert x == pytest.approx(1.0, abs=0.02) and abs(y) < 0.02 and abs(yaw) < 0.03
    assert fastest <= MAX_SPEED_M_S * 1.1
    assert sim.goal_counts["navigate_to_pose"] == 1


def _before(piece, out_m: float) -> tuple[float, float, float]:
    """A base pose `out_m` out of a piece's front (base_link's centre), facing the piece."""
    x, y, yaw = piece.pose
    ahead = piece.depth / 2 + out_m
    return x + ahead * math.cos(yaw), y + ahead * math.sin(yaw), yaw + math.pi


def _touches_while(sim, goal, limit_s):
    """Run the goal to its end; the names the robot touched on the way."""
    touched = set()
    deadline = sim.time + limit_s
    while goal.outcome is NavOutcome.RUNNING and sim.time < deadline:
        sim.run_for(0.05)
        touched |= set(sim.robot_touches())
    return touched


def test_a_goal_behind_furniture_is_reached_round_it_without_touching_it(sim):
    piece = sim.world.receptacles["DiningTable|1"]
    x, y, yaw = _before(piece, -(piece.depth + 0.6))  # 0.6 m behind its back: the straight line crosses it
    goal = sim.navigate(x, y, yaw)
    assert len(goal.waypoints) > 1  # not the straight line
    touched = _touches_while(sim, goal, 60)
    assert goal.outcome is NavOutcome.SUCCEEDED, goal.outcome
    assert not touched
    bx, by, byaw = sim.base_pose()
    assert math.hypot(bx - x, by - y) < 0.03 and abs(math.remainder(byaw - yaw, 2 * math.pi)) < 0.05


def test_a_goal_past_an_open_door_goes_round_the_door():
    world = build_world(load_scene("store_groceries"))
    sim = Simulator(world)
    fridge = world.receptacles["Fridge|1"]
    sim.data.joint(fridge.joint).qpos[0] = 1.75  # opened, as the door assist leaves it
    sim.run_for(0.1)
    start = sim.navigate(*_before(fridge, 0.45))
    _until(sim, lambda: start.outcome is not NavOutcome.RUNNING, 60)
    assert start.outcome is NavOutcome.SUCCEEDED, start.outcome
    neighbour = world.receptacles["Cupboard|1"]  # on the door's side (the hinge is on its left)
    goal = sim.navigate(*_before(neighbour, 0.45))
    touched = _touches_while(sim, goal, 60)
    assert goal.outcome is NavOutcome.SUCCEEDED and not touched, (goal.outcome, touched)


def test_a_goal_inside_furniture_has_no_path_and_the_base_stays(sim):
    piece = sim.world.receptacles["Fridge|1"]
    goal = sim.navigate(piece.pose[0], piece.pose[1], 0.0)  # the fridge's centre
    assert goal.outcome is NavOutcome.NO_PATH and NAV_CODES[goal.outcome] == 208
    sim.run_for(0.5)
    assert math.hypot(*sim.base_pose()[:2]) < 0.01


def test_a_goal_walled_in_all_round_has_no_path_at_once():
    world = build_world(load_scene("store_groceries"))
    for name, pos, half in (("w", (0.7, 0), (0.025, 0.5)), ("e", (1.7, 0), (0.025, 0.5)),
                            ("s", (1.2, -0.5), (0.5, 0.025)), ("n", (1.2, 0.5), (0.5, 0.025))):
        world.spec.worldbody.add_geom(name=f"wall_{name}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=[*pos, 0.25],
                                      size=[*half, 0.25])
    sim = Simulator(world)
    goal = sim.navigate(1.2, 0.0, 0.0)
    assert goal.outcome is NavOutcome.NO_PATH
    assert sim.time == 0.0  # decided before any motion


def test_driving_into_furniture_aborts_with_a_collision_and_the_base_stops(sim):
    piece = sim.world.receptacles["Fridge|1"]
    goal = sim.navigate(*_before(piece, 0.12))  # the base's circle overlaps the fridge
    _until(sim, lambda: goal.outcome is not NavOutcome.RUNNING, 60)
    assert goal.outcome is NavOutcome.COLLISION
    stopped = sim.base_pose()
    sim.run_for(1.0)
    assert np.hypot(sim.base_pose()[0] - stopped[0], sim.base_pose()[1] - stopped[1]) < 0.05


def _driven_into_the_fridge(sim):
    """The base driven into the fridge's front until the collision stops it, left touching it;
    the fridge."""
    piece = sim.world.receptacles["Fridge|1"]
    goal = sim.navigate(*_before(piece, 0.12))
    _until(sim, lambda: goal.outcome is not NavOutcome.RUNNING, 60)
    assert goal.outcome is NavOutcome.COLLISION and sim.robot_touches()
    return piece


def test_a_base_against_furniture_drives_away_from_it_but_not_further_in(sim):
    """As a base with a local planner: a goal away from the contact runs, one into it aborts."""
    piece = _driven_into_the_fridge(sim)
    x, y, yaw = sim.base_pose()
    away = sim.navigate(x - 0.3 * math.cos(yaw), y - 0.3 * math.sin(yaw), yaw)  # reverse out of it
    # the base turns to face its goal first (the turn moves the touching point sideways, not in)
    _until(sim, lambda: away.outcome is not NavOutcome.RUNNING, 40)
    assert away.outcome is NavOutcome.SUCCEEDED, away.outcome
    again = sim.navigate(*_before(piece, 0.12))
    _until(sim, lambda: again.outcome is not NavOutcome.RUNNING, 40)
    assert again.outcome is NavOutcome.COLLISION


def test_back_out_goes_straight_away_from_what_the_base_touches():
    pose = (1.0, 2.0, 0.0)  # facing +x
    assert back_out(pose, []) is None
    assert back_out(pose, [(1.28, 2.0, 1.0, 0.0)]) == pytest.approx((1.0 - BACK_OUT_M, 2.0))  # ahead: back up
    assert back_out(pose, [(0.72, 2.0, -1.0, 0.0)]) == pytest.approx((1.0 + BACK_OUT_M, 2.0))  # behind: pull on
    assert back_out(pose, [(1.28, 2.0, 1.0, 0.0), (0.72, 2.0, -1.0, 0.0)]) is None  # wedged


def test_a_goal_that_starts_against_furniture_backs_out_first_then_goes_round(sim):
    piece = _driven_into_the_fridge(sim)
    x, y, yaw = sim.base_pose()
    gx, gy, _ = _before(piece, 0.9)  # 0.9 m out of the face and 1.2 m along it, on the open side
    side = sim.navigate(gx - 1.2 * math.sin(yaw), gy + 1.2 * math.cos(yaw), yaw)
    assert math.dist(side.waypoints[0], (x - BACK_OUT_M * math.cos(yaw), y - BACK_OUT_M * math.sin(yaw))) < 1e-6
    touched = _touches_while(sim, side, 60)
    assert side.outcome is NavOutcome.SUCCEEDED, (side.outcome, touched)


def test_cancel_brakes_the_base_short_of_its_goal(sim):
    goal = sim.navigate(2.0, 0.0, 0.0)
    _until(sim, lambda: sim.base_pose()[0] > 0.5, 10)
    sim.base.cancel()
    _until(sim, lambda: goal.outcome is not NavOutcome.RUNNING, 5)
    assert goal.outcome is NavOutcome.CANCELED
    assert sim.base_pose()[0] < 1.5


def test_an_arm_trajectory_is_tracked_to_its_goal(sim):
    target = np.array([0.3, 0.5, -0.3, 0.0, 1.0, 0.0, 0.5, 0.0])
    run = sim.follow("arm_with_torso_controller", Trajectory(ARM, np.array([3.0]), target[None, :]))
    _until(sim, lambda: run.done, 6)
    assert run.code is TrajectoryCode.SUCCESSFUL
    sim.run_for(1.0)
    np.testing.assert_allclose(sim.positions(ARM), target, atol=0.01)


def test_a_path_tolerance_the_arm_cannot_keep_aborts_the_goal(sim):
    target = np.array([0.3, -1.0, 1.2, 0.0, -1.5, 0.0, 0.5, 0.0])
    tight = {joint: 1e-4 for joint in ARM}
    run = sim.follow("arm_with_torso_controller", Trajectory(ARM, np.array([0.5]), target[None, :], path_tolerance=tight))
    _until(sim, lambda: run.done, 3)
    assert run.code is TrajectoryCode.PATH_TOLERANCE_VIOLATED and "off its path" in run.message


@pytest.mark.parametrize("joints, times, code", [
    (["head_pan_joint"], [1.0], TrajectoryCode.INVALID_JOINTS),
    (list(ARM_JOINTS), [0.0], TrajectoryCode.INVALID_GOAL),  # times must rise
])
def test_goals_the_controller_cannot_run_are_refused(sim, joints, times, code):
    with pytest.raises(TrajectoryRefused) as err:
        sim.follow("arm_controller", Trajectory(joints, np.array(times + [times[0]]), np.zeros((2, len(joints)))))
    assert err.value.code is code


def test_the_goal_tolerance_is_checked_after_the_goal_time_tolerance():
    trajectory = Trajectory(["a"], np.array([1.0]), np.array([[1.0]]), goal_tolerance={"a": 0.01},
                            goal_time_tolerance=0.5)
    run = TrajectoryRun(trajectory, np.array([0.0]), 0.0)
    check(run, np.array([0.9]), 1.2)
    assert run.code is None  # still within the grace period
    check(run, np.array([0.9]), 1.6)
    assert run.code is TrajectoryCode.GOAL_TOLERANCE_VIOLATED


def test_point_head_turns_the_camera_toward_the_point(sim):
    target = np.array([1.5, -1.0, 0.3])
    run = sim.point_head(target)
    _until(sim, lambda: run.done, 5)
    sim.run_for(0.5)
    camera = sim.data.body("head_camera_rgb_optical_frame")
    towards = (target - camera.xpos) / np.linalg.norm(target - camera.xpos)
    optical_axis = camera.xmat.reshape(3, 3)[:, 2]
    assert math.degrees(math.acos(float(np.clip(towards @ optical_axis, -1, 1)))) < 4.0
    assert sim.goal_counts["point_head"] == 1 and sim.goal_counts["follow_joint_trajectory"] == 0


def test_the_gripper_reaches_an_open_gap_and_stalls_on_an_object(sim):
    opened = sim.grip(0.09, 40.0)
    _until(sim, lambda: opened.done, 5)
    assert opened.reached_goal and not opened.stalled
    # gravity off: a can held still between the open fingers, as if the arm had brought it there
    sim.model.opt.gravity[:] = 0.0
    grip = sim.data.site("grip").xpos
    can = sim.data.joint("CanOfBeans|1/free")
    can.qpos[:3], can.qpos[3:] = grip, [1, 0, 0, 0]
    can.qvel[:] = 0.0
    closing = sim.grip(0.0, 40.0)
    _until(sim, lambda: closing.done, 6)
    assert closing.stalled and not closing.reached_goal
    assert closing.position == pytest.approx(2 * 0.038, abs=0.012)  # the can's diameter, less the pads' reach


def test_a_can_on_the_counter_is_grasped_by_friction_alone_and_lifted(sim):
    """No assist: the arm held straight out at the can's height, the base drives the open gripper
    around the can, the fingers close until they stall on it, the torso lifts it 10 cm."""
    counter = sim.world.receptacles["CounterTop|1"]
    cx, cy, cyaw = counter.pose
    spot = np.array([cx + math.cos(cyaw) * (counter.depth / 2 - 0.12), cy + math.sin(cyaw) * (counter.depth / 2 - 0.12),
                     counter.place.low[2] + 0.057])
    can = sim.data.joint("CanOfBeans|1/free")  # set on the counter (the scene starts it in a bag)
    can.qpos[:3], can.qpos[3:], can.qvel[:] = spot, [1, 0, 0, 0], 0.0
    reach = np.array([spot[2] - 0.786, 0, 0, 0, 0, 0, 0, 0])  # the shoulder-lift axis at the can's height
    arm = sim.follow("arm_with_torso_controller", Trajectory(ARM, np.array([4.0]), reach[None, :]))
    opened = sim.grip(0.1, 60.0)
    _until(sim, lambda: arm.done and opened.done, 8)
    assert arm.code is TrajectoryCode.SUCCESSFUL and opened.reached_goal
    x, y, yaw = sim.base_pose()
    grip = sim.data.site("grip").xpos
    ahead = math.cos(yaw) * (grip[0] - x) + math.sin(yaw) * (grip[1] - y)  # the grip point ahead of base_link
    facing = cyaw + math.pi
    stand = spot[:2] - ahead * np.array([math.cos(facing), math.sin(facing)])
    for distance in (0.4, 0.0):  # stand back, then drive the open fingers around the can
        goal = sim.navigate(*(stand - distance * np.array([math.cos(facing), math.sin(facing)])), facing)
        _until(sim, lambda goal=goal: goal.outcome is not NavOutcome.RUNNING, 60)
        assert goal.outcome is NavOutcome.SUCCEEDED
    closing = sim.grip(0.0, 60.0)
    _until(sim, lambda: closing.done, 6)
    assert closing.stalled and closing.position == pytest.approx(0.076, abs=0.01)
    before = sim.data.body("CanOfBeans|1").xpos[2]
    lifted = reach.copy()
    lifted[0] += 0.1
    lift = sim.follow("arm_with_torso_controller", Trajectory(ARM, np.array([3.0]), lifted[None, :]))
    _until(sim, lambda: lift.done, 6)
    sim.run_for(1.0)
    assert lift.code is TrajectoryCode.SUCCESSFUL
    assert sim.data.body("CanOfBeans|1").xpos[2] - before == pytest.approx(0.1, abs=0.025)


def test_what_the_hand_carries_touching_furniture_stops_the_base_as_the_robot_would():
    """The object welded in the hand is part of what the base must not drive into: a carried
    can pressed against the counter is a touch (and a loose can on the floor is not)."""
    sim = Simulator(build_world(load_scene("store_groceries")), grasp_weld=True)
    counter = sim.world.receptacles["CounterTop|1"]
    x, y, yaw = counter.pose
    can = sim.data.joint(sim.model.body("CanOfBeans|1").jntadr[0])
    edge = counter.depth / 2 + 0.03  # the can's centre 3 cm out of the counter's front, touching it
    can.qpos[:3] = [x + edge * math.cos(yaw), y + edge * math.sin(yaw), 0.85]
    mujoco.mj_forward(sim.model, sim.data)
    assert "CounterTop|1" not in sim.robot_touches()  # loose: pushed, not a collision
    sim.assists._weld("CanOfBeans|1")
    mujoco.mj_forward(sim.model, sim.data)
    assert "CounterTop|1" in sim.robot_touches()
