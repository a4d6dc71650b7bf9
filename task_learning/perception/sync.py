"""Approximate time synchronisation of several streams (what message_filters'
ApproximateTimeSynchronizer does on a ROS install; message_filters is not installable here).

Each stream keeps its last `queue` messages. When a message arrives, the newest message of the
pivot stream (the first one, the colour image) that has a partner within `slop_s` in every other
stream is emitted with those partners, and everything at or before them is dropped. Pure Python:
the node feeds it from its subscription callbacks (under one lock).
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Sequence


class ApproximateSync:
    def __init__(self, streams: Sequence[str], slop_s: float = 0.05, queue: int = 10) -> None:
        if not streams:
            raise ValueError("no streams to synchronise")
        if slop_s <= 0:
            raise ValueError(f"slop must be > 0 s, got {slop_s}")
        self.streams = list(streams)
        self.slop_s = slop_s
        self._queues: dict[str, deque[tuple[float, Any]]] = {s: deque(maxlen=max(queue, 1)) for s in streams}
        self._seen: dict[str, int] = {s: 0 for s in streams}
        self._lock = threading.Lock()

    def add(self, stream: str, stamp: float, message: Any) -> dict[str, tuple[float, Any]] | None:
        """Add one message; returns {stream: (stamp, message)} when a matched set is complete."""
        with self._lock:
            q = self._queues[stream]
            q.append((stamp, message))
            self._seen[stream] += 1
            if len(q) > 1 and q[-2][0] > stamp:  # out of order: keep the queue sorted
                items = sorted(q, key=lambda item: item[0])
                q.clear()
                q.extend(items)
            return self._match()

    def _match(self) -> dict[str, tuple[float, Any]] | None:
        pivot, *others = self.streams
        for stamp, message in reversed(self._queues[pivot]):
            chosen = {pivot: (stamp, message)}
            for other in others:
                candidates = self._queues[other]
                if not candidates:
                    return None
                best = min(candidates, key=lambda item: abs(item[0] - stamp))
                if abs(best[0] - stamp) > self.slop_s:
                    break
                chosen[other] = best
            else:
                for name, (used, _) in chosen.items():
                    q = self._queues[name]
                    while q and q[0][0] <= used:
                        q.popleft()
                return chosen
        return None

    def missing(self) -> list[str]:
        """Streams that never delivered a message."""
        with self._lock:
            return [s for s in self.streams if self._seen[s] == 0]

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._seen)
