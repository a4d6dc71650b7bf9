"""How `--llm local` wires a graph (bringup and the launch share task_learning.apps.bringup.llm_wiring):
the llm_server node on a chosen port, every LLM node pointed at it; a given URL starts no server.
No process is started here (the graph itself: test_llm_local_graph.py)."""
from __future__ import annotations

from task_learning.apps.bringup import LLM_SERVER_NODE, llm_wiring, load_bringup_config, plan


def _commands(selected, overrides) -> dict[str, str]:
    return {launch.spec.name: " ".join(launch.command) for launch in plan(load_bringup_config(), selected, overrides)}


def test_local_adds_the_llm_server_node_and_points_every_llm_node_at_it():
    config = load_bringup_config()
    nodes, overrides = llm_wiring(config, None, "local", port=40123)
    commands = _commands(nodes, overrides)
    assert LLM_SERVER_NODE in commands and "port:=40123" in commands[LLM_SERVER_NODE]
    for name in ("goal_elicitation", "action_selector", "planner"):
        assert "llm:=local" in commands[name] and "llm_base_url:=http://127.0.0.1:40123/v1" in commands[name]
    assert "llm_base_url" not in commands["perception"] and "anticipation" not in commands  # default: false


def test_a_given_url_or_another_provider_starts_no_server():
    config = load_bringup_config()
    nodes, overrides = llm_wiring(config, ["goal_elicitation"], "local", base_url="http://10.0.0.5:8080/v1")
    commands = _commands(nodes, overrides)
    assert list(commands) == ["goal_elicitation"] and "llm_base_url:=http://10.0.0.5:8080/v1" in commands["goal_elicitation"]
    nodes, overrides = llm_wiring(config, None, "openai", model="my-model")
    assert nodes is None and overrides == {"llm": "openai", "llm_model": "my-model"}


def test_the_gguf_to_serve_goes_to_the_server_node_only():
    nodes, overrides = llm_wiring(load_bringup_config(), None, "local", model="/models/other.gguf", port=40124)
    assert overrides[f"{LLM_SERVER_NODE}.model"] == "/models/other.gguf" and "llm_model" not in overrides


def test_decoding_goes_to_every_node_with_an_llm_and_a_typo_is_one_line():
    """`bringup --decoding X` / `decoding:=X`: every node that talks to a model gets it (the nodes
    resolve auto themselves: grounded with local); empty leaves config/nodes/ as it is."""
    import pytest

    from task_learning.errors import TaskLearningError

    nodes = ["goal_elicitation", "action_selector", "planner", "anticipation", "perception"]
    _, overrides = llm_wiring(load_bringup_config(), nodes, "openai", decoding="Grounded")
    commands = _commands(nodes, overrides)
    for name in ("goal_elicitation", "action_selector", "planner", "anticipation"):
        assert "decoding:=grounded" in commands[name]
    assert "decoding" not in commands["perception"]
    assert "decoding" not in llm_wiring(load_bringup_config(), None, "local", port=40125)[1]
    with pytest.raises(TaskLearningError, match="unknown decoding 'constrained'"):
        llm_wiring(load_bringup_config(), None, "local", port=40126, decoding="constrained")


def test_the_demo_gives_its_decoding_to_the_graph():
    from pathlib import Path

    from task_learning_nodes.clients.demo import bringup_command

    command = bringup_command("task-learning", "tidy_kitchen", Path("kb.sqlite"), "symbolic", "local",
                              {"base_url": "http://127.0.0.1:8091/v1"}, decoding="free")
    assert command[command.index("--decoding") + 1] == "free"
    assert command[command.index("--base-url") + 1] == "http://127.0.0.1:8091/v1"
