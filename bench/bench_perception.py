"""Perception's per-frame cost: world-state build (AI2-THOR metadata -> WorldState message) and
publish (rclpy -> Fast DDS, one matched subscriber in another process), for tidy_kitchen and for a
generated 500-object scene. Pinned to one core and measured in CPU time of the publishing thread
(so other load on the machine does not count); prints medians and the implied maximum rate.

Target: the 500-object state at >= 30 Hz on one core.

    .venv/bin/python bench/bench_perception.py [--runs 60]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from task_learning.world.generate import generate_scene
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld
from task_learning_interfaces.msg import WorldState
from task_learning_nodes.plumbing import convert

ROOT = Path(__file__).resolve().parent.parent
DOMAIN_ID = 41  # the bench's own graph
QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
SUBSCRIBER = """
import rclpy, sys
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from task_learning_interfaces.msg import WorldState
rclpy.init()
node = rclpy.create_node("bench_world_state_reader")
count = [0]
node.create_subscription(WorldState, "bench/world_state", lambda m: count.__setitem__(0, count[0] + 1),
    QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
print("ready", flush=True)
try:
    rclpy.spin(node)
except BaseException:
    pass
print(count[0], flush=True)
"""


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def clock() -> float:
    """CPU time of this thread: the cost on one core, whatever else the machine is running."""
    return time.thread_time()


def openable_near(world: SymbolicWorld) -> str:
    """An openable receptacle the robot has navigated to, for the action-per-frame measurement."""
    for record in world.metadata["objects"]:
        if record.get("openable") and record.get("receptacle"):
            world.step("NavigateToObject", objectId=record["objectId"])
            return record["objectId"]
    raise SystemExit("no openable receptacle in the scene")


def bench_scene(name: str, world: SymbolicWorld, publisher, runs: int) -> dict[str, float]:
    metadata = world.metadata
    full_build, full_pub = [], []
    for _ in range(runs):  # worst case: every object converted every frame
        t0 = clock()
        msg = convert.world_state_msg_from_metadata(metadata, backend="symbolic", scene=name)
        t1 = clock()
        publisher.publish(msg)
        t2 = clock()
        full_build.append(t1 - t0)
        full_pub.append(t2 - t1)
    # perception's path: an action per frame (open/close a container), WorldStateBuilder reuses
    # the objects that did not change
    target = openable_near(world)
    builder = convert.WorldStateBuilder(backend="symbolic")
    builder.build(world.metadata, scene=name)
    step_build, step_pub, rebuilt = [], [], []
    for i in range(runs):
        result = world.step("OpenObject" if i % 2 == 0 else "CloseObject", objectId=target)
        assert result["lastActionSuccess"], result["errorMessage"]
        t0 = clock()
        msg = builder.build(world.metadata, scene=name)
        t1 = clock()
        publisher.publish(msg)
        t2 = clock()
        step_build.append(t1 - t0)
        step_pub.append(t2 - t1)
        rebuilt.append(builder.rebuilt)
    full = median_ms(full_build) + median_ms(full_pub)
    step = median_ms(step_build) + median_ms(step_pub)
    return {"objects": len(metadata["objects"]), "build_ms": median_ms(full_build),
            "publish_ms": median_ms(full_pub), "total_ms": full, "max_hz": 1000.0 / full,
            "step_build_ms": median_ms(step_build), "step_total_ms": step, "step_max_hz": 1000.0 / step,
            "rebuilt": statistics.median(rebuilt)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env.setdefault("ROS_HOME", str(ROOT / ".ros"))
    reader = subprocess.Popen([sys.executable, "-c", SUBSCRIBER], env=env, stdout=subprocess.PIPE, text=True)
    context = Context()
    rclpy.init(context=context, domain_id=DOMAIN_ID)
    node = Node("bench_perception", context=context)
    publisher = node.create_publisher(WorldState, "bench/world_state", QOS)
    try:
        reader.stdout.readline()  # "ready"
        deadline = time.monotonic() + 10.0
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        matched = publisher.get_subscription_count()
        scenes = {
            "tidy_kitchen": SymbolicWorld(load_scene("tidy_kitchen")),
            "generated_500": SymbolicWorld(generate_scene(500, n_furniture=20, seed=0)),
        }
        print(f"perception bench: {args.runs} frames per scene, CPU time of one core (median), "
              f"{matched} subscriber(s) in another process")
        print("full = every object converted (metadata -> msg) + publish; "
              "action = one action per frame, unchanged objects reused (what perception does)")
        print(f"{'scene':<15}{'objects':>8}{'build ms':>10}{'publish ms':>12}{'full ms':>9}{'full Hz':>9}"
              f"{'rebuilt':>9}{'action ms':>11}{'action Hz':>11}")
        results = {}
        for name, world in scenes.items():
            r = bench_scene(name, world, publisher, args.runs)
            results[name] = r
            print(f"{name:<15}{r['objects']:>8}{r['build_ms']:>10.2f}{r['publish_ms']:>12.2f}{r['total_ms']:>9.2f}"
                  f"{r['max_hz']:>9.0f}{r['rebuilt']:>9.0f}{r['step_total_ms']:>11.2f}{r['step_max_hz']:>11.0f}")
        r = results["generated_500"]
        print(f"500-object world state: {r['max_hz']:.0f} Hz max rebuilding every object, "
              f"{r['step_max_hz']:.0f} Hz with an action per frame (target >= 30 Hz: "
              f"{'met' if min(r['max_hz'], r['step_max_hz']) >= 30 else 'NOT met'})")
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
        reader.send_signal(2)
        try:
            out, _ = reader.communicate(timeout=10)
            lines = out.strip().splitlines()
            if lines:
                print(f"subscriber received {lines[-1]} messages")
        except subprocess.TimeoutExpired:
            reader.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
