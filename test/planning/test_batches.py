"""The rules of goal elicitation's LearnGoals batches (task_learning.planning.batches), without a ROS
graph: a batch belongs to its sender (another client's batch is refused and never closes it), a
batch closing never cancels an object's work, and a batch ends when every object was taken, when
its client closes it or when it idles. The offline stand-in (not a language model) answers."""
from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from task_learning.errors import TaskLearningError
from task_learning.lifecycle.cancellation import RunStopped
from task_learning.llm.client import make_client
from task_learning.llm.usage import copy_usage
from task_learning.planning.batches import (
    MAX_BATCH_OBJECTS,
    BatchBook,
    BatchRefused,
    check_object_ids,
    check_request,
    start_batch,
)
from task_learning.planning.progress import ObjectState
from task_learning.planning.session import task_order
from task_learning.stars.conditions import Condition
from task_learning.stars.together import CrossObjectElicitor
from task_learning.stars.tree import batched_sender
from task_learning.world.scene import load_scene
from test.ros_testing import wait_until

A, B = "a" * 32, "b" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class HeldSender:
    """Holds every merged level until released: the batch's model stages are still running."""

    def __init__(self, client) -> None:
        self.send = batched_sender(client)
        self.release = threading.Event()

    def __call__(self, requests):
        self.release.wait(60)
        return self.send(requests)


@pytest.fixture
def world():
    scene = load_scene("store_groceries")
    scene = replace(scene, task_objects=scene.task_objects[:3])
    metadata = {"objects": [dict(o) for o in scene.objects]}
    return scene, metadata, task_order(scene, metadata)


def _open(book: BatchBook, batch_id: str, world, *, sender=None, task=None):
    scene, metadata, order = world
    client = make_client("offline")
    elicitor = CrossObjectElicitor(client, scene, Condition.STARS, sender=sender)
    book.accepted(batch_id)
    book.claim(batch_id)
    batch = start_batch(batch_id, task or scene.task, Condition.STARS, list(order), elicitor, metadata,
                        copy_usage(client.usage))
    book.install(batch)
    return batch


def test_another_clients_batch_is_refused_and_the_open_one_goes_on(world):
    scene, metadata, order = world
    book = BatchBook(600.0)
    mine = _open(book, A, world)
    try:
        book.accepted(B)
        with pytest.raises(BatchRefused, match=rf"refused: batch {A[:8]} for '{scene.task}' of another client"):
            book.claim(B)
        assert book.open_batch is mine and not mine.closed.is_set()
        # The refused batch is not waited for: a LearnGoal naming it elicits its object alone.
        assert book.find(B, scene.task, Condition.STARS) is None
        # The open batch's objects are still taken from it, every one with a goal.
        for object_id in order:
            taken = book.take(mine, task=scene.task, object_id=object_id, metadata=metadata, stopping=lambda: False)
            assert taken.in_batch and taken.outcome.chosen is not None, taken.outcome.outcome
        assert book.end_reason(mine) == "every object taken"
    finally:
        book.close(mine)
    assert book.open_batch is None
    book.claim(B)  # the slot is free again


def test_an_object_whose_batch_closes_meanwhile_is_elicited_on_its_own(world):
    """The attack of issue 40: the batch closed under a LearnGoal waiting on its model stages used
    to end that object "canceled while the model stages ran; no goal learned"."""
    scene, metadata, order = world
    book = BatchBook(600.0)
    sender = HeldSender(make_client("offline"))
    batch = _open(book, A, world, sender=sender)
    got: dict = {}

    def take() -> None:
        try:
            got["taken"] = book.take(batch, task=scene.task, object_id=order[0], metadata=metadata,
                                     stopping=lambda: False)
        except Exception as exc:  # noqa: BLE001 - the test asserts there was none
            got["error"] = exc

    taker = threading.Thread(target=take)
    taker.start()
    wait_until(lambda: batch.busy == 1, 30, "the LearnGoal waits on the batch")
    closer = threading.Thread(target=book.close, args=(batch,))
    closer.start()
    wait_until(batch.closed.is_set, 30, "the batch closed")
    sender.release.set()
    closer.join(60)
    taker.join(120)
    assert "error" not in got, got.get("error")
    taken = got["taken"]
    assert not taken.in_batch and taken.outcome.chosen is not None  # counted in its own result
    assert batch.states.get(order[0]) is ObjectState.CHOSEN


