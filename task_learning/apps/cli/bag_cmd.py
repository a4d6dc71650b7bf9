"""`task-learning bag`: rosbag2 files (MCAP or sqlite3, written and read with `rosbags`) of the
robot's head camera, to debug a session offline.

  bag record --out DIR [--duration S]   record the camera topics (and the base pose) live
  bag play --bag DIR [--rate R]         publish them again (stamps shifted to now unless --no-restamp)
  bag perceive --bag DIR --scene S      replay them through the bridge offline (no ROS) and print
                                        the world state it yields
  bag info --bag DIR                    topics, types, counts, duration
  bag strip --bag DIR --out PNG         a strip of the bag's colour frames, evenly spaced in time
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from task_learning.apps.cli.options import bounded_float, bounded_int

MAX_RECORD_S = 86_400.0  # one day of camera topics in one bag
MIN_RATE, MAX_RATE = 0.01, 100.0  # --rate 1e-9 would play for decades

CAMERA_DEFAULTS = {
    "color": "/head_camera/rgb/image_raw",
    "depth": "/head_camera/depth_registered/image_raw",
    "info": "/head_camera/rgb/camera_info",
    "tf": "/tf",
    "tf_static": "/tf_static",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bag", help="record, play and replay head-camera bags (rosbag2)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    rec = verbs.add_parser("record", help="record the camera topics into a new bag directory")
    rec.add_argument("--out", required=True, help="bag directory to create")
    rec.add_argument("--duration", type=bounded_float(0.0, MAX_RECORD_S, low_open=True), default=10.0,
                     help=f"seconds to record (at most {MAX_RECORD_S:g})")
    rec.add_argument("--storage", default="mcap", choices=("mcap", "sqlite3"))
    rec.add_argument("--topics", nargs="+", help="topics (default: colour, depth, camera info, /tf, /tf_static)")
    play = verbs.add_parser("play", help="publish a bag's messages on their topics")
    play.add_argument("--bag", required=True)
    play.add_argument("--rate", type=bounded_float(MIN_RATE, MAX_RATE), default=1.0,
                      help=f"speed factor ({MIN_RATE:g} to {MAX_RATE:g})")
    play.add_argument("--no-restamp", action="store_true", help="keep the recorded header stamps")
    perceive = verbs.add_parser("perceive", help="replay a bag through the fetch bridge offline")
    perceive.add_argument("--bag", required=True)
    perceive.add_argument("--scene", required=True, help="the scene (its types and completion measure)")
    source = perceive.add_mutually_exclusive_group(required=True)
    source.add_argument("--registry", help="marker registry YAML")
    source.add_argument("--synthetic", action="store_true", help="the simulated robot's registry")
    perceive.add_argument("--map-frame", default="map", help="the world frame of the bag's tf (default: map)")
    perceive.add_argument("--base-frame", default="base_link", help="the robot's base frame (default: base_link)")
    perceive.add_argument("--json", action="store_true")
    info = verbs.add_parser("info", help="what a bag holds")
    info.add_argument("--bag", required=True)
    strip = verbs.add_parser("strip", help="a PNG strip of a bag's colour frames")
    strip.add_argument("--bag", required=True)
    strip.add_argument("--out", required=True, help="PNG file to write")
    strip.add_argument("--count", type=bounded_int(1, 24), default=6, metavar="N",
                       help="frames in the strip (1-24, default 6), evenly spaced from first to last")
    strip.add_argument("--topic", default=CAMERA_DEFAULTS["color"])
    for sub in (rec, play, perceive, info, strip):
        sub.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.verb == "info":
        from task_learning.perception.bag import bag_info

        print(json.dumps(bag_info(args.bag), indent=2))
        return 0
    if args.verb == "perceive":
        return _perceive(args)
    if args.verb == "strip":
        return _strip(args)
    from task_learning_nodes.clients import bag_tools  # rclpy: only for the live verbs

    if args.verb == "record":
        counts = bag_tools.record(args.out, args.topics or list(CAMERA_DEFAULTS.values()),
                                  duration_s=args.duration, storage=args.storage)
        print(json.dumps({"bag": args.out, "messages": counts}, indent=2))
        return 0
    count = bag_tools.play(args.bag, rate=args.rate, restamp=not args.no_restamp)
    print(f"published {count} messages from {args.bag}")
    return 0


def summarize(metadata: dict[str, Any]) -> dict[str, Any]:
    """The comparable part of a world state: per object its parent, open state and position."""
    return {
        o["objectId"]: {"type": o["objectType"], "parent": (o.get("parentReceptacles") or [""])[0],
                        "is_open": bool(o.get("isOpen")),
                        "position": [round(o["position"][k], 3) for k in ("x", "y", "z")]}
        for o in metadata.get("objects") or []
    }


def _perceive(args: argparse.Namespace) -> int:
    from task_learning.perception.bag import replay_into_bridge
    from task_learning.perception.bridge import FetchWorld
    from task_learning.perception.registry import load_registry
    from task_learning.world.catalog import load_object_types
    from task_learning.world.scene import load_scene

    scene = load_scene(args.scene)
    if args.synthetic:
        from task_learning.perception.synthetic import SyntheticLayout

        registry = SyntheticLayout.of(scene).registry()
    else:
        types = dict(load_object_types())
        types.update(scene.types)
        registry = load_registry(args.registry, known_types=types)
    world = FetchWorld(registry, None, scene=scene, max_age_s=0.0, clock=lambda: world.last_frame_stamp)  # the bag's time
    report = replay_into_bridge(args.bag, world, color_topic=CAMERA_DEFAULTS["color"],
                                depth_topic=CAMERA_DEFAULTS["depth"], info_topic=CAMERA_DEFAULTS["info"],
                                map_frame=args.map_frame, base_frame=args.base_frame)
    out = {"bag": args.bag, "messages": report.messages, "frames_used": report.frames_used,
           "frames_refused": len(report.frames_refused), "refusals": sorted(set(report.frames_refused))[:5],
           "status": world.status(), "objects": summarize(world.metadata)}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.bag}: {report.frames_used} frame sets used, {len(report.frames_refused)} refused; "
              f"{len(out['objects'])} objects known")
        for oid, row in out["objects"].items():
            print(f"  {oid:<24} in {row['parent'] or '-':<16} {'open' if row['is_open'] else ''}")
    return 0


def _strip(args: argparse.Namespace) -> int:
    """Frames of the colour topic, `count` of them evenly spaced, side by side in rows of three
    (each 320x240, the frame's stamp written on it)."""
    import cv2
    import numpy as np

    from task_learning.errors import TaskLearningError
    from task_learning.inputs.files import OutputError
    from task_learning.perception.bag import read_messages
    from task_learning.perception.images import image_to_array, to_bgr

    images = [(float(m.header.stamp.sec) + m.header.stamp.nanosec * 1e-9, m)
              for _t, _type, _ns, m, _raw in read_messages(args.bag, [args.topic])]
    if not images:
        raise TaskLearningError(f"{args.bag}: no images on {args.topic}")
    picks = [images[round(i * (len(images) - 1) / max(args.count - 1, 1))] for i in range(args.count)]
    tiles = []
    for stamp, msg in picks:
        bgr = to_bgr(image_to_array(msg.encoding, msg.height, msg.width, msg.step, bytes(msg.data),
                                    msg.is_bigendian), msg.encoding)
        tile = cv2.resize(bgr, (320, 240), interpolation=cv2.INTER_AREA)
        cv2.putText(tile, f"t = {stamp:.1f} s", (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2)
        tiles.append(tile)
    while len(tiles) % 3:
        tiles.append(np.zeros_like(tiles[0]))
    grid = np.vstack([np.hstack(tiles[i:i + 3]) for i in range(0, len(tiles), 3)])
    if not cv2.imwrite(args.out, grid):
        raise OutputError(f"{args.out}: cannot write the PNG")
    print(f"{args.out}: {args.count} of {len(images)} frames ({picks[0][0]:.1f}-{picks[-1][0]:.1f} s)")
    return 0
