"""action_selector_node: BCR action selection as a ROS service.

- serves `select_next_action` (task_learning_interfaces/srv/SelectNextAction): given the remaining
  goal literals and the outcomes so far (newest last), answers the next primitive action to run.
  The node keeps one BCR candidate tree per goal set across requests; the newest outcome is booked
  against the action it proposed last (a mismatch, or goals outside the session, starts over).
  With `candidates` filled, it only chooses among them.
- publishes the candidate tree on `bcr_tree` (CandidateTree, kind "bcr", with its DOT) after
  every selection, for the operator panel or `ros2 topic echo`.
- world state: the latest message on `world_state` (perception). With no perception running, set
  `scene`: the node then reads that scene's symbolic world until a world_state message arrives.

    action_selector_node --ros-args --params-file config/nodes/action_selector.yaml

All selection logic is `task_learning.bcr` (selector.ActionSelector); this file is ROS wiring.
"""
from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import ENGINES, make_engine
from task_learning.bcr.selector import ActionSelector
from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.lifecycle.signals import StopSignals
from task_learning.llm.answer_bounds import ANSWER_PROTOCOLS, resolve
from task_learning_interfaces.msg import CandidateTree
from task_learning_interfaces.srv import SelectNextAction
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import LatestWorldState, run_node
from task_learning_nodes.plumbing.params import LLMEndpointParameters, declare_parameters, llm_client_options, param
from task_learning_nodes.plumbing.qos import latched, service_qos

NODE_NAME = "action_selector"

class Parameters(LLMEndpointParameters):
    """The action_selector node's parameters (config/nodes/action_selector.yaml)."""

    service_name: str = param("select_next_action", "Name of the SelectNextAction service")
    tree_topic: str = param("bcr_tree", "The candidate tree (CandidateTree, kind bcr, with DOT) is "
                            "published here, latched, after each selection")
    world_state_topic: str = param("world_state", "The latest WorldState on this topic is the world "
                                   "selected in")
    world_state_transient_local: bool = param(False, "Subscribe transient local (latched) to get the "
                                              "last state on start; only matches a transient-local publisher")
    scene: str = param("", "With no perception: a scene (e.g. bcr_kitchen) whose symbolic testbed is "
                       "read until a world_state message arrives; empty: none")
    seed: int = param(-1, "Placement seed of that scene; -1 keeps it as written", min=-1, max=2**31 - 1)
    domain: str = param("household", "Domain file under config/domains/ (actions, blocking conditions, "
                        "resolutions)")
    engine: str = param("llm", "Selection engine: llm (the BCR paper's prompt) or heuristic (no LLM)",
                        choices=ENGINES)
    llm: str = param("offline", "LLM for engine llm: offline (not a language model), openai, local or "
                     "replay:FILE")
    max_actions: int = param(100, "Actions per task before the session ends as a failure", min=1,
                             max=100000)
    max_reasks: int = param(5, "Answers outside the candidate list are asked again this many times",
                            min=0, max=100)
    answers: str = param("auto", "How the llm engine's answers are asked for: paper (the protocol's own "
                         "$$ format and 300 tokens), bounded (one line after a cue: a base model's; "
                         "docs/llm.md) or auto (bounded with llm local, paper otherwise)",
                         choices=ANSWER_PROTOCOLS)
    search_action: str = param("VisualSearch", "Backend action run for BCR's VisualSearch (look around)")


class ActionSelectorNode(Node):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, Parameters)

        domain = load_domain(params.domain)  # ConfigError: one line, exit 2
        engine_name = params.engine
        client = None
        if engine_name == "llm":
            from task_learning.llm.client import make_client

            client = make_client(params.llm, **llm_client_options(params))
        options: dict[str, Any] = {}
        if client is not None:
            from task_learning.llm.constraints import resolve_decoding

            decoding, notice = resolve_decoding(params.decoding, params.llm, client.provider)
            if notice:
                self.get_logger().warning(notice)
            options = {"max_reasks": params.max_reasks, "scope": "action_selector",
                       "answers": resolve(params.answers, params.llm), "decoding": decoding.value}
        self.client = client  # diagnostics probe its endpoint
        engine = make_engine(engine_name, client, **options)
        self.selector = ActionSelector(domain, engine, client,
                                       max_actions=params.max_actions,
                                       search_action=params.search_action)
        initial: dict[str, Any] | None = None
        scene = str(params.scene or "")
        if scene:
            from task_learning.bcr.runner import make_world
            from task_learning.world.scene import load_scene

            seed = params.seed
            initial = make_world(load_scene(scene), None if seed < 0 else seed).metadata

        group = MutuallyExclusiveCallbackGroup()
        self.world = LatestWorldState(self, params.world_state_topic,
                                      convert.metadata_from_world_state_msg,
                                      transient_local=params.world_state_transient_local,
                                      initial=initial, initial_source=f"scene {scene}" if scene else "none",
                                      callback_group=group)
        self.tree_pub = self.create_publisher(CandidateTree, params.tree_topic, latched())
        self.create_service(SelectNextAction, params.service_name, self._on_select,
                            qos_profile=service_qos(),
                            callback_group=group)
        decoding_note = f", decoding {options['decoding']}" if "decoding" in options else ""
        self.get_logger().info(f"serving {params.service_name} (engine {engine_name}{decoding_note}); world "
                               f"state from {params.world_state_topic} ({self.world.source} until then)")

    def _on_select(self, request: SelectNextAction.Request,
                   response: SelectNextAction.Response) -> SelectNextAction.Response:
        metadata = self.world.get()
        if metadata is None:
            response.success = False
            response.message = ("no world state yet: run perception (world_state topic) or set "
                                "the 'scene' parameter")
            return response
        for name, limit in (("goal", 32), ("history", 1000), ("candidates", 256),
                            ("blocking_conditions", 256)):
            if len(getattr(request, name)) > limit:
                response.success = False
                response.message = f"bad request: {name}: {len(getattr(request, name))} entries, at most {limit}"
                return response
        try:
            goals = [convert.goal_literal_from_msg(g) for g in request.goal]
            history = [convert.action_outcome_from_msg(o) for o in request.history]
            candidates = [convert.action_call_from_msg(c) for c in request.candidates]
            answer = self.selector.select(goals, metadata, history,
                                          list(request.blocking_conditions), candidates)
        except (TaskLearningError, ValueError, KeyError) as exc:
            response.success = False
            response.message = f"bad request: {printable(str(exc), 300)}"
            return response
        response.success = answer.success
        response.message = answer.message
        if answer.call is not None:
            response.action = convert.action_call_to_msg(answer.call)
        response.rationale = answer.rationale
        response.usage = convert.llm_usage_to_msg(answer.usage)
        self._publish_tree()
        return response

    def diagnostics(self) -> list[Any]:
        """/diagnostics: the LLM endpoint of the llm engine (the heuristic needs none)."""
        from task_learning_nodes.plumbing.diagnostics import Check, Level, llm_check

        if self.client is None:
            return [Check("llm", Level.OK, "heuristic engine: no LLM")]
        return [llm_check(self.client)]

    def _publish_tree(self) -> None:
        nodes, edges, goal, dot = self.selector.tree_records()
        self.tree_pub.publish(convert.candidate_tree_to_msg(nodes, edges, kind="bcr", goal=goal,
                                                            dot=dot))


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(ActionSelectorNode, args, name=NODE_NAME, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
