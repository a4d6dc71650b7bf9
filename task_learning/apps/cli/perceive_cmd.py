"""`task-learning perceive`: one synthetic frame set through the fetch bridge, compared with the
scene's ground truth (detection, position error, containment, doors).

The simulated robot turns in place through 12 headings (640x480 by default, depth noise sigma
5 mm); every frame goes through detection and the belief world state exactly as the perception
node runs them. On a real robot the same bridge runs in the perception node (backend:=fetch).
"""
from __future__ import annotations

import argparse
import json

from task_learning.apps.cli.options import bounded_float, bounded_int
from task_learning.errors import TaskLearningError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("perceive", help="run synthetic RGB-D frames through the fetch bridge",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="fetch", help="fetch (the RGB-D marker bridge)")
    p.add_argument("--scene", required=True, help="scene name or YAML path")
    p.add_argument("--synthetic", action="store_true", help="frames from the simulated robot (required here)")
    p.add_argument("--pose", default="centre",
                   help="where the robot stands: centre | offset | an object id to stand in front of")
    p.add_argument("--move", metavar="OBJECT:RECEPTACLE", help="someone moved this object first")
    p.add_argument("--width", type=bounded_int(64, 4096), default=640, help="image width in pixels (64-4096)")
    p.add_argument("--height", type=bounded_int(48, 4096), default=480, help="image height in pixels (48-4096)")
    p.add_argument("--depth-noise", type=bounded_float(0.0, 1.0), default=0.005, help="sigma of the depth noise, m (0-1)")
    p.add_argument("--image", help="save the first frame with its detections drawn to this PNG")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from task_learning.world.scene import load_scene

    if args.backend.strip().lower() != "fetch":
        raise TaskLearningError(f"perceive: --backend {args.backend!r} is not an image bridge (use fetch)")
    if not args.synthetic:
        raise TaskLearningError("perceive needs --synthetic here; on a robot run the perception node with "
                                "backend:=fetch and read world_state")
    scene = load_scene(args.scene)
    ids = {o["objectId"] for o in scene.objects}
    moved = None
    if args.move:
        obj, sep, receptacle = args.move.partition(":")
        if not sep or obj not in ids or receptacle not in ids:
            raise TaskLearningError(f"--move {args.move!r}: expected OBJECT:RECEPTACLE with ids of {scene.name} "
                                    "(see `task-learning scene --scene ...`)")
        moved = (obj, receptacle)
    if args.pose not in ("centre", "center", "offset") and args.pose not in ids:
        raise TaskLearningError(f"--pose {args.pose!r}: centre, offset or an object id of {scene.name}")
    from task_learning.perception.evaluate import perceive

    report = perceive(scene, pose=args.pose, moved=moved, width=args.width, height=args.height,
                      depth_noise_m=args.depth_noise, image=args.image)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    err = report["position_error_m"]
    print(f"{report['scene']}: {report['detected']}/{report['expected']} markers in view detected over "
          f"{report['frames']} frames ({report['missed_in_frames']} misses in single frames); "
          f"{report['objects_known']} objects known")
    print(f"  position error: median {err['median']} m, max {err['max']} m")
    print(f"  containment correct: {report['containment_correct']}/{report['task_objects']} task objects; "
          f"doors correct: {report['open_state_correct']}/{report['openable_seen']}")
    if report["status"]:
        print(f"  status: {report['status']}")
    if args.image:
        print(f"  picture: {args.image}")
    return 0
