"""The robot-skills layer in physics: a whole scene's expected goal done by the RobotSkillExecutor
against the MuJoCo-simulated Fetch, one object at a time, and the result read from `sim/status`.

    .venv/bin/python scripts/sim_skills_check.py --scene store_groceries [--grasp-weld] [--json out.json]

It starts `task-learning-sim` as its own process (real-time factor 0, no camera) and drives it as
the stack drives a robot: the executor's standard goals through RosGoalRunner's action clients,
the arm's IK on `/robot_description`. What it does NOT take from the stack is perception: object,
receptacle and handle positions come from the simulator's ground truth (`sim/ground_truth`), a
topic for tests only. So this checks the skills and the physics, not seeing.

The plan is the scene's expected goal, grouped by destination: for each place the objects go
(closable ones opened first), each object is picked where it stands and placed there; a closable
place is closed after its last object. Every navigation first goes to a point in front of the
piece, then to the stand-off pose (the base then faces the piece's front). Per object: success,
or the step that failed and why; then completion, assists, simulated time, wall time and the
real-time factor from `sim/status`.

`--direct` runs the same plan on a Simulator in this process (no ROS, the same goals and
controllers): what the tests and quick experiments use.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

ROOT = Path(__file__).resolve().parent.parent

from task_learning.perception.skills import SkillRequest, SkillResult  # noqa: E402
from task_learning.robot.placing import Place  # noqa: E402
from task_learning.robot.sequences import BasePose  # noqa: E402

Vec3 = tuple[float, float, float]
FRONT_POINT_M = 1.5
FRESH_TIMEOUT_S = 30.0


class Executor(Protocol):
    def execute(self, request: SkillRequest) -> SkillResult:
        ...


class GroundTruthView:
    """RobotView over the simulator's ground truth (tests only: see the module docstring).
    `focus` says what the next action is for: "approach" drives to a point in front of the
    piece (no grasp, place or handle geometry then: the executor goes to that point as given);
    otherwise the executor takes the grasp point, the release point and the handle from the
    same geometry (robot.placing) as it does from the robot's belief."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]], arm_place_above_m: float) -> None:
        self.snapshot = snapshot
        self.place_above = arm_place_above_m
        self.focus = "object"
        self.holding = ""
        self.placed: dict[str, int] = {}

    def object_position(self, object_id: str) -> Vec3 | None:
        truth = self.snapshot()
        if object_id in truth["objects"]:
            record = truth["objects"][object_id]
            x, y, z = record["position"]
            if self.focus == "approach":
                return self._front_of(truth["receptacles"][record["in"]]) if record["in"] else (x, y, 0.0)
            return (x, y, (record["top"] + record["bottom"]) / 2)
        piece = truth["receptacles"].get(object_id)
        if piece is None:
            return None
        if self.focus == "approach":
            return self._front_of(piece)
        cx, cy = piece["place"]["centre"]
        return (cx, cy, piece["place"]["floor"])

    def _front_of(self, piece: dict[str, Any]) -> Vec3:
        import math
        cx, cy = piece["place"]["centre"]
        return (cx + FRONT_POINT_M * math.cos(piece["yaw"]), cy + FRONT_POINT_M * math.sin(piece["yaw"]), 0.0)

    def height_of(self, object_id: str) -> float | None:
        record = self.snapshot()["objects"].get(object_id)
        return None if record is None or self.focus == "approach" else record["top"] - record["bottom"]

    def place_in(self, object_id: str) -> Place | None:
        piece = self.snapshot()["receptacles"].get(object_id)
        if piece is None or self.focus == "approach":
            return None
        (cx, cy), (hx, hy) = piece["place"]["centre"], piece["place"]["half"]
        floor, top = piece["place"]["floor"], piece["place"]["top"]
        rim = {"bin": piece["rim"], "drawer": top}.get(piece["form"], floor)
        return Place(cx, cy, piece["yaw"], hx, hy, floor, top, rim, piece["form"] == "cabinet",
                     self.placed.get(object_id, 0))

    def open_state(self, object_id: str) -> bool | None:
        piece = self.snapshot()["receptacles"].get(object_id, {})
        return not piece["closed"] if "closed" in piece else None

    def held(self) -> str | None:
        return self.holding or None

    def base_pose(self) -> BasePose | None:
        x, y, yaw = self.snapshot()["base"]
        return BasePose(x, y, yaw)

    def grasp_yaw(self, object_id: str) -> float | None:
        record = self.snapshot()["objects"].get(object_id)
        return None if record is None or self.focus != "object" else record.get("narrow_yaw")

    def grasp_width(self, object_id: str) -> float | None:
        record = self.snapshot()["objects"].get(object_id)
        return None if record is None or self.focus != "object" else record.get("narrow_width")

    def length_of(self, object_id: str) -> float | None:
        record = self.snapshot()["objects"].get(object_id)
        return None if record is None or self.focus == "approach" else record.get("long_width")

    def handle_of(self, object_id: str) -> Vec3 | None:
        piece = self.snapshot()["receptacles"].get(object_id)
        if piece is None or "handle" not in piece or self.focus == "approach":
            return None
        return tuple(piece["handle"])  # type: ignore[return-value]

    def front_of(self, object_id: str) -> BasePose | None:
        truth = self.snapshot()
        record = truth["objects"].get(object_id)
        piece = truth["receptacles"].get(record["in"] if record else object_id)
        if piece is None:
            return None
        return BasePose(piece["front"][0], piece["front"][1], piece["yaw"])

    def wait_for_view(self, timeout_s: float) -> bool:
        return True


