"""A GoalRunner that runs the robot-skills layer's goals on a Simulator in this process, for tests:
each goal goes to the same Simulator method the ROS action server calls, and the physics steps
until it ends (no ROS graph, no wall-clock pacing). The whole-stack path, through the action
servers, is scripts/sim_skills_check.py's.
"""
from __future__ import annotations

import numpy as np

from task_learning.robot.goals import GoalOutcome, RobotGoal
from task_learning_sim.base_controller import NAV_CODES, NavOutcome
from task_learning_sim.simulator import CONTROLLERS, Simulator, occupied_by
from task_learning_sim.trajectory_controller import Trajectory, TrajectoryCode, TrajectoryRefused

STEP = 10  # physics steps between checks


class DirectGoalRunner:
    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def _until(self, done, timeout_s: float) -> bool:
        deadline = self.sim.time + timeout_s
        while not done():
            if self.sim.time > deadline:
                return False
            self.sim.step(STEP)
        return True

    def run(self, goal: RobotGoal) -> GoalOutcome:
        sim = self.sim
        if goal.kind == "navigate":
            x, y, _ = goal.position
            if piece := occupied_by(sim.world, x, y):
                return GoalOutcome("aborted", code=206, message=f"inside {piece}")
            nav = sim.navigate(x, y, goal.yaw)
            if not self._until(lambda: nav.outcome is not NavOutcome.RUNNING, goal.timeout_s):
                sim.base.cancel()
                return GoalOutcome("timeout")
            if nav.outcome is NavOutcome.SUCCEEDED:
                return GoalOutcome("succeeded", code=0)
            return GoalOutcome("aborted", code=NAV_CODES.get(nav.outcome, 9000), message=nav.outcome.value)
        if goal.kind == "point_head":
            x, y, z = goal.target
            run = sim.point_head(np.array([x, y, z]), goal.min_duration_s)
        elif goal.kind == "trajectory":
            controller = goal.server.split("/")[0]
            if controller not in CONTROLLERS:
                return GoalOutcome("server_missing")
            trajectory = Trajectory(list(goal.joints), np.array([t for _, t in goal.points]),
                                    np.array([p for p, _ in goal.points]))
            try:
                run = sim.follow(controller, trajectory)
            except TrajectoryRefused as refused:
                return GoalOutcome("aborted", code=int(refused.code), message=str(refused))
        elif goal.kind == "gripper":
            grip = sim.grip(goal.position, goal.max_effort)
            if not self._until(lambda: grip.done, goal.timeout_s):
                return GoalOutcome("timeout")
            status = "succeeded" if grip.reached_goal or grip.stalled else "aborted"
            return GoalOutcome(status, gripper=(grip.position, grip.stalled, grip.reached_goal))
        else:
            return GoalOutcome("server_missing")
        if not self._until(lambda: run.done, goal.timeout_s):
            sim.cancel_trajectory(run)
            return GoalOutcome("timeout")
        code = int(run.code) if run.code is not None else 0
        return GoalOutcome("succeeded" if run.code is TrajectoryCode.SUCCESSFUL else "aborted", code=code,
                           message=run.message)
