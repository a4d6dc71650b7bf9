"""grounding_node: STARS's Analysis as a ROS service (the STARS paper, §4.2 and appendix B.4).

- serves `grounding/analyze_goal` (task_learning_interfaces/srv/AnalyzeGoal): the candidate's text
  is analysed against the latest world state with `object_id` as the object in context; the
  response carries the candidate with analyzed/viable/mismatches/literals filled.
- world state: the latest message on `world_state` (perception). When no perception runs, set the
  `scene` parameter: the node then analyses against that scene's symbolic world at its start until
  a world_state message arrives (and keeps using messages from then on).
- bad requests (empty, oversized, non-ASCII or control characters in the text) get an analysis
  with an `uninterpretable`/`unknown_word` verdict; an unknown object id, or no world state yet,
  gets success=false with a message. The node keeps serving either way.

    grounding_node --ros-args --params-file config/nodes/grounding.yaml -p scene:=tidy_kitchen

All analysis is `task_learning.grounding.analyze_goal`; this file is only the ROS wiring.
"""
from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.grounding import GroundingKnowledge, analyze_goal
from task_learning.grounding.scene_state import resolve_object, scene_world_state
from task_learning.inputs.safe_text import printable
from task_learning.lifecycle.signals import StopSignals
from task_learning.types import WorldState
from task_learning_interfaces.srv import AnalyzeGoal
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import LatestWorldState, run_node
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param

NODE_NAME = "grounding"
DEFAULT_SERVICE = "grounding/analyze_goal"
DEFAULT_TOPIC = "world_state"

class Parameters(NodeParameters):
    """The grounding node's parameters (config/nodes/grounding.yaml)."""

    service_name: str = param(DEFAULT_SERVICE, "Name of the AnalyzeGoal service")
    world_state_topic: str = param(DEFAULT_TOPIC, "The latest WorldState on this topic is the world analysed")
    world_state_transient_local: bool = param(False, "Subscribe transient local (latched) to get the last "
                                              "state on start; only matches a transient-local publisher")
    scene: str = param("", "With no perception running: a scene name or file whose symbolic world is "
                       "analysed until a world_state message arrives; empty: none (requests are refused until then)")


MAX_FIELD_CHARS = 200  # task, location, object_id
MAX_SENTENCE_CHARS = 100_000  # the goal sentence analysed (a long one still gets a verdict)


def _size_problem(request: AnalyzeGoal.Request) -> str:
    """Why a request is refused for its size (field and length), or ""."""
    for name in ("task", "location", "object_id"):
        value = getattr(request, name)
        if len(value) > MAX_FIELD_CHARS:
            return f"{name}: {len(value)} characters, at most {MAX_FIELD_CHARS}"
    if len(request.candidate.text) > MAX_SENTENCE_CHARS:
        return f"candidate.text: {len(request.candidate.text)} characters, at most {MAX_SENTENCE_CHARS}"
    if len(request.candidate.mismatches) > 100 or len(request.candidate.literals) > 100:
        return "candidate: at most 100 mismatches and 100 literals"
    return ""


class GroundingNode(Node):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, Parameters)

        self.knowledge = GroundingKnowledge.load()  # raises ConfigError: exit 2, one line
        scene = str(params.scene or "")
        initial: WorldState | None = None
        if scene:
            initial = scene_world_state(scene)  # TaskLearningError for an unknown scene
            self.knowledge.index(initial)

        group = MutuallyExclusiveCallbackGroup()
        self.world = LatestWorldState(self, params.world_state_topic, convert.world_state_from_msg,
                                      transient_local=params.world_state_transient_local,
                                      initial=initial, initial_source=f"scene {scene}" if scene else "none",
                                      callback_group=group)
        from task_learning_nodes.plumbing.qos import service_qos

        self.create_service(AnalyzeGoal, params.service_name, self._on_analyze,
                            qos_profile=service_qos(), callback_group=group)
        self.get_logger().info(f"serving {params.service_name}; world state from "
                               f"{params.world_state_topic} ({self.world.source} until then)")

    def diagnostics(self) -> list[Any]:
        """/diagnostics: the world analysed against (the grounding knowledge loaded at start)."""
        from task_learning_nodes.plumbing.diagnostics import Check, Level

        return [Check("world", Level.OK if self.world.get() is not None else Level.WARN,
                      f"world from {self.world.source}")]

    def _resolve_context(self, state: WorldState, name: str) -> str:
        if not name or any(o.object_id == name for o in state.objects):
            return name
        metadata: dict[str, Any] = {"sceneName": state.scene,
                                    "objects": [o.properties for o in state.objects]}
        return resolve_object(metadata, name)

    def _on_analyze(self, request: AnalyzeGoal.Request,
                    response: AnalyzeGoal.Response) -> AnalyzeGoal.Response:
        problem = _size_problem(request)
        if problem:  # refused before anything is copied or analysed (a 5 MB field is not echoed)
            response.success = False
            response.message = problem
            self.get_logger().warning(f"bad AnalyzeGoal request: {problem}", throttle_duration_sec=1.0)
            return response
        response.candidate = request.candidate
        state = self.world.get()
        if state is None:
            response.success = False
            response.message = ("no world state yet: nothing published on the world_state topic "
                                "and no scene parameter")
            return response
        try:
            candidate = convert.goal_candidate_from_msg(request.candidate)
            context = self._resolve_context(state, request.object_id.strip())
            analysis = analyze_goal(candidate.text, state, context or None, self.knowledge)
        except (TaskLearningError, ValueError) as exc:
            response.success = False
            response.message = printable(str(exc), 300)
            self.get_logger().warning(f"bad AnalyzeGoal request: {response.message}")
            return response
        except Exception as exc:  # noqa: BLE001 - one bad request must not stop the service
            response.success = False
            response.message = f"internal error: {exc!r}"
            self.get_logger().error(f"analysis failed for {request.candidate.text[:80]!r}: {exc!r}")
            return response
        candidate.viable = analysis.viable
        candidate.mismatches = list(analysis.mismatches)
        candidate.literals = list(analysis.literals)
        response.candidate = convert.goal_candidate_to_msg(candidate)
        response.success = True
        response.message = analysis.feedback
        return response


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(GroundingNode, args, name=NODE_NAME, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