@dataclass
class ObjectReport:
    object: str
    destination: str
    success: bool = False
    failed_step: str = ""
    why: str = ""
    ended_in: str = ""


@dataclass
class PlanReport:
    objects: list[ObjectReport] = field(default_factory=list)
    doors: dict[str, str] = field(default_factory=dict)  # receptacle -> "ok" or the failure


def _act(executor: Executor, view: GroundTruthView, skill: str, object_id: str, focus: str,
         settle: Callable[[], None]) -> SkillResult:
    view.focus = focus
    result = executor.execute(SkillRequest(skill, object_id))
    settle()
    return result


def _go(executor: Executor, view: GroundTruthView, object_id: str, focus: str, settle: Callable[[], None]) -> SkillResult:
    """To a point in front of the piece, then to the stand-off pose of the target."""
    first = _act(executor, view, "navigate", object_id, "approach", settle)
    if not first.success:
        return first
    return _act(executor, view, "navigate", object_id, focus, settle)


def _door(executor: Executor, view: GroundTruthView, skill: str, piece: str, settle: Callable[[], None]) -> str:
    for step, result in ((f"navigate to {piece}'s handle", _go(executor, view, piece, "handle", settle)),):
        if not result.success:
            return f"{step}: {result.error_message}"
    result = _act(executor, view, skill, piece, "handle", settle)
    if not result.success:
        return f"{skill}: {result.error_message}"
    if view.open_state(piece) != (skill == "open"):
        return f"{skill}: it is still {'closed' if skill == 'open' else 'open'}"
    return "ok"


def _move(executor: Executor, view: GroundTruthView, report: ObjectReport, settle: Callable[[], None]) -> None:
    steps: list[tuple[str, Callable[[], SkillResult]]] = [
        ("navigate to the object", lambda: _go(executor, view, report.object, "object", settle)),
        ("pick", lambda: _act(executor, view, "pick", report.object, "object", settle)),
        ("navigate to the place", lambda: _go(executor, view, report.destination, "place", settle)),
        ("place", lambda: _act(executor, view, "place", report.destination, "place", settle)),
    ]
    for name, step in steps:
        result = step()
        if name == "pick" and result.success:
            view.holding = report.object
        if name == "place" and result.success:
            view.holding = ""
            view.placed[report.destination] = view.placed.get(report.destination, 0) + 1
        if not result.success:
            report.failed_step, report.why = name, result.error_message
            return
    report.success = True


