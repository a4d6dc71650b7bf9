"""The suite's ROS domain ids: a range per checkout (TASK_LEARNING_TEST_DOMAINS), so suites of two
checkouts run at once on one host never share a graph."""
from __future__ import annotations

import itertools

import pytest

from test.ros_testing import domain_range


def test_unset_means_every_id_but_the_developers_own() -> None:
    assert domain_range(None) == (1, 101)
    assert domain_range("") == (1, 101)


def test_a_range_is_read_and_bounded() -> None:
    assert domain_range("40-51") == (40, 51)
    for bad in ("0-10", "50-40", "1-102", "abc", "5"):
        with pytest.raises(ValueError, match="TASK_LEARNING_TEST_DOMAINS"):
            domain_range(bad)


def test_ids_stay_in_their_workers_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    import test.ros_testing as ros_testing

    monkeypatch.setattr(ros_testing, "DOMAIN_FIRST", 40)
    monkeypatch.setattr(ros_testing, "DOMAIN_LAST", 51)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    first = set(itertools.islice(ros_testing.domain_ids("gw0", seed=3), 30))
    second = set(itertools.islice(ros_testing.domain_ids("gw1", seed=3), 30))
    assert first == set(range(40, 46)) and second == set(range(46, 52))


def test_a_range_smaller_than_the_workers_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import test.ros_testing as ros_testing

    monkeypatch.setattr(ros_testing, "DOMAIN_FIRST", 7)
    monkeypatch.setattr(ros_testing, "DOMAIN_LAST", 7)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    with pytest.raises(ValueError, match="fewer ids than the 2 pytest-xdist workers"):
        next(ros_testing.domain_ids("gw1", seed=0))
