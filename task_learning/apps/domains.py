"""A ROS graph of the demo's own: two demos on one machine must not reach each other's nodes (the
second one's PerformTask used to reach the first one's planner and fail "the robot is busy").

Without ROS_DOMAIN_ID set, the demo takes the first domain id of `DEMO_DOMAINS` that no other demo
on this machine holds (an exclusive lock file per id, released when the process ends, also when it
is killed) and on which no node answers (another graph someone started there). With ROS_DOMAIN_ID
set, that domain is used as asked, and a graph already up on it is an error that names its nodes.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TextIO

from task_learning.errors import TaskLearningError

DEMO_DOMAINS = range(150, 200)  # away from 0 (where graphs started by hand run) and the tests' ids


@dataclass
class DomainClaim:
    """A domain id this process holds; `close()` (or the process's end) lets it go."""

    domain_id: int
    lock: TextIO | None = None  # the held lock file (None: the domain was given, not chosen)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.close()
            self.lock = None


def lock_path(domain_id: int, folder: Path | None = None) -> Path:
    return (folder or Path(tempfile.gettempdir())) / f"task_learning-ros-domain-{domain_id}.lock"


def _try_lock(path: Path) -> TextIO | None:
    handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def claim_domain(requested: str | None, nodes_on: Callable[[int], list[str]], *,
                 candidates: Iterable[int] = DEMO_DOMAINS, folder: Path | None = None) -> DomainClaim:
    """The domain the demo runs its graph on (see the module docstring). `nodes_on(id)` lists the
    nodes a graph already has on that domain ([] when none answers)."""
    if requested is not None and requested.strip():
        try:
            domain_id = int(requested)
        except ValueError:
            raise TaskLearningError(f"ROS_DOMAIN_ID={requested!r} is not a number (0-232)") from None
        busy = nodes_on(domain_id)
        if busy:
            raise TaskLearningError(
                f"another ROS graph is up on ROS_DOMAIN_ID={domain_id} (its nodes: {', '.join(sorted(busy)[:8])}): "
                f"stop it, or leave ROS_DOMAIN_ID unset and the demo runs on a domain of its own")
        return DomainClaim(domain_id)
    for domain_id in candidates:
        lock = _try_lock(lock_path(domain_id, folder))
        if lock is None:  # another demo on this machine holds it
            continue
        if nodes_on(domain_id):  # a graph someone started by hand
            lock.close()
            continue
        return DomainClaim(domain_id, lock)
    raise TaskLearningError("every ROS domain the demo may use is taken by another demo or graph on this "
                            "machine: stop one, or set ROS_DOMAIN_ID to a free domain")
