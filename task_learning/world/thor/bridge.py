"""The `ai2thor` world backend: the stack acting through the real `ai2thor.controller.Controller`.

The Controller starts the simulator process named by the settings (Unity on a workstation, or the
project's stand-in, `task-learning-thor-standin`) and this bridge never asks which one answers.
It adds what AI2-THOR lacks, from AI2-THOR's own primitives:
- NavigateToObject: GetReachablePositions, then TeleportFull to the reachable point closest to
  the object, turned to face it with the camera tilted onto it;
- VisualSearch (BCR's look-around): rotations and LookUp/LookDown (world/look.py);
- task set-up: the scene's start placements with SetObjectPoses, each object at a free spot of
  its starting receptacle;
- `agent.location`: the object the robot last navigated to (the symbolic world's key).
Everything else is the event's metadata unchanged, errorMessage included; an invalid call (the
Controller raises ValueError) comes back as a failed action with the simulator's message. A
simulator that exits or stops answering raises SimulatorError naming the simulator; every later
step raises it again, so a caller cannot mistake a dead simulator for a live one.
"""
from __future__ import annotations

import logging
import math
import shlex
import threading
from typing import TYPE_CHECKING, Any, Mapping

from task_learning.types import ActionCall
from task_learning.world.action_check import NOT_A_ROBOT_ACTION, action_call_problem
from task_learning.world.backend import WorldUnavailableError
from task_learning.world.camera_model import CameraModel
from task_learning.world.layout import CAMERA_HEIGHT_M, MAX_HORIZON, MIN_HORIZON, horizontal_distance
from task_learning.world.look import SEARCH_ACTION, look_around_plan
from task_learning.world.scene import Scene
from task_learning.world.thor.camera import CameraPose
from task_learning.world.thor.display import Display, acquire_display
from task_learning.world.thor.geometry import bounds, free_spot
from task_learning.world.thor.settings import ThorSettings, load_thor_settings

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

log = logging.getLogger(__name__)


class SimulatorError(WorldUnavailableError):
    """The AI2-THOR simulator process failed: did not start, exited, or stopped answering."""


