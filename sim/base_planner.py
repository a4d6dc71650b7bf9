"""The simulated Nav2's planner: a 2-D occupancy grid of what stands on the floor, a costmap of
the base's clearance inflated as Nav2 inflates it, and a shortest path for the base's circle
simplified to a few straight legs. Pure numpy/scipy (no MuJoCo, no ROS): the simulator hands in
the obstacles' outlines at goal time (sim/simulator.py `obstacle_outlines`).

The costmap, as Nav2's: a cell whose clearance (distance to the nearest obstacle) is below the
base's radius is lethal (the base's circle would overlap something); between the radius and the
radius plus INFLATION_M a cell costs more the closer it is (the path keeps off furniture where
it can, and passes a narrow gap only when there is no other way); beyond that it is free. The
start and the goal may stand inside the inflated band, even inside the lethal one (a base that
touched something, a goal closer to a piece than the inflation, as Nav2's planner tolerance
allows): every cell of the base's own circle at the start and at the goal that is not an
obstacle is open, so the path leaves the start's and enters the goal's band by the cheapest way,
the goal's as its straight last leg.

A goal's heading shapes the path's end, as Nav2's planners that plan with heading (Smac's hybrid
A*, its state lattice) shape it: the last leg arrives along the heading from APPROACH_M out when
there is room, so the base does not turn in place beside the piece it came to, where whatever
stands out from it (the arm in front, what the hand carries) would sweep what stands beside
(a door opened to its stop).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import distance_transform_edt
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import ConvexHull, QhullError

RESOLUTION_M = 0.05
FOOTPRINT_RADIUS_M = 0.28  # the Fetch's base: a circle of 0.56 m diameter
INFLATION_M = 0.15  # beyond the radius, where the cost falls to nothing
# a cell's cost factor at the radius (falling linearly to 0 at radius + INFLATION_M): a metre of
# path at the base's radius from furniture weighs as much as 1 + this many metres in the open
INFLATION_COST = 10.0
MARGIN_M = 1.0  # free floor kept around the obstacles, the start and the goal
# the map ends this far beyond the obstacles: a goal further out has no path (a real map ends
# too), and a far goal cannot make the grid unboundedly large
MAP_REACH_M = 20.0
# how far a straightened leg may cut into the inflated band where the grid path kept out of it:
# round a piece's corner the grid path follows the band's edge, and without this slack the legs
# would be many short chords of that arc
SHORTCUT_SLACK_M = 0.05
APPROACH_M = 0.5  # the last leg arrives along the goal's heading from this far out
ALIGNED_RAD = 0.2  # a last leg this close to the heading (and APPROACH_M long) arrives along it already
HALF_DIAGONAL = math.sqrt(0.5)  # of a cell, in cells: how far a cell's area reaches from its centre

Point = tuple[float, float]


@dataclass(frozen=True)
class Costmap:
    """The grid (row = y, column = x) from `origin` (the centre of cell [0, 0]) at `resolution`:
    `occupied` cells and each cell's `clearance` in metres (a lower bound of the distance from
    its centre to the nearest obstacle; 0 in an obstacle)."""

    origin: Point
    resolution: float
    occupied: np.ndarray
    clearance: np.ndarray

    def cell(self, point: Point) -> tuple[int, int]:
        """The (row, column) of the cell holding `point`, clipped to the grid."""
        rows, cols = self.occupied.shape
        col = int(round((point[0] - self.origin[0]) / self.resolution))
        row = int(round((point[1] - self.origin[1]) / self.resolution))
        return min(max(row, 0), rows - 1), min(max(col, 0), cols - 1)

    def contains(self, point: Point) -> bool:
        rows, cols = self.occupied.shape
        col = (point[0] - self.origin[0]) / self.resolution
        row = (point[1] - self.origin[1]) / self.resolution
        return bool(-0.5 <= col <= cols - 0.5 and -0.5 <= row <= rows - 0.5)

    def centre(self, row: int, col: int) -> Point:
        return self.origin[0] + col * self.resolution, self.origin[1] + row * self.resolution

    def clearance_along(self, a: Point, b: Point) -> float:
        """The smallest clearance of the cells a straight line from `a` to `b` passes (sampled at
        a quarter of a cell)."""
        steps = max(2, int(math.ceil(math.dist(a, b) / (self.resolution / 4))) + 1)
        xs, ys = np.linspace(a[0], b[0], steps), np.linspace(a[1], b[1], steps)
        rows, cols = self.occupied.shape
        cs = np.clip(np.rint((xs - self.origin[0]) / self.resolution).astype(int), 0, cols - 1)
        rs = np.clip(np.rint((ys - self.origin[1]) / self.resolution).astype(int), 0, rows - 1)
        return float(self.clearance[rs, cs].min())


def build_costmap(outlines: list[np.ndarray], around: list[Point], resolution: float = RESOLUTION_M) -> Costmap:
    """The grid over the obstacles' `outlines` (each an (n, 2) array of points whose convex hull
    is the obstacle's footprint on the floor) and the points `around` (the start, the goal), with
    MARGIN_M of floor around them, up to MAP_REACH_M beyond the obstacles. A cell is occupied when
    any part of it touches an outline."""
    extra = np.array(around, dtype=float).reshape(-1, 2)
    points = np.vstack([*outlines, extra])
    low, high = points.min(axis=0) - MARGIN_M, points.max(axis=0) + MARGIN_M
    if outlines:
        solid = np.vstack(outlines)
        low = np.maximum(low, solid.min(axis=0) - MAP_REACH_M)
        high = np.minimum(high, solid.max(axis=0) + MAP_REACH_M)
    cols, rows = (np.ceil((high - low) / resolution).astype(int) + 1).tolist()
    occupied = np.zeros((rows, cols), dtype=bool)
    origin = (float(low[0]), float(low[1]))
    for outline in outlines:
        _fill(occupied, outline, origin, resolution)
    clearance = np.maximum(distance_transform_edt(~occupied) - HALF_DIAGONAL, 0.0) * resolution
    clearance[occupied] = 0.0
    return Costmap(origin, resolution, occupied, clearance)


def _fill(occupied: np.ndarray, outline: np.ndarray, origin: Point, resolution: float) -> None:
    """Mark the cells within half a cell's diagonal of the outline's convex hull."""
    pad = HALF_DIAGONAL * resolution
    try:
        equations = ConvexHull(outline).equations  # unit normal (a, b) and offset c: inside a x + b y + c <= 0
    except (QhullError, ValueError):  # a degenerate outline (a line, a point): its bounding box
        lo, hi = outline.min(axis=0), outline.max(axis=0)
        equations = np.array([[-1, 0, lo[0]], [1, 0, -hi[0]], [0, -1, lo[1]], [0, 1, -hi[1]]], dtype=float)
    rows, cols = occupied.shape
    c0, r0 = np.floor((outline.min(axis=0) - pad - origin) / resolution).astype(int)
    c1, r1 = np.ceil((outline.max(axis=0) + pad - origin) / resolution).astype(int)
    c0, r0, c1, r1 = max(c0, 0), max(r0, 0), min(c1, cols - 1), min(r1, rows - 1)
    if c0 > c1 or r0 > r1:
        return
    ys, xs = np.mgrid[r0:r1 + 1, c0:c1 + 1]
    px, py = origin[0] + xs * resolution, origin[1] + ys * resolution
    inside = np.ones(px.shape, dtype=bool)
    for a, b, c in equations:
        inside &= a * px + b * py + c <= pad
    occupied[r0:r1 + 1, c0:c1 + 1] |= inside


def cell_costs(costmap: Costmap, radius: float = FOOTPRINT_RADIUS_M, inflation: float = INFLATION_M) -> np.ndarray:
    """Each cell's cost factor: 0 in the open, rising linearly through the inflated band to
    INFLATION_COST at the base's radius and on past it (a cell of a start's or a goal's circle)."""
    return INFLATION_COST * np.clip((radius + inflation - costmap.clearance) / inflation, 0.0, None)


