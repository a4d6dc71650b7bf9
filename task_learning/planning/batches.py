"""Batches of STARS cross-object elicitation that a client opens, then takes objects from one at a time.

A batch is the goal elicitation node's LearnGoals goal: the model stages of every object of a task
run together (`stars.together.CrossObjectElicitor`), and the client then takes the objects one at a
time, in the task's order, each running its Oversight (+O) when the client is ready for it. This
module holds the rules of such batches, with no ROS in them, so they are tested without a graph:

- **A batch belongs to its sender.** One batch is open at a time (the node's LLM client and its
  usage are shared). Another client's batch, sent while one is open, is refused (`BatchRefused`);
  it never closes the open one. Only a batch its own client is closing (a cancel that was
  requested) is waited for, briefly, so the same client's next task does not race its previous
  batch's end. A client whose batch is refused still gets its goals: a LearnGoal naming a batch
  that is not open elicits its object on its own.
- **A batch closing never cancels an object's work.** When the batch closes while a LearnGoal
  waits on its model stages (its client closed it, it idled out), the object is elicited on its
  own instead, and its usage is counted in its own result.
- A batch ends when every object was taken (and no LearnGoal runs on it), when its client cancels
  it, when the node stops, or when no LearnGoal used it for `idle_s` (its client may be gone).
- A LearnGoal naming a batch that was accepted and is still starting waits for it (a client sends
  its LearnGoal as soon as the batch was accepted).

Who a sender is: the LearnGoals goal it sent (its id, the batch id). rclpy tells an action server
nothing else about the client, and a DDS participant can claim any identity on a graph without
SROS2 (docs/oversight-security.md says what this does and does not hold against).
"""
from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.lifecycle.cancellation import RunStopped
from task_learning.planning.progress import ObjectState, ObjectStates, Snapshot
from task_learning.stars.conditions import Condition
from task_learning.stars.elicit import ElicitationResult, PreparedElicitation, StageCallback
from task_learning.stars.together import CrossObjectElicitor
from task_learning.types import LLMUsage

MAX_BATCH_OBJECTS = 1000  # objects of one batch (the largest generated scene has 350)
MAX_TEXT_CHARS = 200  # task, object id, condition, batch id
MAX_CONTEXT = 20  # user-context sentences (STARS*)
MAX_CONTEXT_CHARS = 500
START_WAIT_S = 60.0  # how long a LearnGoal waits for the batch it names to start
CLOSING_WAIT_S = 10.0  # how long a new batch waits for one its client is closing
POLL_S = 0.1


class BatchRefused(TaskLearningError):
    """Another client's batch is open: this one is refused, and the open one goes on."""


def check_request(fields: Mapping[str, str], context: Sequence[str]) -> None:
    """Sizes and characters of a LearnGoal (or LearnGoals) request: TaskLearningError naming the field."""
    for name, value in fields.items():
        if len(value) > MAX_TEXT_CHARS:
            raise TaskLearningError(f"{name}: {len(value)} characters, at most {MAX_TEXT_CHARS}")
        if printable(value) != value:
            raise TaskLearningError(f"{name}: control characters are not allowed")
    if len(context) > MAX_CONTEXT:
        raise TaskLearningError(f"context: {len(context)} sentences, at most {MAX_CONTEXT}")
    for i, sentence in enumerate(context):
        if len(sentence) > MAX_CONTEXT_CHARS or printable(sentence) != sentence:
            raise TaskLearningError(f"context[{i}]: at most {MAX_CONTEXT_CHARS} printable characters")


def check_object_ids(object_ids: Sequence[str]) -> list[str]:
    """A batch's object ids, stripped, checked and without repeats (the first place kept)."""
    ids = [o.strip() for o in object_ids]
    if not ids or not all(ids):
        raise TaskLearningError("object_ids: give at least one object, and no empty id")
    if len(ids) > MAX_BATCH_OBJECTS:
        raise TaskLearningError(f"object_ids: {len(ids)} objects, at most {MAX_BATCH_OBJECTS}")
    for i, object_id in enumerate(ids):
        if len(object_id) > MAX_TEXT_CHARS or printable(object_id) != object_id:
            raise TaskLearningError(f"object_ids[{i}]: at most {MAX_TEXT_CHARS} printable characters")
    return list(dict.fromkeys(ids))


