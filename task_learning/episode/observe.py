"""What publishes an in-process run's messages on an `EpisodeBus`: thin wrappers and callbacks
around the run's own parts, none of which knows it is watched.

- `ObservedWorld`: each primitive action (`/action`), its outcome (`/action_outcome`), the world
  after it (`/world_state`), and the camera when the backend has one (`/camera/color/image_raw`, and
  `/camera/highlighted` with the object being worked on boxed, for the live view);
- `ObservedOperator`: each question put to the operator and the answer (`/oversight/*`);
- `StarsTreePublisher`: the STARS candidate tree after every level and stage (`/stars_tree`);
- `BcrTreePublisher`: BCR's candidate tree at each decision (`/bcr_tree`);
- `LLMCallPublisher`: every LLM request and response, as the LLM client's cassette recorder
  (`/llm/calls`, the cassette entry as JSON: replay reads it back as a cassette);
- `kb_observer`: the knowledge base's committed writes with their provenance (`/kb/changes`).
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, runtime_checkable

from task_learning.episode import messages as msgs
from task_learning.episode.bus import EpisodeBus
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.replay import cassette_entry
from task_learning.types import ActionCall, ConfirmationAnswer, ConfirmationRequest
from task_learning.world.backend import WorldBackend
from task_learning.world.outcome import action_outcome

if TYPE_CHECKING:
    from task_learning.bcr.agent import BCRAgent
    from task_learning.llm.replay import CallRecorder
    from task_learning.oversight.operator import Operator
    from task_learning.world.camera_model import CameraModel
    from task_learning.world.thor.camera import CameraPose

log = logging.getLogger(__name__)


@runtime_checkable
class PosedCamera(Protocol):
    """A world that knows its camera (the AI2-THOR backend): where objects fall in its image."""

    def intrinsics(self) -> CameraModel: ...

    def camera_pose(self) -> CameraPose: ...

HIGHLIGHTED = "/camera/highlighted"  # live view only: the camera with the current object boxed


class ObservedWorld:
    """A WorldBackend whose actions and states are published; everything else passes through."""

    def __init__(self, world: WorldBackend, bus: EpisodeBus, *, backend: str = "", scene: str = "") -> None:
        self._world = world
        self._bus = bus
        self._backend = backend
        self._scene = scene
        self.name = getattr(world, "name", "world")
        self.current_object = ""  # the task object being worked on (boxed in the live camera)

    @property
    def metadata(self) -> dict[str, Any]:
        return self._world.metadata

    def publish_state(self, metadata: Mapping[str, Any] | None = None) -> None:
        self._bus.publish(msgs.WORLD_STATE, msgs.world_state(metadata if metadata is not None else self.metadata,
                                                             backend=self._backend, scene=self._scene))
        self._publish_camera(metadata if metadata is not None else self.metadata)

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        kwargs = dict(params)
        call = ActionCall(action, str(kwargs.pop("objectId", "") or ""), tuple(sorted(kwargs.items())))
        self._bus.publish(msgs.ACTION, msgs.action_call(call))
        metadata = self._world.step(action, **params)
        self._bus.publish(msgs.ACTION_OUTCOME, msgs.action_outcome(action_outcome(call, metadata)))
        self.publish_state(metadata)
        return metadata

    def _publish_camera(self, metadata: Mapping[str, Any]) -> None:
        frame = getattr(self._world, "frame", None)
        if frame is None or not hasattr(frame, "shape"):
            return
        if self._bus.wants(msgs.CAMERA):
            self._bus.publish(msgs.CAMERA, msgs.image(frame))
        if self._bus.wants(HIGHLIGHTED):
            self._bus.publish(HIGHLIGHTED, msgs.image(self._highlight(frame, metadata)))

    def _highlight(self, frame: Any, metadata: Mapping[str, Any]) -> Any:
        """The frame with a box around the current object, where the camera sees its centre."""
        box = object_box(self._world, metadata, self.current_object)
        if box is None:
            return frame
        import cv2

        out = frame.copy()
        (u0, v0), (u1, v1) = box
        cv2.rectangle(out, (u0, v0), (u1, v1), (255, 200, 0), 2)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)


def object_box(world: WorldBackend, metadata: Mapping[str, Any], object_id: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Pixel corners of a box around `object_id` in the world's camera image (a backend with
    `intrinsics()` and `camera_pose()`, the AI2-THOR one), or None when it is not in view."""
    if not object_id or not isinstance(world, PosedCamera):
        return None
    record = next((o for o in metadata.get("objects") or () if o.get("objectId") == object_id), None)
    if record is None or not record.get("position"):
        return None
    from task_learning.world.thor.camera import project

    p = record["position"]
    try:
        intrinsics = world.intrinsics()
        pixel = project((float(p["x"]), float(p["y"]), float(p["z"])), intrinsics, world.camera_pose())
    except (KeyError, TypeError, ValueError) as exc:
        log.debug("no box for %s: %s", object_id, exc)
        return None
    if pixel is None:
        return None
    u, v, depth = pixel
    half = max(8, int(0.25 * intrinsics.fx / max(depth, 0.1)))  # about a 0.5 m object
    if not (0 <= u < intrinsics.width and 0 <= v < intrinsics.height):
        return None
    return (int(u) - half, int(v) - half), (int(u) + half, int(v) + half)