def plan_path(costmap: Costmap, start: Point, goal: Point, radius: float = FOOTPRINT_RADIUS_M,
              inflation: float = INFLATION_M) -> list[Point] | None:
    """The base's path from `start` to `goal` as waypoints (the start first, the goal last, the
    straight legs between them simplified), or None when no path exists (the goal in an
    obstacle, walled in, or off the map)."""
    if not (costmap.contains(start) and costmap.contains(goal)):
        return None
    open_cells = _open_cells(costmap, start, goal, radius)
    s, g = costmap.cell(start), costmap.cell(goal)
    if costmap.occupied[g] or not open_cells[g]:
        return None
    costs = cell_costs(costmap, radius, inflation)
    graph = _grid_graph(open_cells, costs, costmap.resolution)
    cols = open_cells.shape[1]
    _, predecessors = dijkstra(graph, directed=False, indices=s[0] * cols + s[1], return_predecessors=True)
    cells = _walk_back(predecessors, s[0] * cols + s[1], g[0] * cols + g[1])
    if cells is None:
        return None
    points = [start, *(costmap.centre(*divmod(index, cols)) for index in cells[1:-1]), goal]
    return shortcut(costmap, points, radius + inflation - SHORTCUT_SLACK_M)


def plan_approach(costmap: Costmap, start: Point, goal: Point, heading: float, radius: float = FOOTPRINT_RADIUS_M,
                  inflation: float = INFLATION_M) -> list[Point] | None:
    """`plan_path` whose last leg arrives along `heading` from APPROACH_M out: through the
    approach point when it stands clear of the lethal band and the leg from it comes no nearer
    to anything than the goal itself stands; the plain path when the start is that near, the
    path arrives so already, or there is no room for the approach."""
    direct = plan_path(costmap, start, goal, radius, inflation)
    if direct is None or math.dist(start, goal) <= APPROACH_M:
        return direct
    last = direct[-2]
    arriving = math.atan2(goal[1] - last[1], goal[0] - last[0])
    if math.dist(last, goal) >= APPROACH_M - 1e-9 and abs(math.remainder(arriving - heading, math.tau)) <= ALIGNED_RAD:
        return direct
    approach = (goal[0] - APPROACH_M * math.cos(heading), goal[1] - APPROACH_M * math.sin(heading))
    if not costmap.contains(approach) or costmap.clearance[costmap.cell(approach)] < radius:
        return direct
    if costmap.clearance_along(approach, goal) < min(radius, float(costmap.clearance[costmap.cell(goal)])) - 1e-9:
        return direct
    to_approach = plan_path(costmap, start, approach, radius, inflation)
    return direct if to_approach is None else [*to_approach, goal]


