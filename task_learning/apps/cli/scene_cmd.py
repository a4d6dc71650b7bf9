"""`task-learning scene`: what a scene holds, where things are, and what the task measures.

`--backend ai2thor` reads the objects back through the AI2-THOR Controller (the simulator
process the perception parameters name) instead of the symbolic world.
The JSON form is for scripts and tests (keys: name, task, location, source, objects (every AI2-THOR
object dict), task_objects, subtasks, closable, context, assertions, completion); the plain form
is a summary a person reads. `--object NAME` shows one object, named as everywhere in the CLI.
Preferences are shown only with --preferences (they are the user's hidden ground truth).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable

from task_learning.apps.cli.options import SEED
from task_learning.world.completion import completion
from task_learning.world.factory import BACKENDS, make_backend
from task_learning.world.resolve import describe, resolve_object
from task_learning.world.scene import available_scenes, load_scene


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scene",
        help="show a scene (objects, task objects, subtasks, completion measure)",
        description="Show a scene: by name (config/scenes/<name>.yaml), a YAML path, or recorded "
        "AI2-THOR metadata (file.json, or file.json#<scene> for a file with several scenes). "
        f"Known names: {', '.join(available_scenes())}.",
    )
    parser.add_argument("--scene", required=True, help="scene name or path")
    parser.add_argument("--seed", type=SEED, default=None, help="vary placements reproducibly")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    parser.add_argument("--backend", default="symbolic", choices=BACKENDS,
                        help="read the scene through this world backend (default: symbolic)")
    parser.add_argument("--object", metavar="NAME",
                        help="show one object: id, type naming one object, or '<type> in|on <place>'")
    parser.add_argument("--preferences", action="store_true",
                        help="also show the user's preferred destinations (ground truth)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    lines: list[str] = []
    code = _run(args, lines.append)
    try:
        sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`: not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


def _run(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    scene = load_scene(args.scene)
    world = make_backend(getattr(args, "backend", "symbolic"), scene, args.seed)
    try:
        metadata = world.metadata
    finally:
        close = getattr(world, "close", None)  # a simulator process to stop
        if callable(close):
            close()
    if args.object:
        object_id = resolve_object(metadata, args.object)
        record = next(o for o in metadata["objects"] if o["objectId"] == object_id)
        if args.json:
            out(json.dumps(record, indent=2))
        else:
            out(f"{object_id}: {describe(metadata, object_id)}")
            for key in ("pickupable", "receptacle", "openable", "isOpen", "toggleable", "isToggled",
                        "sliceable", "isSliced", "dirtyable", "isDirty", "canFillWithLiquid",
                        "isFilledWithLiquid", "visible", "distance"):
                out(f"  {key}: {record.get(key)}")
            if record.get("receptacleObjectIds"):
                out(f"  contains: {', '.join(record['receptacleObjectIds'])}")
        return 0
    report = completion(scene, metadata)
    if args.json:
        data: dict[str, Any] = {
            "name": scene.name,
            "task": scene.task,
            "location": scene.location,
            "source": scene.source,
            "objects": metadata["objects"],
            "task_objects": list(scene.task_objects),
            "subtasks": [s.to_dict() for s in scene.subtasks],
            "closable": list(scene.closable),
            "context": list(scene.context),
            "assertions": scene.assertions,
            "completion": report.to_dict(),
        }
        if args.preferences:
            data["preferences"] = scene.preferences
        out(json.dumps(data, indent=2))
        return 0
    out(f"scene {scene.name}: task '{scene.task}' in the {scene.location}  ({scene.source})")
    furniture = [o for o in metadata["objects"] if not o["parentReceptacles"]]
    out(f"{len(metadata['objects'])} objects, {len(furniture)} resting on nothing, "
          f"{len(scene.task_objects)} task objects, {scene.assertions} completion assertions")
    for place in furniture:
        props = [p for p in ("receptacle", "openable", "toggleable", "pickupable") if place.get(p)]
        state = " (open)" if place.get("isOpen") else ""
        out(f"  {place['objectId']}{state} [{', '.join(props) or 'no affordances'}]")
        _print_contents(metadata, place, scene.preferences if args.preferences else {}, 2, out)
    for sub in scene.subtasks:
        out(f"subtask '{sub.name}': {sub.instruction} ({', '.join(sub.places)})")
    if scene.closable:
        out(f"must end closed: {', '.join(scene.closable)}")
    for sentence in scene.context:
        out(f"context: {sentence}")
    if report.total:
        out(f"completion now: {report}")
    else:
        out("no completion measure (the scene states no preferred places)")
    return 0


def _print_contents(metadata: dict[str, Any], record: dict[str, Any], preferences: dict[str, list[str]],
                    depth: int, out: Callable[[str], None]) -> None:
    by_id = {o["objectId"]: o for o in metadata["objects"]}
    for child_id in record.get("receptacleObjectIds") or []:
        child = by_id.get(child_id)
        if child is None:
            continue
        flags = [f for f, on in (("dirty", child.get("isDirty")), ("hidden", not child.get("visible")))
                 if on]
        pref = f" -> {' or '.join(preferences[child_id])}" if child_id in preferences else ""
        extra = f" ({', '.join(flags)})" if flags else ""
        out(f"{' ' * (2 * depth)}{child_id}: {describe(metadata, child_id)}{extra}{pref}")
        _print_contents(metadata, child, preferences, depth + 1, out)
