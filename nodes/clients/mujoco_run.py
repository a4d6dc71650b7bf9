"""`task-learning run --backend mujoco`: one trial through the ROS graph against the simulated Fetch
in physics (the `task-learning-sim` program, robot-side: run, never imported).

1. The simulator writes the registry of the markers it textures on its world
   (`--check --write-marker-registry`), as an integrator measures the stickers of a kitchen.
2. Its own process serves the Fetch's standard interfaces; `task-learning bringup` runs the graph
   with perception on the `fetch` backend (the head camera, depth and `/tf` only), acting
   through the robot-skills executor of the `fetch` profile, every node on `/clock`; the simulated
   operator for +O conditions.
3. A survey: the furniture the first frames show is visited through the standard interfaces
   (NavigateToPose to its stand-off pose, PointHead at it), so the camera sees what stands in it,
   as a robot explores a kitchen before it is asked to tidy it.
4. PerformTask; then the result with `completion` from the simulator's `sim/status` (physics:
   scoring only, perception never reads it), the goals per interface, assists, simulated and
   wall time. `truth.jsonl` in the logs: each change of a door, an object's place or the hand,
   as the simulator has it and as perception believes it (run_truth).
"""
from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from task_learning.errors import TaskLearningError
from task_learning.perception.survey import View, piece_views
from task_learning.robot.gate import MotionGate
from task_learning.robot.goals import NavigateGoal, Step, TrajectoryGoal
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import RobotProfile, load_profile
from task_learning.robot.sequences import BasePose, SkillSequencer
from task_learning.world.scene import load_scene
from task_learning_interfaces.msg import WorldState
from task_learning_nodes.clients.demo import _start, _stop, perform_task
from task_learning_nodes.clients.fetch_run import BIN, GraphWatch
from task_learning_nodes.clients.run_truth import TruthLog
from task_learning_nodes.robot.runner import RosGoalRunner

SIM = "task-learning-sim"
NODES_WITH_TIME = ("perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner")
TIMEOUT_MARGIN = 1.2
MAX_BAG_S = 86_400.0
LEVEL_TILT_RAD = 0.1  # the second sweep's tilt (the profile's first looks down at the floor)
TORSO_MOVE_S = 4.0    # the Fetch's torso lifts ~0.1 m/s: its whole travel in 4 s
TIME_LIMIT_S = 10_800.0  # wall seconds for the task (a whole scene at a real-time factor of 0.5 took ~1 h)
SETTLE_WAIT_S = 120.0  # wall seconds for a view's frames (at a real-time factor of 0.1, 2 frames take ~10 s)


class SimWatch(GraphWatch):
    """GraphWatch plus the simulator's latched `sim/status` (for the result only) and, when
    `truth` is given, its `sim/ground_truth` beside perception's belief in that log (run_truth)."""

    def __init__(self, truth: TruthLog | None = None) -> None:
        # before GraphWatch starts spinning: its world_state callback (_on_world) records frames
        self.status: dict[str, Any] = {}
        self.frame_stamps: collections.deque[float] = collections.deque(maxlen=64)
        self.truth = truth
        super().__init__()
        # the survey's goal timeouts in simulated seconds, as the stack's nodes count them (/clock)
        self.node.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(String, "sim/status", self._on_status, latched)
        self.robot_description = ""
        self.node.create_subscription(String, "/robot_description", self._on_description, latched)
        if truth is not None:
            self.node.create_subscription(String, "sim/ground_truth", self._on_truth, latched)

    def _on_truth(self, msg: Any) -> None:
        if self.truth is not None:
            self.truth.truth(json.loads(msg.data))

    def _on_description(self, msg: Any) -> None:
        with self.lock:
            self.robot_description = str(msg.data)

    def _on_world(self, msg: Any) -> None:
        # the base's pose carries the stamp of the camera frame perception last used: a new stamp
        # is a new frame looked at (world_state itself is republished on a timer, frame or not)
        stamp = msg.robot_pose_map.header.stamp
        seen = float(stamp.sec) + float(stamp.nanosec) * 1e-9
        with self.lock:
            self.world = msg
            if msg.robot_pose_map.header.frame_id and (not self.frame_stamps or seen > self.frame_stamps[-1]):
                self.frame_stamps.append(seen)
        if self.truth is not None:
            self.truth.belief(seen, {o.object_id: o.is_open if _open_known(o) else None for o in msg.objects if o.openable},
                              {o.object_id: (list(o.parent_receptacles) or [""])[0] for o in msg.objects if o.pickupable},
                              list(msg.held_object_ids))

    def now_s(self) -> float:
        """The watcher's clock in seconds: simulated time (it runs on /clock)."""
        return float(self.node.get_clock().now().nanoseconds) * 1e-9

    def wait_for_frames(self, after_s: float, count: int, timeout_s: float) -> bool:
        """Wait until perception has used `count` camera frames stamped after `after_s` (the
        watcher's clock); False at the (wall) deadline."""
        return self.wait_for(lambda: sum(1 for s in self.frame_stamps if s > after_s) >= count, timeout_s)

    def _on_status(self, msg: Any) -> None:
        with self.lock:
            self.status = json.loads(msg.data)

    def wait_for(self, what: Any, timeout_s: float) -> bool:
        """Wait until `what()` (called with the lock held) is true; False at the deadline."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if what():
                    return True
            time.sleep(0.1)
        return False


def _open_known(thing: Any) -> bool:
    """Whether perception has seen the piece's door (its `openStateKnown`, in `extra`)."""
    return next((kv.value != "false" for kv in thing.extra if kv.key == "openStateKnown"), True)


