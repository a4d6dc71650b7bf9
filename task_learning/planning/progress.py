"""Where each object of a task is (queued, eliciting, asking the operator, confirmed, reached, ...),
for progress a user can follow: the planner's PerformTask feedback and goal elicitation's
LearnGoals feedback (msg/ObjectProgress.msg lists the states and what they mean).

A task's objects are worked on in the task's order, but with cross-object elicitation the model
stages of all of them run at once, so a single "current object" no longer says where the task
is: every object has a state of its own.
"""
from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from enum import Enum
from typing import Callable, Collection, Iterable

from task_learning.inputs.safe_text import printable

MAX_DETAIL_CHARS = 200


class ObjectState(str, Enum):
    QUEUED = "queued"
    ELICITING = "eliciting"
    ELICITED = "elicited"
    ASKING = "asking_operator"
    CONFIRMED = "confirmed"
    CHOSEN = "chosen"
    REACHED = "reached"
    NO_GOAL = "no_goal"
    UNREACHABLE = "unreachable"
    MISSING = "missing"
    FAILED = "failed"


# What the task-learning loop's report outcome means for the object (planning.loop.ObjectReport).
REPORT_STATES = {"done": ObjectState.REACHED, "no_goal": ObjectState.NO_GOAL,
                 "unreachable": ObjectState.UNREACHABLE, "missing": ObjectState.MISSING}
# States goal elicitation reports while the object is still being learned; once the client has the
# object's result (a goal, confirmed or not), what the client knows wins over a late report.
LEARNING = frozenset({ObjectState.QUEUED, ObjectState.ELICITING, ObjectState.ELICITED, ObjectState.ASKING})

Snapshot = list[tuple[str, str, str]]  # (object_id, state, detail) in the task's order


class ObjectStates:
    """The state of every object of a task, thread-safe; `on_change` gets a snapshot after every
    change, in the thread that made the change, in the order the changes were made: two threads
    changing states at once never hand over their snapshots the other way round (a follower
    would see an object go back from reached to asking). `on_change` may read the states but
    must not block on another thread that changes them."""

    def __init__(self, object_ids: Iterable[str] = (), *,
                 on_change: Callable[[Snapshot], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._ordered = threading.RLock()  # held from a change until its snapshot is handed over
        self._states: dict[str, tuple[ObjectState, str]] = {
            object_id: (ObjectState.QUEUED, "") for object_id in object_ids}
        self.on_change = on_change

    def set(self, object_id: str, state: ObjectState, detail: str = "", *,
            only_from: Collection[ObjectState] | None = None) -> bool:
        """Set an object's state (an object not listed yet is added at the end); with `only_from`,
        only while its state is one of those (a late report must not undo a later state: e.g.
        `LEARNING` for goal elicitation's reports once the client has the object's result).
        Returns whether anything changed."""
        entry = (state, printable(detail, MAX_DETAIL_CHARS))
        with self._ordered:
            with self._lock:
                current = self._states.get(object_id)
                if current == entry or (only_from is not None and current is not None
                                        and current[0] not in only_from):
                    return False
                self._states[object_id] = entry
                snapshot = self._snapshot()
            if self.on_change is not None:
                self.on_change(snapshot)
        return True

    def ordered(self) -> AbstractContextManager[bool]:
        """Held while handing over a snapshot taken outside `set` (e.g. with other feedback), so
        that it cannot overtake a change made meanwhile."""
        return self._ordered

    def get(self, object_id: str) -> ObjectState | None:
        with self._lock:
            entry = self._states.get(object_id)
        return entry[0] if entry is not None else None

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> Snapshot:
        return [(object_id, state.value, detail) for object_id, (state, detail) in self._states.items()]
