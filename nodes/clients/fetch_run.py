"""`task-learning run --backend fetch --synthetic`: one trial through the ROS graph with the
simulated Fetch, images flowing over real topics.

Starts the synthetic robot (camera topics + skill server), `task-learning bringup` with
perception on backend fetch, and (for +O conditions) the simulated operator, each its own OS
process; waits until the bridge's world state knows every object of the scene (the robot's
look-around); sends PerformTask to the planner; reports the measures with what came over the
camera topics; stops everything.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from task_learning.errors import TaskLearningError
from task_learning.world.scene import load_scene
from task_learning_interfaces.msg import WorldState
from task_learning_nodes.clients.demo import _start, _stop, perform_task
from task_learning_nodes.plumbing.fetch_params import FETCH_DEFAULTS

BIN = Path(sys.executable).parent


class GraphWatch:
    """Counts colour images on the camera topic and keeps the latest world state."""

    def __init__(self) -> None:
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = Node("fetch_run_watch", context=self.context)
        self.images = 0
        self.world: WorldState | None = None
        self.lock = threading.Lock()
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(WorldState, "world_state", self._on_world, latched)
        # reliable, as the bridge subscribes: a best-effort count misses the frames whose datagrams
        # a busy machine dropped (half of them, under load), so it said little about the stream
        self.node.create_subscription(Image, str(FETCH_DEFAULTS["color_topic"]), self._on_image,
                                      QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE))
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_world(self, msg: Any) -> None:
        with self.lock:
            self.world = msg

    def _on_image(self, _msg: Any) -> None:
        with self.lock:
            self.images += 1

    def wait_for_objects(self, count: int, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                world = self.world
            if world is not None and world.backend == "fetch" and len(world.objects) >= count:
                return world
            time.sleep(0.1)
        with self.lock:
            return self.world

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def run_synthetic_fetch(scene_name: str, condition: str, db: str, *, llm: str = "offline",
                        operator: str = "simulated", logs: str | None = None, timeout_s: float = 1800.0,
                        params: list[str] | None = None) -> dict[str, Any]:
    """`params`: extra `name:=value` parameters for the synthetic robot node."""
    scene = load_scene(scene_name)
    logdir = Path(logs) if logs else Path(tempfile.mkdtemp(prefix="fetch_run_"))
    logdir.mkdir(parents=True, exist_ok=True)
    cli = str(BIN / "task-learning")
    procs = [
        _start([sys.executable, "-m", "task_learning_nodes.nodes.synthetic_robot", "--ros-args",
                "-p", f"scene:={scene_name}", "-p", "publish_rate_hz:=3.0",
                *[a for p in (params or []) for a in ("-p", p)]],
               logdir / "synthetic_robot.log"),
        _start([cli, "bringup", "--scene", scene_name, "--backend", "fetch", "--db", str(db),
                "--param", "perception.synthetic:=true", "--param", f"goal_elicitation.llm:={llm}",
                "--param", f"planner.llm:={llm}",
                # an action now waits for the skill server and a new frame: give it the skill's time
                "--param", "planner.service_timeout_s:=90.0",
                # frames older than this are refused: 1 s by default; this run allows 3 s because
                # camera, bridge and five other nodes share a machine that may be busy
                "--param", "perception.max_frame_age_s:=3.0"], logdir / "bringup.log"),
    ]
    if condition.endswith("+O") and operator == "simulated":
        procs.append(_start([cli, "operator", "--simulated", scene_name, "--wait", "60", "--db", str(db)],
                            logdir / "operator.log"))
    watch = GraphWatch()
    try:
        world = watch.wait_for_objects(len(scene.objects), timeout_s=120.0)
        known = len(world.objects) if world is not None else 0
        if known < len(scene.objects):
            status = world.status if world is not None else "no world_state"
            raise TaskLearningError(f"the bridge knows {known} of {len(scene.objects)} objects after the "
                                    f"look-around ({status or 'no status'}); logs in {logdir}")
        images_before = watch.images
        with contextlib.redirect_stdout(sys.stderr):  # progress lines; stdout stays for the result
            result = perform_task(scene_name, scene.task, condition, timeout_s=timeout_s)
        with watch.lock:
            final = watch.world
        result.update(scene=scene_name, condition=condition, backend="fetch", synthetic=True, db=str(db),
                      objects_known=len(final.objects) if final is not None else 0,
                      world_state_status=final.status if final is not None else "no world_state",
                      images_seen_during_task=watch.images - images_before, logs=str(logdir))
        return result
    finally:
        watch.close()
        _stop(procs)
        for proc in procs:
            if proc.returncode not in (0, 130, -signal.SIGINT):
                print(f"note: {cast(list[str], proc.args)[1]} exited with {proc.returncode} (see {logdir})", file=sys.stderr)
