"""The simulated Nav2's planner on its own (pure functions, no physics, no ROS): the grid holds the
obstacles' outlines, clearance never overstates the distance to an obstacle, the path keeps the
base's circle off obstacles and out of the inflated band where there is room, start and goal may
stand in the band, a walled-in goal or one inside an obstacle has no path."""
from __future__ import annotations

import math

import numpy as np
import pytest

from task_learning_sim.base_planner import (
    APPROACH_M,
    FOOTPRINT_RADIUS_M,
    INFLATION_M,
    build_costmap,
    path_length,
    plan_approach,
    plan_path,
)


def box(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=float)


def distance_to_box(point: tuple[float, float], outline: np.ndarray) -> float:
    (x0, y0), (x1, y1) = outline.min(axis=0), outline.max(axis=0)
    dx, dy = max(x0 - point[0], 0.0, point[0] - x1), max(y0 - point[1], 0.0, point[1] - y1)
    return math.hypot(dx, dy)


def nearest_along(path: list[tuple[float, float]], outlines: list[np.ndarray], skip_m: float = 0.0) -> float:
    """The smallest distance from the path (sampled every cm) to any outline, leaving out the
    first and last `skip_m` of it."""
    total, nearest, walked = path_length(path), math.inf, 0.0
    for a, b in zip(path, path[1:]):
        length = math.dist(a, b)
        for t in np.linspace(0.0, 1.0, max(2, int(length / 0.01))):
            along = walked + t * length
            if skip_m <= along <= total - skip_m:
                p = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
                nearest = min(nearest, *(distance_to_box(p, o) for o in outlines))
        walked += length
    return nearest


def test_open_floor_gives_the_straight_line():
    wall = box(5.0, 5.0, 5.1, 5.1)
    path = plan_path(build_costmap([wall], [(0.0, 0.0), (2.0, 1.0)]), (0.0, 0.0), (2.0, 1.0))
    assert path == [(0.0, 0.0), (2.0, 1.0)]


def test_the_grid_holds_the_outline_and_clearance_never_overstates_the_distance():
    table = box(1.0, -0.5, 1.8, 0.5)
    costmap = build_costmap([table], [(0.0, 0.0)])
    assert costmap.occupied[costmap.cell((1.4, 0.0))] and costmap.occupied[costmap.cell((1.01, 0.49))]
    assert not costmap.occupied[costmap.cell((0.5, 0.0))]
    rows, cols = costmap.occupied.shape
    for row in range(0, rows, 3):
        for col in range(0, cols, 3):
            centre = costmap.centre(row, col)
            assert costmap.clearance[row, col] <= distance_to_box(centre, table) + 1e-9


def test_a_piece_across_the_straight_line_is_gone_round_with_the_inflation_kept():
    table = box(1.0, -0.6, 1.8, 0.6)
    start, goal = (0.0, 0.0), (3.0, 0.0)
    path = plan_path(build_costmap([table], [start, goal]), start, goal)
    assert path is not None and path[0] == start and path[-1] == goal
    assert 2 < len(path) <= 6  # a few legs, not the grid's staircase
    assert nearest_along(path, [table]) >= FOOTPRINT_RADIUS_M + INFLATION_M - 0.05


def test_start_and_goal_inside_the_inflated_band_are_allowed_and_left_straight():
    left, right = box(-0.5, -0.5, 0.0, 0.5), box(3.0, -0.5, 3.5, 0.5)
    start, goal = (0.35, 0.0), (2.65, 0.0)  # 0.35 m out of each piece's front: inside the band
    path = plan_path(build_costmap([left, right], [start, goal]), start, goal)
    assert path is not None and path[0] == start and path[-1] == goal
    assert nearest_along(path, [left, right]) >= 0.35 - 1e-6


def test_a_start_touching_an_obstacle_can_back_out():
    wall = box(0.0, -1.0, 0.2, 1.0)
    start, goal = (-0.27, 0.0), (-1.5, 0.0)  # the base's circle (0.28 m) against the wall
    path = plan_path(build_costmap([wall], [start, goal]), start, goal)
    assert path is not None and path[-1] == goal