def write_registry(scene: str, path: Path) -> None:
    """The simulator's marker registry for `scene` (one line naming the problem when it cannot)."""
    done = subprocess.run([str(BIN / SIM), "--scene", scene, "--check", "--write-marker-registry", str(path)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise TaskLearningError(lines[-1] if lines else f"{SIM} exited with {done.returncode}")


def _base(world: WorldState) -> BasePose | None:
    pose = world.robot_pose_map
    if not pose.header.frame_id:
        return None
    q = pose.pose.orientation
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    return BasePose(pose.pose.position.x, pose.pose.position.y, yaw)


def _run_steps(runner: RosGoalRunner, watch: SimWatch, steps: list[Any], label: str, failures: list[str],
               settle_frames: int) -> int:
    """Send `steps` one at a time (the first failure ends them); after each, wait until
    perception has used `settle_frames` camera frames taken after it ended (it has looked from
    there: world states alone come on a timer, and a frame in flight was taken on the way).
    Returns the goals sent."""
    sent = 0
    for step in steps:
        sent += 1
        outcome = runner.run(step.goal)
        if outcome.status != "succeeded":
            failures.append(f"{label}: {step.why}: {outcome.status} {outcome.message}".strip())
            return sent
        watch.wait_for_frames(watch.now_s(), settle_frames, timeout_s=SETTLE_WAIT_S)
    return sent


def look_around(watch: SimWatch, runner: RosGoalRunner, profile: RobotProfile, failures: list[str],
                settle_frames: int) -> int:
    """From where the robot stands: the head through the profile's sweep, facing ahead, then
    turned about (the sweep alone covers the front half). Returns the goals sent."""
    sequencer = SkillSequencer(profile)
    with watch.lock:
        base = _base(watch.world) if watch.world is not None else None
    x, y, yaw = (base.x, base.y, base.yaw) if base is not None else (0.0, 0.0, 0.0)
    goals = 0
    for turn in (0.0, math.pi):
        if turn:
            heading = math.atan2(math.sin(yaw + turn), math.cos(yaw + turn))
            goal = NavigateGoal(profile.base.navigate_action, profile.base.map_frame, (x, y, 0.0), heading,
                                profile.timeouts.navigate_s)
            goals += _run_steps(runner, watch, [Step(goal, "turn about")], "look around", failures, settle_frames)
        sweep = sequencer.look_around()
        # and once more with the head level: what stands tall across the room is above the sweep
        level = LEVEL_TILT_RAD if profile.head.tilt_down_positive else -LEVEL_TILT_RAD
        sweep += [sequencer.head_to(float(pan), level, f"look around, head level ({i + 1})")
                  for i, pan in enumerate(profile.head.look_around_pans)]
        goals += _run_steps(runner, watch, sweep, "look around", failures, settle_frames)
    return goals


def _front(pose: Any) -> tuple[float, float]:
    """The horizontal way a piece's front faces: its pose in the world state is its marker's frame
    at its centre, z out of its front (REP-103 `map`); the z axis from the quaternion (x, y, z, w)."""
    q = pose.orientation
    return 2 * (q.x * q.z + q.w * q.y), 2 * (q.y * q.z - q.w * q.x)


def _known_pieces(watch: SimWatch) -> list[tuple[str, Any]]:
    with watch.lock:
        world = watch.world
    return [(o.object_id, o.pose_map.pose) for o in (world.objects if world else []) if _is_piece(o)]


def _known_things(watch: SimWatch) -> set[str]:
    """Ids of what perception knows that is not furniture."""
    with watch.lock:
        world = watch.world
    return {o.object_id for o in (world.objects if world else []) if not _is_piece(o)}


def _is_piece(thing: Any) -> bool:
    """A place to look into: furniture (a receptacle that is not picked up), or a container one
    could carry standing on its own (a bag on the floor: where the groceries are). A mug or a plate
    on a piece is looked at with that piece."""
    return bool(thing.receptacle and (not thing.pickupable or not thing.parent_receptacles))


def _view_steps(profile: RobotProfile, sequencer: SkillSequencer, view: View, torso: float | None) -> list[Step]:
    """A survey view as goals: drive there, lift the torso (when it is not where `torso` says it
    is) and point the head at the view's target."""
    steps = [Step(NavigateGoal(profile.base.navigate_action, profile.base.map_frame, (*view.base[:2], 0.0),
                               view.base[2], profile.timeouts.navigate_s), f"drive before its front ({view.why})")]
    if profile.torso is not None and torso != view.torso:
        steps.append(Step(TrajectoryGoal(profile.torso.trajectory_action, (profile.torso.joint,),
                                         (((view.torso,), TORSO_MOVE_S),), profile.timeouts.torso_s, "torso"),
                          "lift the torso"))
    return steps + sequencer.look_at(view.target, BasePose(*view.base))


def _ready_steps(watch: SimWatch, profile: RobotProfile, home: BasePose | None) -> list[Step]:
    """Back to where the survey started (open floor), and the arm from its tucked pose to the
    carry pose there: the stack's first drive takes the arm to the carry pose from where it is,
    and from the tucked pose beside a table that swing hits the table. Nothing without the
    robot's description (no IK) or the start pose."""
    with watch.lock:
        urdf = watch.robot_description
    if home is None or not urdf or profile.arm.mode != "ik":
        return []
    kinematics = ArmKinematics.for_arm(urdf, profile.arm)
    drive = Step(NavigateGoal(profile.base.navigate_action, profile.base.map_frame, (home.x, home.y, 0.0), home.yaw,
                              profile.timeouts.navigate_s), "back to where the survey started")
    return [drive] + SkillSequencer(profile, kinematics).carry()


def survey(watch: SimWatch, profile: RobotProfile, *, settle_frames: int = 2) -> dict[str, Any]:
    """Look around, then visit every piece of furniture perception knows, and the pieces first
    seen on the way, until none is left: each from the views `piece_views` plans (close, the
    camera as high as the torso lifts it, looking into a bag, at a table's top). Returns what it
    did (goals, failures)."""
    runner = RosGoalRunner(watch.node, profile, MotionGate())
    sequencer = SkillSequencer(profile)
    failures: list[str] = []
    with watch.lock:
        home = _base(watch.world) if watch.world is not None else None
    goals = look_around(watch, runner, profile, failures, settle_frames)
    print(f"survey: after the look-around: {', '.join(sorted(_known_things(watch))) or 'nothing'}",
          file=sys.stderr, flush=True)
    visited: list[str] = []
    views: list[dict[str, Any]] = []  # per view: what perception knew after it that it did not before
    torso: float | None = None
    torso_max = profile.torso.limits[1] if profile.torso is not None else 0.0
    while True:
        left = [(object_id, pose) for object_id, pose in _known_pieces(watch) if object_id not in visited]
        if not left:
            break
        with watch.lock:
            here = _base(watch.world) if watch.world is not None else None
        # the nearest next: around the ring, not across the room and back
        object_id, pose = min(left, key=lambda piece: math.hypot(piece[1].position.x - here.x,
                                                                 piece[1].position.y - here.y)) \
            if here is not None else left[0]
        visited.append(object_id)
        c = pose.position
        for view in piece_views((c.x, c.y, c.z), _front(pose), torso_max):
            failed, before = len(failures), _known_things(watch)
            goals += _run_steps(runner, watch, _view_steps(profile, sequencer, view, torso), object_id, failures,
                                settle_frames)
            torso = view.torso if len(failures) == failed else None  # after a failure: not known
            new = sorted(_known_things(watch) - before)
            views.append({"piece": object_id, "view": view.why, "failed": len(failures) > failed, "new": new})
            print(f"survey: {object_id}, {view.why}: {'failed; ' if len(failures) > failed else ''}"
                  f"new {', '.join(new) or 'nothing'}", file=sys.stderr, flush=True)
    goals += _run_steps(runner, watch, _ready_steps(watch, profile, home), "get ready", failures, 0)
    with watch.lock:
        objects = list(watch.world.objects) if watch.world is not None else []
    return {"pieces_visited": len(visited), "goals": goals, "failures": failures, "views": views,
            "objects_known_after": sum(1 for o in objects if not _is_piece(o)),
            "pieces_known_after": sum(1 for o in objects if _is_piece(o))}


def _bringup(scene: str, db: str, llm: str, registry: Path, profile: RobotProfile) -> list[str]:
    timeout = round(profile.longest_action_s() * TIMEOUT_MARGIN, 1)
    params = {"perception.robot": profile.name, "perception.marker_registry": str(registry),
              "goal_elicitation.llm": llm, "planner.llm": llm, "planner.action_timeout_s": timeout,
              # frames up to 3 s old: camera, bridge and the other nodes share a busy 2-core machine
              "perception.max_frame_age_s": 3.0,
              **{f"{name}.use_sim_time": "true" for name in NODES_WITH_TIME}}
    if scene.endswith((".yaml", ".yml")):  # a scene file of one's own (the tests' short scene)
        params["planner.allow_scene_paths"] = "true"
    cmd = [str(BIN / "task-learning"), "bringup", "--scene", scene, "--backend", "fetch", "--db", db]
    for key, value in params.items():
        cmd += ["--param", f"{key}:={value}"]
    return cmd


class BagRecording:
    """The head camera, depth, camera info, /tf and /tf_static recorded into a rosbag2 (MCAP) in a
    thread, from when the robot is up until `stop` (task-learning bag record's recorder)."""

    def __init__(self, out: str) -> None:
        from task_learning_nodes.clients.bag_tools import record

        self.out, self.error = out, ""
        self.counts: dict[str, int] = {}
        self._stop = threading.Event()
        topics = ["/head_camera/rgb/image_raw", "/head_camera/depth_registered/image_raw",
                  "/head_camera/rgb/camera_info", "/tf", "/tf_static"]

        def work() -> None:
            try:
                self.counts = record(out, topics, duration_s=MAX_BAG_S, stop=self._stop)
            except TaskLearningError as exc:
                self.error = str(exc)

        self._thread = threading.Thread(target=work, name="bag", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=60.0)
        return {"bag": self.out, "messages": self.counts, **({"error": self.error} if self.error else {})}


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of one process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            kids = [int(k) for k in task.read_text().split()]
            found += kids
            todo += kids
    return found


def _node_name(pid: int) -> str:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    return next((arg.rsplit(".", 1)[-1] for arg in args if "task_learning_nodes.nodes." in arg), Path(args[0]).name)


def cpu_split(procs: list[subprocess.Popen]) -> dict[str, float]:
    """CPU seconds (user + system) so far of the simulator (physics, rendering and its ROS
    publishing: one process), each node of the graph, the operator and this process (the
    runner: survey, bag recording, watching). Processes gone are left out."""
    out: dict[str, float] = {}
    for proc in procs:
        args = cast(list[str], proc.args)
        name = "operator" if "operator" in args else Path(args[0]).name
        try:
            out[name] = _proc_cpu(proc.pid)
            for child in _descendants(proc.pid):
                node = _node_name(child)
                out[node] = out.get(node, 0.0) + _proc_cpu(child)
        except (OSError, ValueError, IndexError):
            continue
    out["runner"] = _proc_cpu(os.getpid())
    return {name: round(value, 1) for name, value in out.items()}


def run_mujoco(scene_name: str, condition: str, db: str, *, llm: str = "offline", operator: str = "simulated",
               logs: str | None = None, time_limit_s: float = TIME_LIMIT_S, real_time_factor: float = 1.0,
               camera_rate: float = 2.0, bag: str | None = None, grasp_weld: bool = False) -> dict[str, Any]:
    """`grasp_weld`: the simulator's grasp assist (docs/sim.md; counted in `assists`).
    `time_limit_s`: the task (after the survey) is cancelled after this much wall time; the
    result then says `stopped`, its completion read from the physics at that moment."""
    scene = load_scene(scene_name)
    profile = load_profile("fetch")
    logdir = Path(logs) if logs else Path(tempfile.mkdtemp(prefix="mujoco_run_"))
    logdir.mkdir(parents=True, exist_ok=True)
    registry = logdir / "markers.yaml"
    write_registry(scene_name, registry)
    wall_started = time.monotonic()
    procs = [_start([str(BIN / SIM), "--robot", "fetch", "--scene", scene_name, "--real-time-factor",
                     str(real_time_factor), "--camera-rate", str(camera_rate), *(["--grasp-weld"] if grasp_weld else [])],
                    logdir / "sim.log"),
             _start(_bringup(scene_name, str(db), llm, registry, profile), logdir / "bringup.log")]
    if condition.endswith("+O") and operator == "simulated":
        procs.append(_start([str(BIN / "task-learning"), "operator", "--simulated", scene_name, "--wait", "60",
                             "--db", str(db)], logdir / "operator.log"))
    truth = TruthLog(logdir / "truth.jsonl")
    watch = SimWatch(truth)
    try:
        result = _trial(watch, scene, condition, profile, time_limit_s, logdir, wall_started,
                      dict(scene=scene_name, db=str(db), llm=llm, real_time_factor_limit=real_time_factor,
                           camera_rate=camera_rate, grasp_weld=grasp_weld), bag)
        result["cpu_s"] = cpu_split(procs)
        return result
    finally:
        watch.close()
        truth.close()
        _stop(procs)
        for proc in procs:
            if proc.returncode not in (0, 130, -signal.SIGINT):
                print(f"note: {Path(cast(list[str], proc.args)[0]).name} exited with {proc.returncode} "
                      f"(see {logdir})", file=sys.stderr)


def _trial(watch: SimWatch, scene: Any, condition: str, profile: RobotProfile, timeout_s: float, logdir: Path,
           wall_started: float, extra: dict[str, Any], bag: str | None) -> dict[str, Any]:
    if not watch.wait_for(lambda: watch.world is not None and watch.world.backend == "fetch"
                          and watch.world.robot_pose_map.header.frame_id != "", timeout_s=180.0):
        status = watch.world.status if watch.world is not None else "no world_state"
        raise TaskLearningError(f"perception used no camera frame within 180 s ({status or 'no status'}); "
                                f"logs in {logdir}")
    recording = BagRecording(bag) if bag else None
    try:
        surveyed = survey(watch, profile)
        if not surveyed["objects_known_after"] + surveyed["pieces_known_after"]:
            raise TaskLearningError(f"perception saw nothing in the look-around and survey ({surveyed['failures']}); "
                                    f"logs in {logdir}")
        result = _perform(watch, scene, condition, timeout_s, extra)
    finally:
        if recording is not None:
            extra["recording"] = recording.stop()
    return _report(watch, scene, condition, result, surveyed, logdir, wall_started, extra)


def _perform(watch: SimWatch, scene: Any, condition: str, timeout_s: float, extra: dict[str, Any]) -> dict[str, Any]:
    with watch.lock:
        extra["robot_goals_before_task"] = dict(watch.status.get("robot_goals", {}))
    with contextlib.redirect_stdout(sys.stderr):  # progress lines; stdout stays for the result
        return perform_task(extra["scene"], scene.task, condition, timeout_s=timeout_s, cancel_at_timeout=True)


def _report(watch: SimWatch, scene: Any, condition: str, result: dict[str, Any], surveyed: dict[str, Any],
            logdir: Path, wall_started: float, extra: dict[str, Any]) -> dict[str, Any]:
    pieces = sum(1 for o in scene.objects if not o.get("parentReceptacles"))
    # the simulator publishes its status every simulated second: take one from after the task
    with watch.lock:
        seen_sim_time = float(watch.status.get("sim_time_s", 0.0))
    watch.wait_for(lambda: float(watch.status.get("sim_time_s", 0.0)) > seen_sim_time, timeout_s=30.0)
    with watch.lock:
        status, final = dict(watch.status), watch.world
    physics = status.get("completion", {})
    result.update(
        condition=condition, backend="mujoco", **extra,
        # a task cancelled at its time limit has no measure of its own (the planner stopped mid-way)
        completion_believed=None if result.get("stopped") else result["completion"], completion=physics.get("percent"),
        satisfied=physics.get("satisfied"), assertions=physics.get("total"),
        completion_failures=physics.get("failures", []), completion_source=physics.get("completion_source", ""),
        robot_goals=status.get("robot_goals", {}),
        assists=status.get("assists", {}), sim_time_s=status.get("sim_time_s"),
        real_time_factor=status.get("real_time_factor"), camera_frames=status.get("camera_frames"),
        wall_time_s=round(time.monotonic() - wall_started, 1), survey=surveyed, furniture=pieces,
        objects_known=sum(1 for o in final.objects if not _is_piece(o)) if final is not None else 0,
        world_state_status=final.status if final is not None else "no world_state", logs=str(logdir))
    return result
