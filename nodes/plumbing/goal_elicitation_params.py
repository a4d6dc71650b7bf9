"""The goal elicitation node's parameters (config/nodes/goal_elicitation.yaml), in a module of their
own so the node module holds only the node: the model is what `declare_parameters` declares with
descriptors and ranges, and what the parameter reference and the parameter-file checks read."""
from __future__ import annotations

from task_learning_nodes.plumbing.params import LLMEndpointParameters, param

DEFAULT_ACTION = "learn_goal"
DEFAULT_BATCH_ACTION = "learn_goals"
DEFAULT_TOPIC = "world_state"


class Parameters(LLMEndpointParameters):
    """The goal_elicitation node's parameters (config/nodes/goal_elicitation.yaml)."""

    action_name: str = param(DEFAULT_ACTION, "Name of the LearnGoal action server")
    learn_goals_action: str = param(DEFAULT_BATCH_ACTION, "Name of the LearnGoals action server (the objects "
                                    "of a task elicited together, merged into shared round trips)")
    batch_idle_s: float = param(600.0, "Seconds a LearnGoals batch stays open without a LearnGoal taking an "
                                "object from it (its client may be gone); a later LearnGoal naming it elicits its object alone",
                                min=1.0, max=86400.0)
    llm: str = param("offline", "LLM: offline (deterministic, not a language model), openai (see "
                     "config/llm.yaml), local (Gemma 3 270M on llama-server) or replay:FILE (a cassette)")
    llm_cache: str = param("memory", "Response cache: memory, none, or a file path (a rerun then costs 0 "
                           "calls)")
    condition: str = param("STARS", "Condition used when a goal leaves it empty: TBP, TBP+O, ST, STS, "
                           "STAR, STARS, STARS* (tidy kitchen only), STARS+O, STARS+CTX")
    max_workers: int = param(8, "Concurrent requests of one search-tree level (1 = sequential)", min=1,
                             max=256)
    max_requests: int = param(1500, "Hard cap on goal requests per object, over the tree and all repairs",
                              min=1, max=1000000)
    scene: str = param("", "Scene whose initial state is used until a world state arrives (empty: wait "
                       "for the topic); also the location and STARS* user context when a goal gives none")
    location: str = param("", "Gross location for the prompt (I am in <location>); empty: the scene's")
    world_state_topic: str = param(DEFAULT_TOPIC, "Perception's world state topic")
    world_state_transient_local: bool = param(False, "Subscribe transient local (latched) to get the "
                                              "last state on start; only matches a transient-local publisher")
    oversight_timeout_s: float = param(120.0, "Seconds the operator gets per question in the +O "
                                       "conditions (through oversight_node)", min=0.1, max=86400.0)
    oversight_wait_s: float = param(5.0, "Seconds to wait for the oversight node's services before a +O "
                                    "goal fails naming it", min=0.1, max=3600.0)
    stack_key_file: str = param("", "Key file the stack's nodes sign their questions with (the oversight "
                                "node's stack_key_file); empty: $ROS_HOME/task_learning/stack.key")
    llm_latency_s: float = param(0.0, "Benches only: a fixed delay added to every round trip to the model "
                                 "(task_learning.llm.latency.FixedLatencyProvider), so wall time shows how many round trips "
                                 "there were; 0 in use", min=0.0, max=60.0)