class Ai2ThorWorld:
    """WorldBackend over an AI2-THOR Controller for a Scene (a FloorPlan, or any scene the
    simulator serves by name)."""

    name = "ai2thor"

    def __init__(self, scene: Scene, settings: ThorSettings | None = None) -> None:
        self.scene = scene
        self.settings = settings or load_thor_settings()
        self.thor_scene = scene.floorplan or scene.name
        self._failure = ""
        self._location = scene.location
        self._reachable: list[dict[str, float]] | None = None
        self.frame: NDArray[np.uint8] | None = None  # the last RGB image (height x width x 3)
        self.depth_frame: NDArray[np.float32] | None = None  # its depth in metres
        self.steps = 0
        self._display: Display | None = acquire_display(self.settings.x_display, self.settings.platform)
        try:
            self._controller = self._start()
            self._event = self._controller.last_event
            self._metadata = self._view(self._event.metadata)
            self._keep_frames(self._event)
            if scene.start_moves:
                self._place_start()
        except BaseException:
            self.close()
            raise

    # -- WorldBackend -----------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        return self._metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        """One robot action. The Controller obeys any command it is sent, simulator control
        included (Reset, ChangeResolution, teleports): a call that is not a robot action
        (world.action_check) fails here, the simulator untouched, whoever sends it."""
        self.steps += 1
        object_id = params.get("objectId", "")
        if not isinstance(object_id, str):
            problem = f"objectId must be an object id, got {type(object_id).__name__}"
        else:
            problem = action_call_problem(ActionCall(action, object_id, tuple(
                (k, v) for k, v in params.items() if k != "objectId")))
        if problem:
            self._metadata = self._failed(action, f"not executed: {problem}", NOT_A_ROBOT_ACTION)
            return self._metadata
        if action == "NavigateToObject":
            result = self._navigate(params)
        elif action == SEARCH_ACTION:
            result = self._look_around(params)
        else:
            result = self._send(action, **params)
        self._metadata = result
        return result

    # -- camera ---------------------------------------------------------------------------------

    def intrinsics(self) -> CameraModel:
        height, width = (self.frame.shape[:2] if self.frame is not None
                         else (self.settings.height, self.settings.width))
        return CameraModel.from_fov(int(width), int(height), float(self._metadata.get("fov") or self.settings.field_of_view))

    def camera_pose(self) -> CameraPose:
        return CameraPose.from_metadata(self._metadata)

    def close(self) -> None:
        controller = getattr(self, "_controller", None)
        if controller is not None:
            try:
                controller.stop()
            except Exception as exc:  # noqa: BLE001 - already dead: nothing left to stop
                log.debug("stopping the controller: %r", exc)
            self._controller = None
        if self._display is not None:
            self._display.close()
            self._display = None

    def __enter__(self) -> "Ai2ThorWorld":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the Controller -----------------------------------------------------------------------------

    def _start(self) -> Any:
        try:
            from ai2thor.controller import Controller  # type: ignore[import-untyped]
        except ImportError as exc:
            raise SimulatorError(f"the ai2thor package is not installed ({exc}); run `make setup`") from None
        s = self.settings
        kwargs: dict[str, Any] = dict(
            scene=self.thor_scene, width=s.width, height=s.height, gridSize=s.grid_size,
            renderDepthImage=s.render_depth_image, renderInstanceSegmentation=s.render_instance_segmentation,
            visibilityDistance=s.visibility_distance, fieldOfView=s.field_of_view,
            # loading a scene may take long: the per-step timeout applies once it is loaded
            server_timeout=max(s.server_timeout_s, s.server_start_timeout_s),
            server_start_timeout=s.server_start_timeout_s)
        executable = s.executable()
        if executable:
            kwargs["local_executable_path"] = simulator_command(executable, self.thor_scene, self.scene.recording)
        if s.platform:
            from ai2thor import platform as thor_platform  # type: ignore[import-untyped]

            kwargs["platform"] = getattr(thor_platform, s.platform)
        if self._display is not None:
            kwargs["x_display"] = self._display.name
        box: dict[str, Any] = {}

        def construct() -> None:
            try:
                box["controller"] = Controller(**kwargs)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                box["error"] = exc
                _stop_half_built(exc, Controller)

        # ai2thor blocks without a timeout while the simulator has not opened its pipe: a
        # simulator that never starts must not hang the robot.
        worker = threading.Thread(target=construct, name="ai2thor-start", daemon=True)
        worker.start()
        worker.join(s.server_start_timeout_s + 5.0)
        where = executable or "ai2thor's Unity build"
        if worker.is_alive():
            raise SimulatorError(f"the AI2-THOR simulator ({where}) did not start within "
                                 f"{s.server_start_timeout_s + 5.0:g} s")
        error = box.get("error")
        if isinstance(error, ValueError) and "not contained in build" in str(error):
            known = sorted(n.replace("_physics", "") for n in _scene_list(str(error)))
            raise SimulatorError(f"the AI2-THOR simulator has no scene {self.thor_scene!r}"
                                 + (f" (it has: {', '.join(known)})" if known else "")) from None
        if error is not None:
            raise SimulatorError(f"the AI2-THOR simulator ({where}) failed to start scene "
                                 f"{self.thor_scene!r}: {_one_line(error)}") from None
        controller = box["controller"]
        server = getattr(controller, "server", None)
        if server is not None and hasattr(server, "timeout"):
            server.timeout = s.server_timeout_s
        return controller

    def _send(self, action: str, **params: Any) -> dict[str, Any]:
        """One Controller step; the metadata view of its event."""
        if self._failure:
            raise SimulatorError(self._failure)
        if self._controller is None:
            raise SimulatorError("the AI2-THOR simulator was closed")
        try:
            event = self._controller.step(action=action, renderImage=self.settings.render_image, **params)
        except ValueError:  # an invalid call: AI2-THOR's own message, unchanged
            event = self._controller.last_event
        except Exception as exc:  # noqa: BLE001 - the simulator's exit code says what happened
            code = self._exit_code()
            if code is not None and code != -9:  # -9: ai2thor itself killed a silent simulator
                why = f"the AI2-THOR simulator process exited (exit code {code}) during {action}"
            elif isinstance(exc, TimeoutError):
                why = f"the AI2-THOR simulator gave no answer within {self.settings.server_timeout_s:g} s to {action}"
            else:
                why = f"the AI2-THOR simulator failed during {action}: {_one_line(exc)}"
            self._failure = why
            log.error("%s", self._failure)
            self.close()
            raise SimulatorError(self._failure) from None
        self._event = event
        self._keep_frames(event)
        return self._view(event.metadata)

    def _exit_code(self) -> int | None:
        """The simulator process's exit code once it has ended (None while it runs)."""
        process = getattr(getattr(self._controller, "server", None), "unity_proc", None)
        if process is None:
            return None
        try:
            return int(process.wait(timeout=2.0))
        except Exception:  # noqa: BLE001 - still running (or not a process we can wait for)
            return None

    def _keep_frames(self, event: Any) -> None:
        if getattr(event, "frame", None) is not None:
            self.frame = event.frame
        if getattr(event, "depth_frame", None) is not None:
            self.depth_frame = event.depth_frame

    def _view(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(metadata)
        agent = dict(out.get("agent") or {})
        agent["location"] = self._location
        out["agent"] = agent
        out["inventoryObjects"] = list(out.get("inventoryObjects") or [])
        out["objects"] = list(out.get("objects") or [])
        return out

    # -- what AI2-THOR lacks ---------------------------------------------------------------------

    def _failed(self, action: str, message: str, code: str) -> dict[str, Any]:
        out = dict(self._metadata)
        out.update(lastAction=action, lastActionSuccess=False, errorMessage=message, errorCode=code,
                   actionReturn=None)
        return out

    def _object(self, object_id: Any) -> dict[str, Any] | None:
        return next((o for o in self._metadata["objects"] if o["objectId"] == object_id), None)

    def _navigate(self, params: dict[str, Any]) -> dict[str, Any]:
        object_id = params.get("objectId")
        target = self._object(object_id)
        if target is None:
            return self._failed("NavigateToObject", f"Object ID appears to be invalid. ({object_id!r} is not "
                                "in the scene)", "invalid_object")
        held = {o["objectId"] for o in self._metadata["inventoryObjects"]}
        if object_id in held:
            self._location = str(object_id)
            out = self._view(self._metadata)
            out.update(lastAction="NavigateToObject", lastActionSuccess=True, errorMessage="", errorCode="",
                       actionReturn=dict((out["agent"].get("position") or {})))
            return out
        if self._reachable is None:
            reply = self._send("GetReachablePositions")
            if not reply["lastActionSuccess"]:
                return self._failed("NavigateToObject", str(reply.get("errorMessage") or ""), str(reply.get("errorCode") or ""))
            self._reachable = list(reply.get("actionReturn") or [])
        if not self._reachable:
            return self._failed("NavigateToObject", "no reachable position in this scene", "no_path")
        goal = target.get("position") or {}
        best = min(self._reachable, key=lambda p: horizontal_distance(p, goal))
        dx, dz = float(goal["x"]) - float(best["x"]), float(goal["z"]) - float(best["z"])
        yaw = math.degrees(math.atan2(dx, dz)) % 360.0 if math.hypot(dx, dz) > 1e-6 else 0.0
        camera_y = float(best.get("y", 0.9)) + CAMERA_HEIGHT_M
        horizon = math.degrees(math.atan2(camera_y - float(goal.get("y", camera_y)), max(math.hypot(dx, dz), 1e-6)))
        horizon = round(min(max(horizon, MIN_HORIZON), MAX_HORIZON), 3)
        reply = self._send("TeleportFull", position=dict(best), rotation={"x": 0.0, "y": round(yaw, 3), "z": 0.0},
                           horizon=horizon, standing=True)
        if not reply["lastActionSuccess"]:
            return self._failed("NavigateToObject", str(reply.get("errorMessage") or ""), str(reply.get("errorCode") or ""))
        self._location = str(object_id)
        out = self._view(reply)
        out.update(lastAction="NavigateToObject", actionReturn=dict(best))
        return out

    def _look_around(self, params: dict[str, Any]) -> dict[str, Any]:
        object_id = params.get("objectId")
        target = self._object(object_id) if object_id else None
        if object_id and target is None:
            return self._failed(SEARCH_ACTION, f"Object ID appears to be invalid. ({object_id!r} is not in the "
                                "scene)", "invalid_object")
        goal = target.get("position") if target is not None else None
        reply = self._metadata
        for action, degrees in look_around_plan(self._metadata["agent"], goal):
            reply = self._send(action, degrees=degrees)
            self._metadata = reply
            if not reply["lastActionSuccess"]:
                return self._failed(SEARCH_ACTION, str(reply.get("errorMessage") or ""), str(reply.get("errorCode") or ""))
        out = dict(reply)
        out.update(lastAction=SEARCH_ACTION, actionReturn=None)
        return out

    def _place_start(self) -> None:
        """Move the scene's task objects to where the task starts (SetObjectPoses lists every
        pickupable or moveable object: AI2-THOR removes the ones it is not given)."""
        objects = list(self._metadata["objects"])
        by_id = {o["objectId"]: o for o in objects}
        planned: dict[str, dict[str, float]] = {}
        occupied = list(objects)
        for object_id, receptacle_id in self.scene.start_moves.items():
            record = by_id.get(object_id)
            if record is None or receptacle_id not in by_id:
                raise SimulatorError(f"scene {self.scene.name}: the simulator's {self.thor_scene} has no "
                                     f"{object_id if record is None else receptacle_id}")
            spot = free_spot(receptacle_id, occupied)
            if spot is None:
                raise SimulatorError(f"scene {self.scene.name}: no free spot for {object_id} on {receptacle_id}")
            planned[object_id] = spot
            size = (bounds(record) or ((0, 0, 0), (0.1, 0.1, 0.1)))
            occupied.append({"objectId": f"{object_id}#placed", "objectType": "Placed", "receptacle": False,
                             "axisAlignedBoundingBox": {"center": spot, "size": {
                                 a: max(size[1][i] - size[0][i], 0.05) for i, a in enumerate("xyz")}}})
        def pose(record: Mapping[str, Any]) -> dict[str, Any]:
            return {"objectName": record["name"], "position": planned.get(record["objectId"], record["position"]),
                    "rotation": record.get("rotation") or {"x": 0.0, "y": 0.0, "z": 0.0}}

        # the ones staying first, then the moved ones in the scene's order (the order they land in)
        poses = [pose(o) for o in objects if (o.get("pickupable") or o.get("moveable")) and o["objectId"] not in planned]
        poses += [pose(by_id[object_id]) for object_id in planned]
        reply = self._send("SetObjectPoses", objectPoses=poses)
        if not reply["lastActionSuccess"]:
            raise SimulatorError(f"scene {self.scene.name}: SetObjectPoses failed: {reply.get('errorMessage')}")
        self._metadata = reply
        self._reachable = None


def simulator_command(executable: str, scene_name: str, recording: str) -> str:
    """The `local_executable_path` ai2thor runs: the executable, and where the scene's recorded
    metadata is (`--scene-metadata NAME=SPEC`, which the stand-in serves and a Unity build
    ignores: Unity has its FloorPlans built in). ai2thor appends its own arguments to this text
    and splits it with shlex, so both parts are quoted (a path may hold spaces)."""
    command = shlex.quote(executable)
    if recording:
        command += f" --scene-metadata {shlex.quote(f'{scene_name}={recording}')}"
    return command


def _stop_half_built(exc: BaseException, controller_class: Any) -> None:
    """A Controller whose constructor failed (e.g. an unknown scene) has already started the
    simulator process; its `self` is in the traceback: stop it, so no simulator outlives us."""
    tb = exc.__traceback__
    while tb is not None:
        candidate: Any = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, controller_class):
            try:
                candidate.stop()
            except Exception as stop_error:  # noqa: BLE001 - half-built: nothing more to stop
                log.debug("stopping a half-built controller: %r", stop_error)
            return
        tb = tb.tb_next


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _scene_list(message: str) -> list[str]:
    tail = message.rsplit(":", 1)[-1]
    return [n.strip() for n in tail.split(",") if n.strip()]
