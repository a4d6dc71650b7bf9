"""The simulated Nav2 planner's cost on this machine (docs/sim.md "The base's planner"): for each
scene, the base's path from 0.45 m before every piece's front to 0.45 m before every other
piece's front, planned as `navigate_to_pose` plans it (the obstacles' outlines read from the
MuJoCo world, the costmap, the path), with every door and drawer closed and then all open
(doors at the door assist's 1.75 rad, drawers fully out). Prints the wall time a goal (median,
90th percentile, max; milliseconds), split into reading the world, building the costmap and
planning, the grid's size, the legs a path has, the pairs with no path, and the 1-minute load.

Run: nice -n 5 .venv/bin/python bench/bench_base_planner.py [--scene store_groceries ...]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time

os.environ.setdefault("MUJOCO_GL", "egl")

from task_learning.world.scene import load_scene
from task_learning_sim.assists import DOOR_OPEN_RAD
from task_learning_sim.base_planner import build_costmap, plan_path
from task_learning_sim.furniture import DRAWER_TRAVEL, Receptacle
from task_learning_sim.scene_world import build_world
from task_learning_sim.simulator import Simulator

STANDOFF_M = 0.45


def before(piece: Receptacle) -> tuple[float, float]:
    x, y, yaw = piece.pose
    ahead = piece.depth / 2 + STANDOFF_M
    return x + ahead * math.cos(yaw), y + ahead * math.sin(yaw)


def open_all(sim: Simulator) -> None:
    for piece in sim.world.receptacles.values():
        if piece.joint:
            opened = DOOR_OPEN_RAD if piece.form == "cabinet" else DRAWER_TRAVEL * piece.depth
            sim.data.joint(piece.joint).qpos[0] = opened
    sim.run_for(0.02)


def measure(sim: Simulator, label: str) -> None:
    fronts = [before(piece) for piece in sim.world.receptacles.values()]
    reads, builds, plans, legs, missing, shape = [], [], [], [], 0, (0, 0)
    for start in fronts:
        for goal in fronts:
            if goal == start:
                continue
            began = time.perf_counter()
            outlines = sim.obstacle_outlines()
            read = time.perf_counter()
            costmap = build_costmap(outlines, [start, goal])
            built = time.perf_counter()
            path = plan_path(costmap, start, goal)
            planned = time.perf_counter()
            reads.append(read - began)
            builds.append(built - read)
            plans.append(planned - built)
            shape = costmap.occupied.shape
            if path is None:
                missing += 1
            else:
                legs.append(len(path) - 1)
    totals = sorted(r + b + p for r, b, p in zip(reads, builds, plans))
    print(f"  {label}: {len(totals)} goals, grid {shape[1]}x{shape[0]} cells; a goal "
          f"{1000 * statistics.median(totals):.0f} ms median, {1000 * totals[int(0.9 * len(totals))]:.0f} ms p90, "
          f"{1000 * totals[-1]:.0f} ms max (world {1000 * statistics.median(reads):.0f}, costmap "
          f"{1000 * statistics.median(builds):.0f}, path {1000 * statistics.median(plans):.0f} ms median); "
          f"legs {min(legs, default=0)}-{max(legs, default=0)} (median {statistics.median(legs) if legs else 0}); "
          f"no path {missing}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", nargs="+", default=["store_groceries", "tidy_kitchen"])
    args = parser.parse_args()
    print(f"load (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for scene in args.scene:
        sim = Simulator(build_world(load_scene(scene)))
        print(f"{scene}: {len(sim.world.receptacles)} pieces")
        measure(sim, "doors closed")
        open_all(sim)
        measure(sim, "doors and drawers open")
    print(f"load (1 min) {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