@dataclass
class Batch:
    """One open batch: its elicitor (model stages running or done), every object's state, and
    what ends it."""

    batch_id: str  # the LearnGoals goal id, 32 hex digits
    task: str
    condition: Condition
    object_ids: list[str]
    elicitor: CrossObjectElicitor
    states: ObjectStates
    usage_before: LLMUsage  # the node's LLM usage when it opened (its result gives what it added)
    last_used: float = 0.0
    busy: int = 0  # LearnGoal goals running on it now
    taken: set[str] = field(default_factory=set)
    closed: threading.Event = field(default_factory=threading.Event)

    @property
    def taken_count(self) -> int:
        return sum(1 for oid in self.object_ids if oid in self.taken)


def start_batch(batch_id: str, task: str, condition: Condition, object_ids: list[str],
                elicitor: CrossObjectElicitor, metadata: Mapping[str, object], usage_before: LLMUsage, *,
                on_change: Callable[[Snapshot], None] | None = None) -> Batch:
    """A batch whose model stages run: every object of it that needs eliciting is prefetched
    (TaskLearningError for an unknown object id, and nothing started); `on_change` sees every
    object's state from then on (a first snapshot at once)."""
    batch = Batch(batch_id, task, condition, object_ids, elicitor, ObjectStates(object_ids), usage_before)
    elicitor.prefetch(task, object_ids, metadata)
    for object_id, future in elicitor.prefetched().items():
        batch.states.set(object_id, ObjectState.ELICITING)
        future.add_done_callback(functools.partial(_stages_ended, batch.states, object_id))
    batch.states.on_change = on_change
    if on_change is not None:
        on_change(batch.states.snapshot())
    return batch


def _stages_ended(states: ObjectStates, object_id: str, future: Future[PreparedElicitation]) -> None:
    """A prefetched object's model stages ended: elicited, or failed (its LearnGoal then elicits it
    on its own); a cancelled one (the batch closed) keeps its state."""
    if future.cancelled():
        return
    state = ObjectState.FAILED if future.exception() is not None else ObjectState.ELICITED
    states.set(object_id, state, only_from=(ObjectState.ELICITING,))


@dataclass
class Taken:
    """An object's elicitation taken from a batch; `in_batch`: its usage is counted in the batch's
    result (False when the batch closed first and the object was elicited on its own)."""

    outcome: ElicitationResult
    in_batch: bool


