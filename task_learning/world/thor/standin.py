"""A headless stand-in for the AI2-THOR simulator process (console script `task-learning-thor-standin`).

The real `ai2thor.controller.Controller` starts it as its Unity build (`local_executable_path=`)
and talks to it over ai2thor's own FIFO wire protocol (wire.py), so the bridge cannot tell it
from Unity. It serves the project's symbolic world (the same code as the `symbolic` backend) for
any scene it can load: an iTHOR FloorPlan from recorded metadata (`FloorPlan1`, world/floorplans.py)
or a project scene by name (`tidy_kitchen`). It renders simple but geometrically consistent RGB,
depth and instance-segmentation frames (render.py): objects as boxes at their metadata positions
and sizes, through the pinhole model the bridge states in CameraInfo.

A scene recorded outside the project (`file.json#key`, a plain metadata file) is served under its
name when the command line says where it is: `--scene-metadata FloorPlan205=/data/rooms.json#205`
(the bridge adds it; the Controller still asks for the scene by name, as it does of Unity).

What it answers itself (the simulator's side of the protocol): the first unsolicited event,
GetScenesInBuild, Reset, Initialize, ChangeResolution, GetReachablePositions (a floor grid minus
furniture) and SetObjectPoses (an object lands on the receptacle under the given point); every
other action goes to the symbolic world. Where it differs from Unity: no physics (placement is
by the receptacle under the point), `visible` means "not shut inside a closed receptacle" as in
the symbolic world, objects left out of SetObjectPoses stay rather than vanish, and failures carry
the symbolic world's short errorCode beside AI2-THOR's errorMessage.

Test hook: TASK_LEARNING_STANDIN_FAULT="crash:N" exits (code 70) and "hang:N" stops answering
when the action after the N-th one following Initialize arrives.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from task_learning.errors import TaskLearningError
from task_learning.world.camera_model import CameraModel
from task_learning.world.thor import geometry, render, wire
from task_learning.world.thor.camera import FAR_PLANE_M, NEAR_PLANE_M, CameraPose

if TYPE_CHECKING:
    from task_learning.world.symbolic import SymbolicWorld

log = logging.getLogger("task_learning.thor_standin")

RENDER_PARAMS = ("renderImage", "renderDepthImage", "renderInstanceSegmentation", "sequenceId", "action")
# The symbolic world's conveniences that Unity does not have: a bridge builds them from primitives.
NOT_IN_AI2THOR = ("NavigateToObject", "VisualSearch")
INIT_DEFAULTS = {"gridSize": 0.25, "renderDepthImage": False, "renderInstanceSegmentation": False,
                 "visibilityDistance": 1.5, "fieldOfView": 90.0}


class StandIn:
    """The simulator's state between actions: the loaded scene and the render settings.
    `recordings` maps a scene name to recorded metadata to serve under it (the bridge passes a
    user's recording with --scene-metadata NAME=SPEC; other names are looked up as below)."""

    def __init__(self, width: int = 300, height: int = 300, recordings: dict[str, str] | None = None) -> None:
        self.width, self.height = width, height
        self.recordings = dict(recordings or {})
        self.world: SymbolicWorld | None = None
        self.scene_name = ""
        self.scene_error = ""
        self.settings: dict[str, Any] = dict(INIT_DEFAULTS)
        self.offsets: dict[str, Any] = {}
        self.initialized = False

    # -- one action in, one event out ------------------------------------------------------------

    def handle(self, action: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """(agent metadata, render a frame?) after running `action`."""
        name = str(action.get("action", ""))
        params = {k: v for k, v in action.items() if k not in RENDER_PARAMS}
        render_image = action.get("renderImage", True) is not False
        handler = {
            "GetScenesInBuild": self._scenes_in_build,
            "Reset": self._reset,
            "Initialize": self._initialize,
            "ChangeResolution": self._change_resolution,
            "GetReachablePositions": self._reachable,
            "SetObjectPoses": self._set_object_poses,
        }.get(name)
        if handler is not None:
            ok, message, result = handler({k: v for k, v in action.items() if k not in ("action", "sequenceId")})
            return self._event(name, ok, message, result, code="" if ok else "InvalidArgument"), render_image
        if name in NOT_IN_AI2THOR:
            return self._event(name, False, f"Invalid action: {name} is not an AI2-THOR action", None,
                               code="InvalidAction"), False
        if self.world is None or not self.initialized:
            return self._event(name, False, self.scene_error or "no scene loaded (send Reset, then Initialize)",
                               None, code=""), False
        metadata = self.world.step(name, **params)
        return self._event(name, bool(metadata["lastActionSuccess"]), str(metadata["errorMessage"]),
                           metadata["actionReturn"], code=str(metadata.get("errorCode") or "")), render_image

    def _event(self, action: str, ok: bool, message: str, result: Any, code: str) -> dict[str, Any]:
        base: dict[str, Any] = dict(self.world.metadata) if self.world is not None else {
            "objects": [], "agent": {}, "inventoryObjects": [], "sceneName": ""}
        base.update(lastAction=action, lastActionSuccess=ok, errorMessage="" if ok else message,
                    errorCode="" if ok else code, actionReturn=result if ok else None,
                    screenWidth=self.width, screenHeight=self.height, thirdPartyCameras=None,
                    depthFormat="Meters", fov=float(self.settings["fieldOfView"]),
                    cameraPosition=self._camera_position(base))
        if self.scene_name:
            base["sceneName"] = self.scene_name
        return base

    @staticmethod
    def _camera_position(metadata: dict[str, Any]) -> dict[str, float]:
        pose = CameraPose.from_metadata({"agent": metadata.get("agent") or {}})
        return {"x": pose.position[0], "y": pose.position[1], "z": pose.position[2]}

    # -- frames -------------------------------------------------------------------------------

    def frames(self, metadata: dict[str, Any]) -> tuple[Any, Any, Any]:
        intrinsics = CameraModel.from_fov(self.width, self.height, float(self.settings["fieldOfView"]))
        pose = CameraPose.from_metadata(metadata)
        boxes = render.boxes_for(metadata, self.offsets)
        want_ids = bool(self.settings.get("renderInstanceSegmentation"))
        rgb, depth, index = render.render(boxes, intrinsics, pose, ids=want_ids)
        ids = None
        if index is not None:
            palette = [(0, 0, 0)] + [render.instance_colour(i + 1) for i in range(len(boxes))]
            ids = np.array(palette, dtype=np.uint8)[index]
            metadata["colors"] = [{"name": b.object_id, "color": list(palette[i + 1])} for i, b in enumerate(boxes)]
        return rgb, depth if self.settings.get("renderDepthImage") else None, ids

    # -- the simulator's own actions ------------------------------------------------------------

    def _scenes_in_build(self, params: dict[str, Any]) -> tuple[bool, str, Any]:
        from task_learning.world.floorplans import available_floorplans, canonical
        from task_learning.world.scene import available_scenes

        names = [f"{n}_physics" for n in available_floorplans()] + available_scenes()
        names += [f"{n}_physics" if canonical(n) else n for n in self.recordings]
        return True, "", sorted(set(names))

    def _reset(self, params: dict[str, Any]) -> tuple[bool, str, Any]:
        from task_learning.world.floorplans import canonical, floorplan_source
        from task_learning.world.scene import load_scene
        from task_learning.world.symbolic import SymbolicWorld

        name = str(params.get("sceneName", ""))
        self.world, self.initialized, self.scene_name = None, False, name
        try:
            floorplan = canonical(name)
            recording = self.recordings.get(floorplan or name)
            scene = load_scene(recording or (floorplan_source(name) if floorplan else name))
        except TaskLearningError as exc:
            self.scene_error = f"cannot load scene {name!r}: {exc}"
            return False, self.scene_error, None
        self.scene_error = ""
        self.world = SymbolicWorld(scene)
        self.offsets = render.box_offsets(scene.objects)
        return True, "", None

    def _initialize(self, params: dict[str, Any]) -> tuple[bool, str, Any]:
        if self.world is None:
            return False, self.scene_error or "Initialize before Reset", None
        for key in INIT_DEFAULTS:
            if key in params:
                self.settings[key] = params[key]
        self.initialized = True
        return True, "", {"cameraNearPlane": NEAR_PLANE_M, "cameraFarPlane": FAR_PLANE_M}

    def _change_resolution(self, params: dict[str, Any]) -> tuple[bool, str, Any]:
        x, y = params.get("x"), params.get("y")
        if not isinstance(x, int) or not isinstance(y, int) or x <= 0 or y <= 0:
            return False, f"ChangeResolution needs positive integers x and y, got {x!r}, {y!r}", None
        self.width, self.height = x, y
        return True, "", None

    def _reachable(self, params: dict[str, Any]) -> tuple[bool, str, Any]:
        if self.world is None:
            return False, "no scene loaded", None
        metadata = self.world.metadata
        agent_y = float(((metadata.get("agent") or {}).get("position") or {}).get("y", 0.9))
        return True, "", geometry.reachable_positions(self._with_boxes(metadata), float(self.settings["gridSize"]),
                                                      agent_y)

    def _set_object_poses(self, params: dict[str, Any]) -> tuple[bool, str, Any]:
        if self.world is None:
            return False, "no scene loaded", None
        poses = params.get("objectPoses")
        if not isinstance(poses, list):
            return False, "SetObjectPoses needs objectPoses: a list of {objectName, position, rotation}", None
        objects = self._with_boxes(self.world.metadata)
        by_name = {str(o.get("name")): o for o in objects}
        for index, pose in enumerate(poses):
            name = pose.get("objectName") if isinstance(pose, dict) else None
            position = pose.get("position") if isinstance(pose, dict) else None
            if name not in by_name or not isinstance(position, dict):
                return False, f"objectPoses[{index}]: no object named {name!r} or no position", None
            record = by_name[name]
            current = record.get("position") or {}
            if all(abs(float(position.get(a, 0.0)) - float(current.get(a, 0.0))) < 0.01 for a in "xyz"):
                continue
            receptacle = geometry.receptacle_at(position, objects, exclude=record["objectId"])
            if receptacle is None:
                floor = next((o["objectId"] for o in objects if o["objectType"] in geometry.FLOOR_TYPES), None)
                if floor is None:
                    return False, f"objectPoses[{index}]: nothing under {position} to put {name} on", None
                receptacle = floor
            self.world.place_object(record["objectId"], receptacle)
        return True, "", None

    def _with_boxes(self, metadata: dict[str, Any]) -> list[dict[str, Any]]:
        """Objects with bounding boxes where they are now (recorded boxes move with them)."""
        out = []
        for record in metadata.get("objects") or []:
            offset, size = self.offsets.get(record["objectId"], ((0.0, 0.0, 0.0), None))
            record = dict(record)
            if size is not None and record.get("axisAlignedBoundingBox") is not None:
                position = record.get("position") or {}
                centre = {a: float(position.get(a, 0.0)) + offset[i] for i, a in enumerate("xyz")}
                record["axisAlignedBoundingBox"] = {"center": centre, "size": dict(zip("xyz", size))}
            out.append(record)
        return out


# -- the process ----------------------------------------------------------------------------------


def _screen_size(argv: list[str]) -> tuple[int, int]:
    size = {"-screen-width": 300, "-screen-height": 300}
    for flag in size:
        if flag in argv:
            try:
                size[flag] = int(argv[argv.index(flag) + 1])
            except (IndexError, ValueError):
                pass
    return size["-screen-width"], size["-screen-height"]


RECORDING_FLAG = "--scene-metadata"


def _recordings(argv: list[str]) -> dict[str, str]:
    """NAME=SPEC of every --scene-metadata argument (a FloorPlan name is kept canonical)."""
    from task_learning.world.floorplans import canonical

    found: dict[str, str] = {}
    for i, arg in enumerate(argv[:-1]):
        if arg == RECORDING_FLAG:
            name, sep, spec = argv[i + 1].partition("=")
            if sep and name and spec:
                found[canonical(name) or name] = spec
    return found


def _fault() -> tuple[str, int]:
    spec = os.environ.get("TASK_LEARNING_STANDIN_FAULT", "")
    kind, _, count = spec.partition(":")
    if kind in ("crash", "hang") and count.isdigit():
        return kind, int(count)
    return "", -1


def serve(server_pipe: BinaryIO, client_pipe_path: str, standin: StandIn) -> int:
    """The event loop: the first event, then one event per action until the client goes away."""
    wire.write_event(server_pipe, standin.handle({"action": "Pass"})[0], 0)
    fault, after = _fault()
    done = 0
    with open(client_pipe_path, "rb", buffering=0) as client_pipe:
        while True:
            try:
                action = wire.read_action(client_pipe)
            except wire.PipeClosed:
                return 0
            if fault and standin.initialized and action.get("action") not in ("Reset", "Initialize"):
                if done >= after:
                    log.error("stand-in: injected fault %s after %d actions", fault, done)
                    if fault == "crash":
                        os._exit(70)
                    while True:
                        time.sleep(3600)
                done += 1
            metadata, want_frame = standin.handle(action)
            rgb = depth = ids = None
            if want_frame and standin.world is not None and standin.initialized:
                rgb, depth, ids = standin.frames(metadata)
            wire.write_event(server_pipe, metadata, int(action.get("sequenceId", 0)), rgb, depth, ids)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="[thor-standin] %(message)s", stream=sys.stderr)
    server_path = os.environ.get("AI2THOR_FIFO_SERVER_PIPE_PATH")
    client_path = os.environ.get("AI2THOR_FIFO_CLIENT_PIPE_PATH")
    if not server_path or not client_path:
        sys.stderr.write("task-learning-thor-standin: run by ai2thor's Controller (local_executable_path=...), "
                         "which sets AI2THOR_FIFO_SERVER_PIPE_PATH and AI2THOR_FIFO_CLIENT_PIPE_PATH\n")
        return 2
    width, height = _screen_size(argv)
    # The server pipe first: the client blocks opening it before it opens its own pipe.
    with open(server_path, "wb", buffering=0) as server_pipe:
        try:
            return serve(server_pipe, client_path, StandIn(width, height, _recordings(argv)))
        except BrokenPipeError:
            return 0


if __name__ == "__main__":
    raise SystemExit(main())
