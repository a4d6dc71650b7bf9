"""perception_node: the world as the rest of the stack sees it, and the only door to act on it.

- publishes `world_state` (WorldState) at `publish_rate_hz` and right after every action;
- serves `query_world` (QueryWorld): objects by id, by type, or as "<type> in|on <place>";
- serves `execute_action` (ExecuteAction): one primitive action on the backend;
- serves `get_completion` (GetCompletion): the scene's completion measure, for experiments.

The backend is a parameter (`symbolic`, `ai2thor`, `fetch`, behind
`task_learning.world.factory.make_backend`); the AI2-THOR Controller is configured by the
`ai2thor.*` parameters. A backend that renders (AI2-THOR with ai2thor.render_image) also gets the
camera topics of camera_topics.py, stamped like world_state. A simulator that dies makes every
later action fail with a reason naming the simulator; restarting the node starts a new one.
`fetch` is the RGB-D head camera bridge of `fetch_bridge.py`, whose parameters it declares. A
backend that is not
available, or a scene that does not load, stops the node at start with one clear error line.
An action naming an object the world does not have fails with a clear message and never reaches
the backend, so the world stays unchanged.

All backend access runs in one mutually exclusive callback group: backends are not thread-safe,
and a query must never see half an action. The message for the current world is cached while the
backend returns the same metadata object (a backend returns a new dict after every change, as
AI2-THOR does with one metadata dict per event); only the stamp is refreshed for each publish.
After a change only the objects whose records changed are converted again
(convert.WorldStateBuilder).
"""
from __future__ import annotations

import difflib
import threading
from typing import Any

from pydantic import Field
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.inputs.names import normalize_name
from task_learning.inputs.safe_text import printable
from task_learning.lifecycle.signals import StopSignals
from task_learning.types import ActionCall, ActionOutcome
from task_learning.world.action_check import action_call_problem
from task_learning.world.backend import WORLD_UNAVAILABLE, WorldBackend, WorldUnavailableError
from task_learning.world.factory import BACKENDS
from task_learning.world.thor.settings import PLATFORMS as THOR_PLATFORMS
from task_learning.world.thor.settings import RANGES as THOR_RANGES
from task_learning.world.thor.settings import ThorSettings
from task_learning_interfaces.msg import WorldState
from task_learning_interfaces.srv import ExecuteAction, GetCompletion, QueryWorld
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.fetch_params import FetchParameters
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param
from task_learning_nodes.plumbing.qos import DURABILITY, RELIABILITY, world_state_qos

WORLD_STATE_TOPIC = "world_state"
QUERY_SERVICE = "query_world"
EXECUTE_SERVICE = "execute_action"
COMPLETION_SERVICE = "get_completion"

ARTICLES = ("the ", "a ", "an ")

def _thor(name: str) -> Any:
    """The `ai2thor.<name>` parameter: its default, range and choices are ThorSettings' own."""
    default: Any = ThorSettings.model_fields[name].default
    low, high = THOR_RANGES.get(name, (None, None))
    return param(default, f"AI2-THOR controller setting {name} (see config/nodes/perception.yaml and "
                 "task_learning.world.thor.settings.ThorSettings)", min=low, max=high,
                 choices=THOR_PLATFORMS if name == "platform" else ())


class Ai2thorParameters(NodeParameters):
    """perception's ai2thor.* parameters: one per field of ThorSettings (the AI2-THOR Controller's
    settings; test_node_shape checks that every field has one)."""

    grid_size: float = _thor("grid_size")
    width: int = _thor("width")
    height: int = _thor("height")
    field_of_view: float = _thor("field_of_view")
    render_image: bool = _thor("render_image")
    render_depth_image: bool = _thor("render_depth_image")
    render_instance_segmentation: bool = _thor("render_instance_segmentation")
    visibility_distance: float = _thor("visibility_distance")
    platform: str = _thor("platform")
    x_display: str = _thor("x_display")
    local_executable_path: str = _thor("local_executable_path")
    server_timeout_s: float = _thor("server_timeout_s")
    server_start_timeout_s: float = _thor("server_start_timeout_s")