def _open_cells(costmap: Costmap, start: Point, goal: Point, radius: float) -> np.ndarray:
    """Cells the base's centre may pass: clear of the lethal band, or inside the base's own
    circle at the start or the goal and not an obstacle; the start's cell always."""
    rows, cols = costmap.occupied.shape
    ys, xs = np.mgrid[0:rows, 0:cols]
    px, py = costmap.origin[0] + xs * costmap.resolution, costmap.origin[1] + ys * costmap.resolution
    open_cells = costmap.clearance >= radius
    for x, y in (start, goal):
        open_cells |= (np.hypot(px - x, py - y) <= radius) & ~costmap.occupied
    open_cells[costmap.cell(start)] = True
    return open_cells


def _grid_graph(open_cells: np.ndarray, costs: np.ndarray, resolution: float) -> coo_matrix:
    """The 8-connected graph of the open cells: an edge's weight is its length times one plus
    the mean of its two cells' costs."""
    rows, cols = open_cells.shape
    index = np.arange(rows * cols).reshape(rows, cols)
    sources, targets, weights = [], [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        r0, r1 = 0, rows - dr
        c0, c1 = max(0, -dc), cols - max(0, dc)
        a = (slice(r0, r1), slice(c0, c1))
        b = (slice(r0 + dr, r1 + dr), slice(c0 + dc, c1 + dc))
        both = open_cells[a] & open_cells[b]
        sources.append(index[a][both])
        targets.append(index[b][both])
        weights.append(math.hypot(dr, dc) * resolution * (1.0 + (costs[a][both] + costs[b][both]) / 2))
    return coo_matrix((np.concatenate(weights), (np.concatenate(sources), np.concatenate(targets))),
                      shape=(rows * cols, rows * cols))


def _walk_back(predecessors: np.ndarray, source: int, target: int) -> list[int] | None:
    """The cells from `source` to `target` along Dijkstra's predecessors; None if unreached."""
    if target != source and predecessors[target] < 0:
        return None
    cells = [target]
    while cells[-1] != source:
        cells.append(int(predecessors[cells[-1]]))
    return cells[::-1] if len(cells) > 1 else [source, target]


def shortcut(costmap: Costmap, points: list[Point], wanted: float) -> list[Point]:
    """Line-of-sight simplification: from each kept point, the farthest later point a straight
    leg reaches without coming nearer to an obstacle than `wanted` or than the grid path it
    replaces came (whichever is less: a start or a goal inside the band keeps its way out)."""
    clear = [costmap.clearance[costmap.cell(p)] for p in points]
    kept, i = [points[0]], 0
    while i < len(points) - 1:
        j = len(points) - 1
        while j > i + 1:
            floor = min(wanted, min(clear[i:j + 1]))
            if costmap.clearance_along(points[i], points[j]) >= floor - 1e-9:
                break
            j -= 1
        kept.append(points[j])
        i = j
    return kept


def path_length(points: list[Point]) -> float:
    return sum(math.dist(a, b) for a, b in zip(points, points[1:]))
