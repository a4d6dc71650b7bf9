"""End-to-end wall time of one task (default tidy_kitchen, STARS+O, offline model, simulated
operator), in-process and through the ROS graph (every node its own OS process), side by side.

    .venv/bin/python bench/bench_planning.py [--scene tidy_kitchen] [--condition STARS+O]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from task_learning.planning.session import RunSpec, run_in_process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scene", default="tidy_kitchen")
    parser.add_argument("--condition", default="STARS+O")
    args = parser.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", "57")
    from task_learning_nodes.clients.demo import trial_through_ros

    work = Path(tempfile.mkdtemp(prefix="bench_planning_"))
    started = time.perf_counter()
    metrics, _ = run_in_process(RunSpec(scene=args.scene, condition=args.condition, db=work / "local.sqlite"))
    local_s = time.perf_counter() - started
    started = time.perf_counter()
    trial2, _ = run_in_process(RunSpec(scene=args.scene, condition=args.condition, db=work / "local.sqlite"))
    local2_s = time.perf_counter() - started

    started = time.perf_counter()
    ros = trial_through_ros(args.scene, args.condition, work / "ros.sqlite", work, "bench1")
    ros_s = time.perf_counter() - started
    started = time.perf_counter()
    ros2 = trial_through_ros(args.scene, args.condition, work / "ros.sqlite", work, "bench2")
    ros2_s = time.perf_counter() - started

    print(f"{args.scene} {args.condition}, offline model, simulated operator, {os.cpu_count()} cores")
    print(f"{'path':<24}{'learn (s)':>10}{'Trial #2 (s)':>14}{'completion':>12}{'LLM calls':>11}")
    print(f"{'in-process':<24}{local_s:>10.1f}{local2_s:>14.2f}{metrics.completion:>11.1f}%"
          f"{metrics.usage.calls:>11}")
    print(f"{'ROS graph (incl. start)':<24}{ros_s:>10.1f}{ros2_s:>14.2f}{ros['completion']:>11.1f}%"
          f"{ros['calls']:>11}")
    print(f"Trial #2 LLM calls: in-process {trial2.usage.calls}, ROS {ros2['calls']}; "
          f"questions: in-process {trial2.questions}, ROS {ros2['yes_no']}")
    print(f"ratio ROS / in-process: learn {ros_s / local_s:.2f}x, Trial #2 {ros2_s / max(local2_s, 1e-9):.1f}x "
          f"(Trial #2 through ROS includes bringing the graph up and down)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