class ObservedOperator:
    """An Operator whose questions and answers are published (the person is asked as before)."""

    def __init__(self, inner: Operator, bus: EpisodeBus) -> None:
        self.inner = inner
        self.name = inner.name
        self._bus = bus

    def ask(self, request: ConfirmationRequest, **kwargs: Any) -> ConfirmationAnswer:
        """The inner operator's answer (`kwargs`, e.g. who asks, passed on as they came)."""
        self._bus.publish(msgs.QUESTION, msgs.question(request))
        reply = self.inner.ask(request, **kwargs)
        self._bus.publish(msgs.ANSWER, msgs.answer(reply))
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class StarsTreePublisher:
    """`on_tree` of stars.elicit: the object's candidate tree after each level and stage."""

    def __init__(self, bus: EpisodeBus, task: str, world: ObservedWorld | None = None) -> None:
        self._bus = bus
        self._task = task
        self._world = world

    def __call__(self, prep: Any, stage: str) -> None:
        if self._world is not None:
            self._world.current_object = prep.object_id
        tree = prep.tree
        chosen = prep.chosen if stage in ("selection", "highest_score", "oversight") else None
        self._bus.publish(msgs.STARS_TREE, msgs.stars_tree(self._task, prep.object_id, stage,
                                                           list(tree.candidates), tree.levels(), chosen))


class BcrTreePublisher:
    """`on_decision` of the goal executor: BCR's tree with the chosen action marked selected."""

    def __init__(self, bus: EpisodeBus) -> None:
        self._bus = bus

    def __call__(self, agent: BCRAgent, call: ActionCall) -> None:
        from task_learning.bcr.literals import literal_text

        nodes, edges = agent.tree.to_records()
        goal = " & ".join(literal_text(g) for g in agent.goals)
        self._bus.publish(msgs.BCR_TREE, msgs.bcr_tree(nodes, edges, goal))


class LLMCallPublisher:
    """A cassette recorder for `LLMClient.recorder` that publishes each entry on `/llm/calls`;
    `then` is a recorder that was already there (record:FILE), which keeps recording too."""

    def __init__(self, bus: EpisodeBus, then: CallRecorder | None = None) -> None:
        self._bus = bus
        self._then = then
        self.recorded = 0

    def record(self, request: LLMRequest, response: LLMResponse, *, provider: str = "", model: str = "") -> None:
        self._bus.publish(msgs.LLM_CALLS, {"data": json.dumps(
            cassette_entry(request, response, provider=provider, model=model), ensure_ascii=False)})
        self.recorded += 1
        if self._then is not None:
            self._then.record(request, response, provider=provider, model=model)

    def close(self) -> None:
        if self._then is not None:
            self._then.close()


def kb_observer(bus: EpisodeBus) -> Callable[[str, dict[str, Any]], None]:
    """`KnowledgeBase.on_change`: each committed write, with its provenance, on `/kb/changes`."""
    return lambda kind, data: bus.publish(msgs.KB_CHANGES, msgs.string({"kind": kind, "data": data}))