def test_a_gap_narrower_than_the_base_is_not_passed_and_a_wider_one_is_when_it_is_the_only_way():
    def walls(gap: float) -> list[np.ndarray]:  # a wall across x = 1 from y = -5 to 5 with a gap at y = 0
        return [box(1.0, -5.0, 1.1, -gap / 2), box(1.0, gap / 2, 1.1, 5.0)]
    start, goal = (0.0, 0.0), (2.0, 0.0)
    narrow = walls(2 * FOOTPRINT_RADIUS_M - 0.1)
    path = plan_path(build_costmap(narrow, [start, goal]), start, goal)
    assert path is not None and max(abs(y) for _, y in path) > 5.0  # round the wall's end
    assert nearest_along(path, narrow) >= FOOTPRINT_RADIUS_M
    wide = walls(2 * FOOTPRINT_RADIUS_M + 0.15)  # wider than the base, narrower than its inflation
    path = plan_path(build_costmap(wide, [start, goal]), start, goal)
    assert path is not None and max(abs(y) for _, y in path) < 1.0  # through the gap
    assert nearest_along(path, wide) >= FOOTPRINT_RADIUS_M - 0.01


@pytest.mark.parametrize("goal", [(1.2, 0.0), (3.3, 3.3)])
def test_a_walled_in_goal_or_one_inside_an_obstacle_has_no_path(goal):
    ring = [box(0.7, -0.5, 0.75, 0.5), box(1.65, -0.5, 1.7, 0.5), box(0.7, -0.55, 1.7, -0.5), box(0.7, 0.5, 1.7, 0.55),
            box(3.0, 3.0, 3.6, 3.6)]
    assert plan_path(build_costmap(ring, [(0.0, 0.0), goal]), (0.0, 0.0), goal) is None


def test_a_goal_far_off_the_map_has_no_path_and_the_grid_stays_bounded():
    table = box(1.0, -0.5, 1.8, 0.5)
    costmap = build_costmap([table], [(0.0, 0.0), (1000.0, 0.0)])
    assert costmap.occupied.size < 1_000_000
    assert plan_path(costmap, (0.0, 0.0), (1000.0, 0.0)) is None


def test_the_last_leg_arrives_along_the_goal_heading_past_a_door_beside_the_goal():
    """A piece's front at x = 0 (the piece at x < 0), its door open beside the goal (a leaf out
    of the face along y = 0.45): a base coming from the side turns out in the open and drives
    straight in, rather than arriving sideways and turning beside the door."""
    piece, door = box(-0.6, -0.4, 0.0, 0.4), box(0.0, 0.43, 0.8, 0.47)
    start, goal, heading = (2.0, -1.5), (0.77, 0.0), math.pi  # facing the piece
    costmap = build_costmap([piece, door], [start, goal])
    path = plan_approach(costmap, start, goal, heading)
    assert path is not None and path[0] == start and path[-1] == goal
    (ax, ay), (gx, gy) = path[-2], path[-1]
    assert math.dist(path[-2], goal) == pytest.approx(APPROACH_M)
    assert abs(math.remainder(math.atan2(gy - ay, gx - ax) - heading, math.tau)) < 1e-6
    assert nearest_along(path, [piece, door]) >= FOOTPRINT_RADIUS_M - 1e-6


def test_an_approach_with_no_room_or_a_near_start_keeps_the_plain_path():
    wall = box(1.05, -2.0, 1.2, 2.0)  # right behind the approach point: no room for the base there
    start, goal, heading = (0.0, 1.5), (0.0, 0.0), 0.0  # facing +x, the approach point at x = -0.5
    costmap = build_costmap([wall, box(-0.9, -2.0, -0.75, 2.0)], [start, goal])
    assert plan_approach(costmap, start, goal, heading) == plan_path(costmap, start, goal)
    near = (0.0, 0.3)
    assert plan_approach(costmap, near, goal, heading) == plan_path(costmap, near, goal)
