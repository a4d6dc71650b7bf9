"""The real model in the ROS graph: `task-learning bringup --llm local` starts the llm_server node
(llama-server with the installed Gemma 3 270M, a managed process of the graph) and points the LLM
nodes at it. A server that hangs ends the PerformTask goal with a reason naming the LLM server;
a server that dies is started again by its node; either way the next goal is served.

Marked `llm` (needs `make llm`, which `make test` runs first); one graph, a few real calls."""
from __future__ import annotations

import os
import re
import signal

import pytest

from test.ros_testing import CLI, wait_future

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.timeout(900)]


def learn(client, object_id: str = "Mug|2", condition: str = "ST"):
    from task_learning_interfaces.action import LearnGoal

    handle = wait_future(client.send_goal_async(LearnGoal.Goal(task="tidy kitchen", object_id=object_id,
                                                               context=[], condition=condition)),
                         60.0, "LearnGoal goal")
    assert handle.accepted
    return wait_future(handle.get_result_async(), 300.0, "LearnGoal result").result


def test_the_graph_manages_the_llm_server_and_names_it_when_it_fails(ros_graph, tmp_path):
    from task_learning.inputs.config import config_dir
    from task_learning.llm.local_install import local_paths
    from task_learning_interfaces.action import LearnGoal, PerformTask
    from task_learning_nodes.plumbing.node_base import ActionClient

    if not local_paths().installed():
        pytest.fail("the local model is not installed: run `make llm` (make test does it first)")
    import shutil

    config = tmp_path / "config"
    shutil.copytree(config_dir(), config)
    llm_yaml = config / "llm.yaml"  # a hung call is looked into after 15 s, not 120
    text = llm_yaml.read_text()
    text = text.replace("  timeout_s: 120.0 ", "  timeout_s: 15.0 ").replace("health_timeout_s: 5.0", "health_timeout_s: 2.0")
    assert "  timeout_s: 15.0 " in text and "health_timeout_s: 2.0" in text
    llm_yaml.write_text(text)
    bringup = ros_graph.start([CLI, "bringup", "--llm", "local", "--scene", "tidy_kitchen",
                               "--db", str(tmp_path / "kb.sqlite"),
                               "--param", "goal_elicitation.max_requests:=12",
                               "--param", "goal_elicitation.llm_cache:=none"],
                              name="bringup", TASK_LEARNING_CONFIG=str(config))
    serving = bringup.wait_for_line(r"serving at (http://127\.0\.0\.1:\d+/v1) \(pid (\d+)", timeout=180.0)
    url, pid = serving.group(1), int(serving.group(2))
    ros = ros_graph.client("llm_graph_test")
    learn_client = ActionClient(ros.node, LearnGoal, "learn_goal")
    perform = ActionClient(ros.node, PerformTask, "perform_task")
    assert learn_client.wait_for_server(timeout_sec=120.0) and perform.wait_for_server(timeout_sec=120.0)

    # The LLM nodes were pointed at the graph's server (one server for the graph).
    assert re.search(rf"llm_base_url:={re.escape(url)}", bringup.output) or url in bringup.output

    # 1. A goal served by the real model through the graph's server.
    first = learn(learn_client)
    assert first.usage.calls >= 1 and first.usage.failures == 0, first.message

    # 2. The server hangs: the PerformTask goal ends with a reason naming it (nothing confirmed yet).
    os.kill(pid, signal.SIGSTOP)
    try:
        handle = wait_future(perform.send_goal_async(PerformTask.Goal(task="tidy kitchen", scene="tidy_kitchen",
                                                                      condition="ST")), 60.0, "PerformTask goal")
        result = wait_future(handle.get_result_async(), 300.0, "PerformTask result").result
    finally:
        os.kill(pid, signal.SIGCONT)
    assert not result.success
    assert "LLM server" in result.message and "hangs" in result.message, result.message

    # 3. Back: the next goal is served again (the node gives the endpoint a fresh chance).
    again = learn(learn_client)
    assert again.usage.calls >= 1 and "unavailable" not in again.message, again.message

    # 4. The server dies: its node starts it again on the same port, and the next goal is served.
    os.kill(pid, signal.SIGKILL)
    bringup.wait_for_line(r"died: killed by SIGKILL", timeout=60.0)
    bringup.wait_for_line(rf"restarted: serving at {re.escape(url)} again", timeout=180.0)
    after = learn(learn_client)
    assert after.usage.calls >= 1 and "unavailable" not in after.message, after.message
    learn_client.destroy()
    perform.destroy()