class Parameters(NodeParameters):
    """The perception node's parameters (config/nodes/perception.yaml)."""

    backend: str = param("symbolic", "World backend: symbolic (built-in offline twin of AI2-THOR), "
                         "ai2thor or fetch", choices=BACKENDS)
    scene: str = param("tidy_kitchen", "Scene name under config/scenes/ (tidy_kitchen, store_groceries, "
                       "organize_office) or a path to a scene YAML or recorded AI2-THOR metadata JSON")
    seed: int = param(-1, "Placement variation of the symbolic world; -1 keeps the scene as written",
                      min=-1, max=2**31 - 1)
    publish_rate_hz: float = param(10.0, "world_state publish rate in Hz; 0 publishes only at start and "
                                   "after each action", min=0.0, max=1000.0)
    frame_id: str = param("world", "frame_id of every pose in world_state (the backend's world frame)")
    qos_depth: int = param(1, "History depth of world_state", min=1, max=1000)
    qos_reliability: str = param("reliable", "Reliability of world_state", choices=tuple(RELIABILITY))
    qos_durability: str = param("transient_local", "Durability of world_state; transient_local makes it "
                                "latched (a late subscriber with the same durability gets the last state)",
                                choices=tuple(DURABILITY))
    max_query_chars: int = param(256, "Longest query_world query accepted, in characters (longer ones "
                                 "are refused with a message)", min=1, max=100000)
    camera_frame_id: str = param("camera_color_optical_frame", "frame_id of the camera topics of backends "
                                 "that render (ai2thor with render_image)")
    robot: str = param("", "Robot profile under config/robots/ (fetch, tiago, stretch): backends fetch and "
                       "robot_stand_in act through its standard interfaces (Nav2, controllers, MoveIt); '' with "
                       "backend fetch: the Skill adapter of the synthetic robot")
    # The AI2-THOR Controller's settings, `ai2thor.<setting>` (a group in the params file).
    ai2thor: Ai2thorParameters = Field(default_factory=Ai2thorParameters)


class ParamsFile(Parameters, FetchParameters):
    """config/nodes/perception.yaml: the node's parameters, and the fetch backend's (declared only
    with backend fetch, by plumbing/fetch_bridge.py)."""


class PerceptionNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("perception", **kwargs)
        params = declare_parameters(self, Parameters)

        rate = params.publish_rate_hz
        qos = world_state_qos(params.qos_depth, params.qos_reliability, params.qos_durability)
        self.frame_id = params.frame_id
        self.max_query_chars = params.max_query_chars
        self.backend_name = params.backend.strip().lower()
        seed = params.seed
        scene = params.scene

        from task_learning.world.factory import make_backend

        self.robot = None
        if params.robot.strip():  # the robot-skills layer: standard goals (nodes/robot/)
            from task_learning_nodes.robot.frontend import RobotSkillsFrontend

            self.robot = RobotSkillsFrontend(self, params.robot.strip())
        if self.backend_name == "fetch":  # camera topics in, skill goals out (nodes/plumbing/fetch_bridge.py)
            from task_learning.world.scene import load_scene
            from task_learning_nodes.plumbing.fetch_bridge import FetchFrontend

            self.fetch = FetchFrontend(self, load_scene(scene) if scene else None, robot=self.robot)
            self.backend: WorldBackend = self.fetch.world
        elif self.backend_name == "robot_stand_in":  # the layout for a camera, the robot's goals for real
            if self.robot is None:
                raise TaskLearningError("backend robot_stand_in needs parameter robot (a profile under "
                                        "config/robots/)")
            from task_learning.robot.stand_in import StandInRobotWorld
            from task_learning.world.scene import load_scene

            self.backend = StandInRobotWorld(load_scene(scene), self.robot.make_executor())
        else:
            thor = ThorSettings.from_params(params.ai2thor.model_dump(),
                                            source="perception parameters ai2thor.*")
            self.backend = make_backend(self.backend_name, scene, None if seed < 0 else seed, ai2thor_settings=thor)
        self.scene_name = str(getattr(getattr(self.backend, "scene", None), "name", "") or scene)
        self.builder = convert.WorldStateBuilder(frame_id=self.frame_id, backend=self.backend_name)
        self._cached_metadata: Any = None
        self._cached_msg: WorldState | None = None

        # Actions in a group of their own when the backend allows reads during a step (fetch: a
        # skill may take a minute), so world_state, query_world and get_completion go on meanwhile;
        # one group otherwise (the symbolic and AI2-THOR worlds change their dicts in a step).
        group = MutuallyExclusiveCallbackGroup()
        actions = MutuallyExclusiveCallbackGroup() if getattr(self.backend, "concurrent_reads", False) else group
        self._world_lock = threading.RLock()  # the message cache, built from either group
        self.publisher = self.create_publisher(WorldState, WORLD_STATE_TOPIC, qos)
        self.camera = None
        if getattr(self.backend, "frame", None) is not None:
            from task_learning_nodes.plumbing.camera_topics import CameraTopics

            self.camera = CameraTopics(self, qos, params.camera_frame_id, self.frame_id)
        # Sized for bursts (a thousand QueryWorld at once are all answered, none dropped).
        from task_learning_nodes.plumbing.qos import service_qos

        qos = service_qos()
        self.create_service(QueryWorld, QUERY_SERVICE, self.on_query, qos_profile=qos, callback_group=group)
        self.create_service(ExecuteAction, EXECUTE_SERVICE, self.on_execute, qos_profile=qos, callback_group=actions)
        self.create_service(GetCompletion, COMPLETION_SERVICE, self.on_completion, qos_profile=qos,
                            callback_group=group)
        if rate > 0:
            self.create_timer(1.0 / rate, self.publish_world, callback_group=group)
        self.publish_world()
        self.get_logger().info(
            f"backend {self.backend_name}, scene {self.scene_name}: "
            f"{len(self.backend.metadata.get('objects') or [])} objects; world_state at {rate:g} Hz")

    def diagnostics(self) -> list[Any]:
        """/diagnostics: the world backend alive (the simulator process, the camera frames)."""
        from task_learning_nodes.plumbing.diagnostics import Check, Level

        values = {"backend": self.backend_name, "scene": self.scene_name}
        exit_code = getattr(self.backend, "_exit_code", None)
        code = exit_code() if callable(exit_code) else None
        if code is not None:
            return [Check("world", Level.ERROR, f"the simulator exited (code {code})", values)]
        status = str(self.backend.metadata.get("perceptionStatus") or "")
        if status:
            return [Check("world", Level.WARN, status, values)]
        camera = " with camera" if self.camera is not None or self.backend_name == "fetch" else ""
        return [Check("world", Level.OK, f"{self.backend_name} world alive{camera}", values)]

    # -- world state ----------------------------------------------------------------------------

    def world_msg(self) -> WorldState:
        """The current world as a message (rebuilt only when the backend's metadata changed)."""
        with self._world_lock:
            metadata = self.backend.metadata
            if metadata is not self._cached_metadata or self._cached_msg is None:
                self._cached_msg = self.builder.build(metadata, scene=self.scene_name,
                                                      stamp=self.get_clock().now().nanoseconds * 1e-9)
                self._cached_metadata = metadata
            else:
                self._cached_msg.header.stamp = self.get_clock().now().to_msg()
            return self._cached_msg

    def publish_world(self) -> None:
        with self._world_lock:  # one message at a time: the cached one is restamped in place
            msg = self.world_msg()
            self.publisher.publish(msg)
            if self.camera is not None:
                self.camera.publish(self.backend, msg.header.stamp)

    def destroy_node(self) -> None:
        close = getattr(getattr(self, "backend", None), "close", None)  # stop a simulator process
        if callable(close):
            close()
        super().destroy_node()

    # -- services -------------------------------------------------------------------------------

    def on_query(self, request: QueryWorld.Request, response: QueryWorld.Response) -> QueryWorld.Response:
        world = self.world_msg()
        try:
            if len(request.query) > self.max_query_chars:
                raise TaskLearningError(f"query too long ({len(request.query)} characters, at most "
                                        f"{self.max_query_chars}); name an object, a type or "
                                        f"'<type> in|on <place>'")
            ids = self.find_objects(request.query)
        except TaskLearningError as exc:  # UnknownObjectError: names no object, or several
            response.success, response.message = False, printable(str(exc), 300)
        else:
            by_id = {o.object_id: o for o in world.objects}
            response.objects = [by_id[i] for i in ids]
            response.success = True
            response.message = f"{len(ids)} object(s)"
        if request.include_world:
            response.world = world
        return response

    def find_objects(self, query: str) -> list[str]:
        """Ids of the objects a query names, in world order: all for "", the object for an id,
        every object of a type for a type name, else resolve_object's "<type> in|on <place>"."""
        from task_learning.world.catalog import type_names
        from task_learning.world.resolve import resolve_object

        metadata = self.backend.metadata
        objects = metadata.get("objects") or []
        text = (query or "").strip()
        if not text:
            return [o["objectId"] for o in objects]
        if any(o["objectId"] == text for o in objects):
            return [text]
        spoken = normalize_name(text)
        for article in ARTICLES:
            if spoken.startswith(article):
                spoken = spoken[len(article):]
        of_type = [o["objectId"] for o in objects if spoken in type_names(o["objectType"])]
        if of_type:
            return of_type
        return [resolve_object(metadata, text)]

    def on_execute(self, request: ExecuteAction.Request,
                   response: ExecuteAction.Response) -> ExecuteAction.Response:
        try:
            call = convert.action_call_from_msg(request.call, strict=True)
            problem = action_call_problem(call)
            if problem:
                raise ValueError(problem)
        except ValueError as exc:
            call = ActionCall(printable(request.call.action, 64), printable(request.call.object_id, 200))
            outcome = ActionOutcome(call, False, f"bad action call, not executed: {printable(str(exc), 300)}",
                                    "InvalidArgument")
        else:
            outcome = self.execute(call)
        shown = printable(str(call), 300)
        if outcome.success:  # rclpy wants one severity per logging call site
            self.get_logger().info(f"{shown}: ok")
        else:
            self.get_logger().warning(f"{shown}: {printable(outcome.error_message, 300)}")
        response.outcome = convert.action_outcome_to_msg(outcome)
        self.publish_world()
        if request.return_world:
            response.world = self.world_msg()
        return response

    def execute(self, call: ActionCall) -> ActionOutcome:
        """Run one action; every failure (bad input, unknown object, backend error) is an outcome."""
        if not call.action.strip():
            return ActionOutcome(call, False, "no action given (e.g. PickupObject)", "InvalidArgument")
        ids = [o["objectId"] for o in self.backend.metadata.get("objects") or []]
        if call.object_id and call.object_id not in ids:
            hint = difflib.get_close_matches(call.object_id, ids, n=1)
            suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
            status = self.backend.metadata.get("perceptionStatus")
            suffix += f"; perception: {status}" if status else ""
            return ActionOutcome(call, False, f"no object with id '{printable(call.object_id, 200)}' in "
                                 f"the world{suffix}",
                                 "UnknownObject")
        try:
            result = self.backend.step(call.action, **call.step_kwargs())
        except WorldUnavailableError as exc:  # the simulator (or robot) is gone: say which
            self.get_logger().error(f"{call}: {exc}")
            return ActionOutcome(call, False, str(exc), WORLD_UNAVAILABLE)
        except (TaskLearningError, TypeError, ValueError, KeyError) as exc:  # bad parameters
            return ActionOutcome(call, False, f"{call.action} failed in the {self.backend_name} backend: {exc}",
                                 "BackendError")
        except Exception as exc:  # noqa: BLE001 - a backend bug: keep serving, say what happened
            self.get_logger().error(f"backend error on {call}: {exc!r}")
            return ActionOutcome(call, False, f"{call.action}: internal error in the {self.backend_name} "
                                 f"backend: {exc!r}", "BackendError")
        success = bool(result.get("lastActionSuccess"))
        return ActionOutcome(call, success, "" if success else str(result.get("errorMessage") or ""),
                             "" if success else str(result.get("errorCode") or ""))

    def on_completion(self, request: GetCompletion.Request,
                      response: GetCompletion.Response) -> GetCompletion.Response:
        scene = getattr(self.backend, "scene", None)
        if scene is None or not getattr(scene, "preferences", None):
            response.success = False
            response.message = f"the {self.backend_name} backend's scene has no completion measure"
            return response
        from task_learning.world.completion import completion

        report = completion(scene, self.backend.metadata)
        response.success = True
        response.message = str(report)
        response.satisfied, response.total = report.satisfied, report.total
        response.ratio = report.satisfied / report.total if report.total else 1.0
        response.failures = list(report.failures)
        return response


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    # threads: an action (fetch: waiting for the skill server and a new frame) must not starve
    # the callbacks that bring the frames and the skill's result
    return run_node(PerceptionNode, args, name="perception", num_threads=6, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
