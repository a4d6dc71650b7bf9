"""`task-learning-sim`: the simulated Fetch as its own program, as a robot is started beside the stack.

    task-learning-sim --robot fetch --scene store_groceries [--real-time-factor 1.0] [--camera-rate 2.0]

The scene is built before any ROS node exists: a scene the simulator cannot build ends the command
with one line naming the object and exit code 2. Then the node serves the robot's interfaces
(sim/ros_node.py) until Ctrl-C. Arguments after `--ros-args` go to ROS (remappings, a namespace).
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Sequence

from task_learning.lifecycle.signals import StopSignals

if TYPE_CHECKING:
    from task_learning_sim.scene_world import SceneWorld

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"task-learning-sim: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="task-learning-sim", description="A MuJoCo-simulated Fetch behind its standard ROS 2 interfaces.")
    p.add_argument("--robot", default="fetch", choices=("fetch",), help="the simulated robot")
    p.add_argument("--scene", default="store_groceries", help="scene name (config/scenes) or YAML path")
    p.add_argument("--real-time-factor", type=float, default=1.0,
                   help="simulated seconds per wall second at most (0: as fast as it goes)")
    p.add_argument("--camera-rate", type=float, default=2.0, help="head camera frames per simulated second (0: none)")
    p.add_argument("--grasp-weld", action="store_true",
                   help="assist grasps: weld what both fingers pinch to the gripper until it opens (counted)")
    p.add_argument("--check", action="store_true", help="build the scene, say whether it can be simulated, exit")
    p.add_argument("--write-marker-registry", metavar="FILE", default="",
                   help="write the registry of the markers textured on the world (YAML, task_learning's format) "
                        "before serving (with --check: and exit)")
    return p


def _markers(world: "SceneWorld", path: str) -> None:
    """Texture the world's fiducial markers (sim/markers.py); write their registry to `path`."""
    from pathlib import Path

    from task_learning_sim.markers import add_markers, registry_yaml

    plan = add_markers(world)
    if path:
        target = Path(path)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(registry_yaml(plan), encoding="utf-8")
        partial.replace(target)  # whole or not at all: a reader never sees half a registry


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ros_args = argv[argv.index("--ros-args"):] if "--ros-args" in argv else []
    args = parser().parse_args(argv[: len(argv) - len(ros_args)])
    signals = StopSignals()
    signals.install()
    from task_learning.errors import TaskLearningError
    from task_learning.world.scene import load_scene
    from task_learning_sim.scene_world import SceneBuildError, build_world
    try:
        world = build_world(load_scene(args.scene))
        _markers(world, args.write_marker_registry)
    except OSError as exc:
        signals.restore()
        print(f"task-learning-sim: --write-marker-registry {args.write_marker_registry}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except (SceneBuildError, TaskLearningError) as exc:
        signals.restore()
        print(f"task-learning-sim: cannot simulate scene {args.scene}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.check:
        signals.restore()
        print(f"scene {args.scene}: {len(world.items)} objects, {len(world.receptacles)} pieces of furniture, "
              "all within the arm's reach")
        return 0
    from task_learning_nodes.plumbing.node_base import run_node
    from task_learning_sim.ros_node import SimNode
    params = ["-p", f"scene:={args.scene}", "-p", f"robot:={args.robot}",
              "-p", f"real_time_factor:={float(args.real_time_factor)}", "-p", f"camera_rate_hz:={float(args.camera_rate)}",
              "-p", f"grasp_weld:={'true' if args.grasp_weld else 'false'}"]
    ros = (ros_args or ["--ros-args"]) + params
    return run_node(lambda: SimNode(world), ["task-learning-sim", *ros], name="fetch_sim", signals=signals)


if __name__ == "__main__":
    sys.exit(main())
