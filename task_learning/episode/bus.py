"""`EpisodeBus`: one run's messages, handed to every sink that wants them.

The core publishes message dicts (`episode.messages`) on the episode's topics; sinks turn them
into something: an MCAP file (`episode.recorder.McapSink`), the live view's WebSocket
(`episode.live.LiveView`), a list kept in memory (`MemorySink`, what replay compares). A sink
names the topics it takes (`topics`, None: all).

Publishing never raises into the run: a sink that fails (a full disk) keeps its error and the
bus stops feeding it; `close()` closes every sink and raises the first error, so the command
that ran the episode ends with one line naming the file and a non-zero exit.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Protocol

from task_learning.errors import TaskLearningError

log = logging.getLogger(__name__)


class Sink(Protocol):
    @property
    def topics(self) -> Collection[str] | None: ...  # the topics it takes; None: every one

    def write(self, topic: str, message: Mapping[str, Any], log_time_ns: int) -> None: ...

    def close(self) -> None: ...


class EpisodeBus:
    def __init__(self, sinks: list[Sink] | None = None) -> None:
        self._sinks: list[Sink] = list(sinks or [])
        self._lock = threading.Lock()
        self._failed: dict[int, BaseException] = {}
        self.published = 0

    def add(self, sink: Sink) -> None:
        with self._lock:
            self._sinks.append(sink)

    def wants(self, topic: str) -> bool:
        """Whether any sink takes `topic` (so a costly message, a camera image, can be skipped)."""
        return any(s.topics is None or topic in s.topics for s in self._sinks)

    def publish(self, topic: str, message: Mapping[str, Any]) -> None:
        now = time.time_ns()
        with self._lock:  # one order for every sink: an episode's log times never go back
            self.published += 1
            for index, sink in enumerate(self._sinks):
                if index in self._failed or (sink.topics is not None and topic not in sink.topics):
                    continue
                try:
                    sink.write(topic, message, now)
                except Exception as exc:  # noqa: BLE001 - kept for close(); the run goes on
                    log.error("episode sink %s failed on %s: %s", type(sink).__name__, topic, exc)
                    self._failed[index] = exc

    def close(self) -> None:
        """Close every sink; the first failure (of a write or a close) is raised after all closed."""
        with self._lock:
            sinks, failed = list(self._sinks), dict(self._failed)
            self._sinks = []
        for index, sink in enumerate(sinks):
            try:
                sink.close()
            except Exception as exc:  # noqa: BLE001 - every sink is closed; the first failure is reported after
                failed.setdefault(index, exc)
        if failed:
            first = failed[min(failed)]
            if isinstance(first, TaskLearningError):
                raise first
            raise TaskLearningError(f"episode: {first}") from None

    def __enter__(self) -> "EpisodeBus":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class MemorySink:
    """Keeps every message (topic, dict) in memory: what replay compares with the file."""

    topics: Collection[str] | None = None
    messages: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)

    def write(self, topic: str, message: Mapping[str, Any], log_time_ns: int) -> None:
        self.messages.append((topic, message))

    def close(self) -> None:
        pass

    def on(self, topic: str) -> list[Mapping[str, Any]]:
        return [m for t, m in self.messages if t == topic]
