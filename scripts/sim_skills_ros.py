"""scripts/sim_skills_check.py's ROS half: `task-learning-sim` started as its own process, the
RobotSkillExecutor's goals sent by RosGoalRunner's action clients (as the stack's perception node
sends them), the arm's IK built from `/robot_description`; positions from `sim/ground_truth`
(tests only), the result from `sim/status`.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String

from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.gate import MotionGate
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import SkillSequencer
from task_learning.world.scene import load_scene
from task_learning_nodes.plumbing.qos import latched
from task_learning_nodes.robot.runner import RosGoalRunner

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120.0
FRESH_TIMEOUT_S = 30.0
SETTLE_SIM_S = 0.5


class Latest:
    """The newest message of a JSON topic, and a wait for one newer than a simulated time."""

    def __init__(self) -> None:
        self.value: dict[str, Any] | None = None
        self.changed = threading.Condition()

    def put(self, msg: String) -> None:
        with self.changed:
            self.value = json.loads(msg.data)
            self.changed.notify_all()

    def wait(self, newer_than: float = -1.0, timeout_s: float = FRESH_TIMEOUT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while self.value is None or float(self.value.get("sim_time_s", 0.0)) <= newer_than:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit("sim_skills_check: the simulator stopped publishing (is it running?)")
                self.changed.wait(left)
            return self.value


def start_sim(scene: str, grasp_weld: bool, domain: int) -> subprocess.Popen[bytes]:
    command = [str(ROOT / ".venv" / "bin" / "task-learning-sim"), "--scene", scene, "--real-time-factor", "0",
               "--camera-rate", "0"] + (["--grasp-weld"] if grasp_weld else [])
    return subprocess.Popen(command, env={**os.environ, "ROS_DOMAIN_ID": str(domain)}, start_new_session=True)


class _Logged:
    """A GoalRunner that says each goal and how it ended (--verbose)."""

    def __init__(self, runner: RosGoalRunner, truth: Latest) -> None:
        self.runner, self.truth = runner, truth

    def run(self, goal: Any) -> Any:
        outcome = self.runner.run(goal)
        when = (self.truth.value or {}).get("sim_time_s")
        print(f"    {goal.kind} {getattr(goal, 'final', '')} -> {outcome.status} {outcome.code} {outcome.message[:80]} "
              f"{outcome.gripper or ''} (sim {when} s)", file=sys.stderr, flush=True)
        return outcome


def run_ros(scene: str, grasp_weld: bool, domain: int, only: set[str], verbose: bool = False
            ) -> tuple[Any, dict[str, Any]]:
    from sim_skills_check import GroundTruthView, _only, run_plan  # scripts/, beside this file

    os.environ["ROS_DOMAIN_ID"] = str(domain)
    process = start_sim(scene, grasp_weld, domain)
    rclpy.init()
    node = Node("sim_skills_check")
    truth, status, description = Latest(), Latest(), threading.Event()
    urdf: list[str] = []

    def on_description(msg: String) -> None:
        urdf.append(msg.data)
        description.set()

    node.create_subscription(String, "sim/ground_truth", truth.put, latched())
    node.create_subscription(String, "sim/status", status.put, latched())
    node.create_subscription(String, "robot_description", on_description, latched())
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        if not description.wait(START_TIMEOUT_S):
            raise SystemExit("sim_skills_check: no /robot_description from the simulator")
        first = truth.wait(timeout_s=START_TIMEOUT_S)
        started_sim, started_wall = float(first["sim_time_s"]), time.monotonic()
        profile = load_profile("fetch")
        kinematics = ArmKinematics.for_arm(urdf[0], profile.arm)
        gate = MotionGate()
        view = GroundTruthView(lambda: truth.value or first, profile.arm.place_above_m)
        runner = RosGoalRunner(node, profile, gate)
        skills = RobotSkillExecutor(SkillSequencer(profile, kinematics), _Logged(runner, truth) if verbose else runner,
                                    view, gate)

        def settle() -> None:
            truth.wait(float((truth.value or first)["sim_time_s"]) + SETTLE_SIM_S)

        report = run_plan(skills, view, _only(load_scene(scene).preferences, only), list(load_scene(scene).closable), settle,
                          lambda line: print(line, file=sys.stderr, flush=True))
        final = status.wait(float((truth.value or first)["sim_time_s"]))
        wall = time.monotonic() - started_wall
        simulated = float(final["sim_time_s"]) - started_sim
        out = {**final, "check_sim_time_s": round(simulated, 3), "check_wall_time_s": round(wall, 3),
               "check_real_time_factor": round(simulated / wall, 3) if wall > 0 else 0.0}
        return report, out
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
