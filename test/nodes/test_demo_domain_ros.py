"""The demo's check for a graph already up on a domain (issue 40: a second demo reached the first
one's planner) sees the nodes another process has on that domain."""
from __future__ import annotations

import pytest

pytest.importorskip("rclpy")
from task_learning_nodes.clients.demo import nodes_on_domain


def test_the_nodes_of_a_graph_up_on_the_domain_are_seen(ros_graph):
    ros_graph.client("someone_elses_planner")
    assert "someone_elses_planner" in nodes_on_domain(ros_graph.domain_id, wait_s=20.0)