def test_the_callers_own_cancel_stops_taking(world):
    scene, metadata, order = world
    book = BatchBook(600.0)
    sender = HeldSender(make_client("offline"))
    batch = _open(book, A, world, sender=sender)
    try:
        with pytest.raises(RunStopped):
            book.take(batch, task=scene.task, object_id=order[0], metadata=metadata, stopping=lambda: True)
        assert batch.states.snapshot()[0] == (order[0], "no_goal", "canceled")
        assert not batch.closed.is_set()
    finally:
        sender.release.set()
        book.close(batch)


def test_a_batch_its_client_is_closing_is_waited_for(world):
    book = BatchBook(600.0)
    first = _open(book, A, world)
    claimed = threading.Event()

    def claim() -> None:
        book.claim(B)
        claimed.set()

    book.closing(A)  # its client cancelled it: the next batch waits for its end instead of refused
    waiter = threading.Thread(target=claim)
    waiter.start()
    assert not claimed.wait(0.3)
    book.close(first)
    waiter.join(30)
    assert claimed.is_set()


def test_a_starting_batch_is_waited_for_and_only_its_task_and_condition_take_from_it(world):
    scene, _, _ = world
    book = BatchBook(600.0)
    book.accepted(A)
    found: dict = {}
    finder = threading.Thread(target=lambda: found.setdefault("batch", book.find(A.upper(), scene.task,
                                                                                  Condition.STARS)))
    finder.start()
    batch = _open(book, A, world)
    try:
        finder.join(30)
        assert found["batch"] is batch
        assert book.find(A, "another task", Condition.STARS) is None
        assert book.find(A, scene.task, Condition.STARS_O) is None
        assert book.find("", scene.task, Condition.STARS) is None
    finally:
        book.close(batch)
    assert book.find(A, scene.task, Condition.STARS) is None  # closed


def test_a_batch_ends_when_idle_but_not_while_a_learn_goal_runs_on_it(world):
    clock = Clock()
    book = BatchBook(10.0, clock=clock)
    batch = _open(book, A, world)
    try:
        clock.now = 9.0
        assert book.end_reason(batch) is None
        batch.busy = 1
        clock.now = 100.0
        assert book.end_reason(batch) is None
        batch.busy = 0
        assert book.end_reason(batch) == "no LearnGoal used it for 10 s"
        assert book.wait_end(batch, cancel_requested=lambda: True, shutting_down=lambda: False) == \
            "closed by the client"
        assert book.wait_end(batch, cancel_requested=lambda: False, shutting_down=lambda: True) == \
            "the node is shutting down"
    finally:
        book.close(batch)


def test_object_ids_and_request_fields_are_checked():
    assert check_object_ids([" Mug|1", "Cup|1", "Mug|1 "]) == ["Mug|1", "Cup|1"]
    for bad, message in (([], "at least one"), (["Mug|1", " "], "no empty id"),
                         (["x"] * (MAX_BATCH_OBJECTS + 1), "at most"), (["Mug\x1b[2J"], r"object_ids\[0\]")):
        with pytest.raises(TaskLearningError, match=message):
            check_object_ids(bad)
    check_request({"task": "tidy kitchen", "condition": "STARS"}, ["It is morning."])
    with pytest.raises(TaskLearningError, match="task: 201 characters"):
        check_request({"task": "x" * 201}, [])
    with pytest.raises(TaskLearningError, match="condition: control characters"):
        check_request({"condition": "STARS\x1b[2J"}, [])
    with pytest.raises(TaskLearningError, match="context: 21 sentences"):
        check_request({}, ["a"] * 21)