def run_plan(executor: Executor, view: GroundTruthView, preferences: dict[str, list[str]], closable: list[str],
             settle: Callable[[], None], say: Callable[[str], None] = print) -> PlanReport:
    """The scene's expected goal, destination by destination (see the module docstring)."""
    truth = view.snapshot()
    report = PlanReport()
    groups: dict[str, list[str]] = {}
    for item, acceptable in preferences.items():
        destination = next((r for r in acceptable if r in truth["receptacles"]), acceptable[0])
        groups.setdefault(destination, []).append(item)
    for destination, items in groups.items():
        if destination in closable:
            report.doors[f"open {destination}"] = _door(executor, view, "open", destination, settle)
            say(f"open {destination}: {report.doors[f'open {destination}']}")
        for item in items:
            entry = ObjectReport(item, destination)
            if view.holding:  # a failed place left something in the hand: put it down here first
                _act(executor, view, "place", destination, "place", settle)
                view.holding = ""
            _move(executor, view, entry, settle)
            entry.ended_in = view.snapshot()["objects"][item]["in"]
            if entry.success and entry.ended_in != destination:
                entry.success, entry.failed_step = False, "place"
                entry.why = f"released, but it came to rest in {entry.ended_in or 'no receptacle'}"
            report.objects.append(entry)
            say(f"{item} -> {destination}: " + ("ok" if entry.success else f"FAILED at {entry.failed_step}: {entry.why}"))
        if destination in closable:
            report.doors[f"close {destination}"] = _door(executor, view, "close", destination, settle)
            say(f"close {destination}: {report.doors[f'close {destination}']}")
    return report


# ---- in process (no ROS) -----------------------------------------------------------------------
def run_direct(scene: str, grasp_weld: bool, say: Callable[[str], None] = print,
               only: set[str] | None = None) -> tuple[PlanReport, dict[str, Any]]:
    """The plan on a Simulator in this process, goals run by test/sim/direct_runner.py."""
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

    started = time.monotonic()
    world = build_world(load_scene(scene))
    sim = Simulator(world, grasp_weld=grasp_weld)
    profile = load_profile("fetch")
    kinematics = ArmKinematics.for_arm(fetch_urdf(sim.model), profile.arm)
    view = GroundTruthView(lambda: ground_truth(sim), profile.arm.place_above_m)
    executor = RobotSkillExecutor(SkillSequencer(profile, kinematics), DirectGoalRunner(sim), view, MotionGate())
    report = run_plan(executor, view, _only(world.scene.preferences, only), list(world.scene.closable),
                      lambda: sim.run_for(0.5), say)
    wall = time.monotonic() - started
    status = {"sim_time_s": round(sim.time, 3), "wall_time_s": round(wall, 3),
              "real_time_factor": round(sim.time / wall, 3), "robot_goals": dict(sim.goal_counts),
              "assists": dict(sim.assists.counts),
              "completion": physics_completion(world, sim.model, sim.data).to_dict()}
    return report, status


def _only(preferences: dict[str, list[str]], only: set[str] | None) -> dict[str, list[str]]:
    """The objects named in `only` (or going to a place named there); all without it."""
    if not only:
        return preferences
    return {item: places for item, places in preferences.items() if item in only or places[0] in only}


def summary(scene: str, report: PlanReport, status: dict[str, Any]) -> dict[str, Any]:
    done = sum(entry.success for entry in report.objects)
    return {"scene": scene, "objects_placed": done, "objects": len(report.objects),
            "per_object": [entry.__dict__ for entry in report.objects], "doors": report.doors,
            "ground_truth_positions": True, **status}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scene", default="store_groceries")
    p.add_argument("--grasp-weld", action="store_true", help="the grasp weld assist on (sim/assists.py)")
    p.add_argument("--direct", action="store_true", help="in this process, no ROS")
    p.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "0") or 0))
    p.add_argument("--json", type=Path, help="write the report here too")
    p.add_argument("--verbose", action="store_true", help="say every goal and its result (ROS mode)")
    p.add_argument("--only", nargs="*", help="these objects, or the objects going to these places (default: all)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # test.sim.direct_runner, for --direct
    if args.direct:
        report, status = run_direct(args.scene, args.grasp_weld, only=set(args.only or ()))
    else:
        from sim_skills_ros import run_ros  # scripts/sim_skills_ros.py
        report, status = run_ros(args.scene, args.grasp_weld, args.domain, set(args.only or ()), args.verbose)
    out = summary(args.scene, report, status)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