class BatchBook:
    """The one open batch of a goal elicitation node, and its rules (see the module docstring).
    Thread-safe: the batch's own goal, the LearnGoals that take its objects and the cancels run in
    threads of their own."""

    def __init__(self, idle_s: float, *, clock: Callable[[], float] = time.monotonic,
                 start_wait_s: float = START_WAIT_S, closing_wait_s: float = CLOSING_WAIT_S) -> None:
        self.idle_s = idle_s
        self._clock = clock
        self._start_wait_s = start_wait_s
        self._closing_wait_s = closing_wait_s
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._holder: str | None = None  # the batch id that holds the slot (starting or open)
        self._batch: Batch | None = None  # the holder's batch, once it started
        self._closing: set[str] = set()  # batches whose client asked to close them
        self._starting: set[str] = set()  # accepted, not started nor refused yet

    # -------------------------------------------------------------------- opening and closing
    def accepted(self, batch_id: str) -> None:
        """A batch was accepted: LearnGoals naming it wait for it to start (or be refused)."""
        with self._lock:
            self._starting.add(batch_id)

    def claim(self, batch_id: str, *, stopping: Callable[[], bool] = lambda: False) -> None:
        """Take the slot for `batch_id`, or BatchRefused when another client's batch holds it. A
        batch its client is closing is waited for up to `closing_wait_s`."""
        deadline = self._clock() + self._closing_wait_s
        with self._lock:
            while (self._holder is not None and self._holder in self._closing and not stopping()
                   and self._clock() < deadline):
                self._changed.wait(POLL_S)
            holder = self._holder
            if holder is not None and holder != batch_id:
                self._starting.discard(batch_id)
                self._changed.notify_all()
                task = f" for {self._batch.task!r}" if self._batch is not None else ""
                raise BatchRefused(f"refused: batch {holder[:8]}{task} of another client is open (a batch "
                                   f"belongs to its sender; it ends when its client closes it, every object "
                                   f"was taken, or after {self.idle_s:g} s unused)")
            self._holder = batch_id

    def install(self, batch: Batch) -> None:
        """The claimed batch started: LearnGoals naming it take their objects from it."""
        with self._lock:
            if self._holder != batch.batch_id:
                raise RuntimeError(f"batch {batch.batch_id[:8]} did not claim the slot")
            batch.last_used = self._clock()
            self._batch = batch
            self._starting.discard(batch.batch_id)
            self._changed.notify_all()

    def release(self, batch_id: str) -> None:
        """`batch_id` no longer holds the slot (it failed to start, or ended)."""
        with self._lock:
            self._starting.discard(batch_id)
            self._closing.discard(batch_id)
            if self._holder == batch_id:
                self._holder, self._batch = None, None
            self._changed.notify_all()

    def closing(self, batch_id: str) -> None:
        """Its client asked to close `batch_id` (a cancel): a batch waiting for the slot may take it
        once this one ended."""
        with self._lock:
            if self._holder == batch_id:
                self._closing.add(batch_id)

    def close(self, batch: Batch) -> None:
        """The batch is no longer open: its model stages stop (after the level in flight)."""
        self.release(batch.batch_id)
        batch.closed.set()
        batch.elicitor.close()

    @property
    def open_batch(self) -> Batch | None:
        with self._lock:
            return self._batch

    # -------------------------------------------------------------------- taking objects
    def find(self, batch_id: str, task: str, condition: Condition, *,
             stopping: Callable[[], bool] = lambda: False) -> Batch | None:
        """The open batch `batch_id` names (waited for while it starts), when it is for this task
        and condition; None: the object is elicited on its own."""
        batch_id = batch_id.strip().lower()
        if not batch_id:
            return None
        deadline = self._clock() + self._start_wait_s
        with self._lock:
            while batch_id in self._starting and not stopping() and self._clock() < deadline:
                self._changed.wait(POLL_S)
            batch = self._batch
        if batch is None or batch.batch_id != batch_id or batch.closed.is_set():
            return None
        if batch.task != task or batch.condition is not condition:
            return None
        return batch

    def take(self, batch: Batch, *, task: str, object_id: str, metadata: Mapping[str, object],
             stopping: Callable[[], bool], on_stage: StageCallback | None = None,
             on_ready: Callable[[], None] = lambda: None, asks_operator: bool = False) -> Taken:
        """One object of a batch: its model stages (waited for, or run now on its own when it was
        not prefetched, has moved, or the batch closed meanwhile), then its Oversight, in the
        caller's thread. RunStopped only when `stopping()` says so (the caller's own cancel)."""
        states = batch.states
        with self._lock:
            batch.busy += 1
            batch.last_used = self._clock()
        try:
            if object_id not in batch.elicitor.prefetched():
                states.set(object_id, ObjectState.ELICITING)
            try:
                batch.elicitor.wait_ready(object_id, lambda: stopping() or batch.closed.is_set())
            except RunStopped:
                if stopping():
                    raise
            in_batch = not batch.closed.is_set()  # else: its prefetch stopped, it is elicited on its own
            on_ready()
            if asks_operator:
                states.set(object_id, ObjectState.ASKING)
            outcome = batch.elicitor(task=task, object_id=object_id, metadata=metadata, on_stage=on_stage)
            chosen = outcome.chosen
            if chosen is None:
                states.set(object_id, ObjectState.NO_GOAL, outcome.outcome)
            else:
                states.set(object_id, ObjectState.CONFIRMED if outcome.oversight is not None else ObjectState.CHOSEN,
                           chosen.text)
            return Taken(outcome, in_batch)
        except RunStopped:
            states.set(object_id, ObjectState.NO_GOAL, "canceled")
            raise
        finally:
            with self._lock:
                batch.taken.add(object_id)
                batch.busy -= 1
                batch.last_used = self._clock()

    # -------------------------------------------------------------------- the end
    def end_reason(self, batch: Batch) -> str | None:
        """Why the batch ends now (every object taken, idle), or None while it stays open."""
        if batch.closed.is_set():
            return "closed"
        with self._lock:
            busy, idle = batch.busy, self._clock() - batch.last_used
            every = all(oid in batch.taken for oid in batch.object_ids)
        if not busy and every:
            return "every object taken"
        if not busy and idle > self.idle_s:
            return f"no LearnGoal used it for {self.idle_s:g} s"
        return None

    def wait_end(self, batch: Batch, *, cancel_requested: Callable[[], bool],
                 shutting_down: Callable[[], bool]) -> str:
        """Until the batch ends; says why."""
        while True:
            if cancel_requested():
                return "closed by the client"
            if shutting_down():
                return "the node is shutting down"
            reason = self.end_reason(batch)
            if reason is not None:
                return reason
            batch.closed.wait(POLL_S)
