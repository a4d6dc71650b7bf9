"""What the simulator's `/clock` rate costs a node that only waits (docs/sim.md, The interfaces).

Every node of the stack runs on simulated time (`use_sim_time`), so its executor wakes for each
`/clock` message, work or not. Here the simulator (store_groceries, no camera, at most real time)
publishes `/clock` at each rate in turn while idle nodes of the stack's shape (`run_node`: its
MultiThreadedExecutor spun in slices, the diagnostics timer) subscribe to it; the figure is an idle
node's CPU seconds per simulated second, and the simulator's, side by side, with their ratio.

Run: .venv/bin/python bench/bench_clock_rate.py [--rates 100 25] [--seconds 60] [--nodes 2]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def idle_node() -> int:
    """One node that does nothing but run on simulated time, as the stack's nodes do."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from task_learning_nodes.plumbing.node_base import run_node

    return run_node(lambda: Node("idle", parameter_overrides=[Parameter("use_sim_time", value=True)]),
                    ["idle"], name="idle")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def sim_time(status_file: Path) -> float:
    try:
        return float(json.loads(status_file.read_text())["sim_time_s"])
    except (OSError, ValueError, KeyError):
        return 0.0


def measure(rate: float, seconds: float, nodes: int, folder: Path) -> dict[str, float]:
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    sim = subprocess.Popen([str(BIN / "task-learning-sim"), "--scene", "store_groceries", "--camera-rate", "0",
                            "--ros-args", "-p", f"clock_rate_hz:={rate}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    idle = [subprocess.Popen([sys.executable, __file__, "--idle-node"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True) for _ in range(nodes)]
    status = folder / f"status_{rate}.json"
    watcher = subprocess.Popen([sys.executable, __file__, "--watch-status", str(status)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while sim_time(status) < 5.0:  # the physics is up and the nodes have settled
            if time.monotonic() > deadline or sim.poll() is not None:
                raise SystemExit(f"bench_clock_rate: the simulator did not start at {rate} Hz")
            time.sleep(0.5)
        t0, s0, i0 = sim_time(status), cpu_s(sim.pid), [cpu_s(p.pid) for p in idle]
        time.sleep(seconds)
        t1, s1, i1 = sim_time(status), cpu_s(sim.pid), [cpu_s(p.pid) for p in idle]
    finally:
        for proc in [watcher, *idle, sim]:
            proc.send_signal(signal.SIGINT)
        for proc in [watcher, *idle, sim]:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    simulated = max(t1 - t0, 1e-9)
    return {"simulated_s": simulated, "sim_cpu_per_s": (s1 - s0) / simulated,
            "idle_node_cpu_per_s": sum(b - a for a, b in zip(i0, i1)) / len(idle) / simulated}


def watch_status(path: str) -> int:
    """Copies the simulator's latched `sim/status` into `path` (its simulated time is the clock here)."""
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    rclpy.init()
    node = rclpy.create_node("bench_clock_status")
    target = Path(path)
    node.create_subscription(String, "sim/status", lambda m: target.write_text(m.data),
                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                        reliability=ReliabilityPolicy.RELIABLE))
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    return 0


def main() -> int:
    if "--idle-node" in sys.argv:
        return idle_node()
    if "--watch-status" in sys.argv:
        return watch_status(sys.argv[sys.argv.index("--watch-status") + 1])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", type=float, nargs="+", default=[100.0, 25.0])
    p.add_argument("--seconds", type=float, default=60.0, help="wall seconds measured at each rate")
    p.add_argument("--nodes", type=int, default=2, help="idle nodes on simulated time")
    args = p.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", "58")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-clock-") as folder:
        for rate in args.rates:
            rows.append((rate, measure(rate, args.seconds, args.nodes, Path(folder))))
    base = rows[0][1]["idle_node_cpu_per_s"]
    print(f"{'/clock Hz':>9}  {'simulated s':>11}  {'idle node CPU s / sim s':>23}  {'simulator CPU s / sim s':>23}  "
          f"{'idle node vs first':>18}")
    for rate, row in rows:
        print(f"{rate:>9.0f}  {row['simulated_s']:>11.1f}  {row['idle_node_cpu_per_s']:>23.3f}  "
              f"{row['sim_cpu_per_s']:>23.3f}  {row['idle_node_cpu_per_s'] / base if base else 0:>18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
