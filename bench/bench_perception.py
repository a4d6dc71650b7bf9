"""Perception's per-frame cost: world-state build (AI2-THOR metadata -> WorldState message) and
publish (rclpy -> Fast DDS, one matched subscriber in another process), for tidy_kitchen and for a
generated 500-object scene. Pinned to one core; prints medians and the implied maximum rate.

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
from task_learning_nodes import convert

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


def bench_scene(name: str, metadata: dict, publisher, runs: int) -> dict[str, float]:
    build, publish, stamp_only = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        msg = convert.world_state_msg_from_metadata(metadata, backend="symbolic", scene=name)
        t1 = time.perf_counter()
        publisher.publish(msg)
        t2 = time.perf_counter()
        build.append(t1 - t0)
        publish.append(t2 - t1)
    # perception's cached path (world unchanged since the last frame): new stamp, publish
    for _ in range(runs):
        t0 = time.perf_counter()
        msg.header.stamp = convert.time_to_msg(time.time())
        publisher.publish(msg)
        stamp_only.append(time.perf_counter() - t0)
    total = median_ms(build) + median_ms(publish)
    return {"objects": len(metadata["objects"]), "build_ms": median_ms(build), "publish_ms": median_ms(publish),
            "total_ms": total, "max_hz": 1000.0 / total, "cached_ms": median_ms(stamp_only),
            "cached_max_hz": 1000.0 / median_ms(stamp_only)}


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
            "tidy_kitchen": SymbolicWorld(load_scene("tidy_kitchen")).metadata,
            "generated_500": SymbolicWorld(generate_scene(500, n_furniture=20, seed=0)).metadata,
        }
        print(f"perception bench: {args.runs} runs per scene, one core, {matched} subscriber(s) in another process")
        print(f"{'scene':<15}{'objects':>8}{'build ms':>10}{'publish ms':>12}{'total ms':>10}{'max Hz':>9}"
              f"{'cached ms':>11}{'cached Hz':>11}")
        results = {}
        for name, metadata in scenes.items():
            r = bench_scene(name, metadata, publisher, args.runs)
            results[name] = r
            print(f"{name:<15}{r['objects']:>8}{r['build_ms']:>10.2f}{r['publish_ms']:>12.2f}{r['total_ms']:>10.2f}"
                  f"{r['max_hz']:>9.0f}{r['cached_ms']:>11.2f}{r['cached_max_hz']:>11.0f}")
        hz = results["generated_500"]["max_hz"]
        print(f"500-object world state, rebuilt every frame: {hz:.0f} Hz max on one core "
              f"(target >= 30 Hz: {'met' if hz >= 30 else 'NOT met'})")
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
