"""Two demos at once on one machine (issue 40): the second runs on a ROS domain of its own, never on
one another demo holds or a graph is up on; an explicit ROS_DOMAIN_ID with a graph up on it is an
error naming that graph's nodes. No ROS graph needed: `nodes_on` stands in for the discovery."""
from __future__ import annotations

import pytest

from task_learning.apps.domains import claim_domain
from task_learning.errors import TaskLearningError


def test_a_second_demo_takes_another_domain_and_a_freed_one_is_taken_again(tmp_path):
    first = claim_domain(None, lambda _d: [], candidates=range(150, 153), folder=tmp_path)
    second = claim_domain(None, lambda _d: [], candidates=range(150, 153), folder=tmp_path)
    assert (first.domain_id, second.domain_id) == (150, 151)
    first.close()
    third = claim_domain(None, lambda _d: [], candidates=range(150, 153), folder=tmp_path)
    assert third.domain_id == 150
    second.close()
    third.close()


def test_a_domain_with_a_graph_up_is_skipped_and_none_left_is_said_plainly(tmp_path):
    up = {150: ["planner", "perception"]}
    claim = claim_domain(None, lambda d: up.get(d, []), candidates=range(150, 152), folder=tmp_path)
    assert claim.domain_id == 151
    with pytest.raises(TaskLearningError, match="every ROS domain the demo may use is taken"):
        claim_domain(None, lambda d: up.get(d, []), candidates=range(150, 152), folder=tmp_path)
    claim.close()


def test_an_explicit_domain_with_a_graph_up_names_its_nodes(tmp_path):
    with pytest.raises(TaskLearningError, match=r"another ROS graph is up on ROS_DOMAIN_ID=7 \(its nodes: "
                                                r"perception, planner\)"):
        claim_domain("7", lambda d: ["planner", "perception"] if d == 7 else [], folder=tmp_path)
    assert claim_domain("7", lambda _d: [], folder=tmp_path).domain_id == 7
    with pytest.raises(TaskLearningError, match="ROS_DOMAIN_ID='x' is not a number"):
        claim_domain("x", lambda _d: [], folder=tmp_path)
