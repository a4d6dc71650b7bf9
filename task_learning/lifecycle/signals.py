"""SIGINT and SIGTERM as a stop request a long-running main loop polls, recorded without a lock.

A Python signal handler runs in the main thread between two bytecodes, wherever that thread is,
including inside `threading.Event.wait` while it holds the Event's internal lock. A handler that
calls `Event.set()` then waits on that lock forever, and the process ignores SIGINT and SIGTERM
until something SIGKILLs it (the hangs measured: docs/ros.md, "History"). So the
handler only appends to a list (no lock taken), and the loop that waits looks at `received`
between its waits and sets its own Event.
"""
from __future__ import annotations

import signal
from types import FrameType
from typing import Callable, Iterable, Union

_Handler = Union[Callable[[int, Union[FrameType, None]], object], int, signal.Handlers, None]


class StopSignals:
    """Install with `install()`, put the previous handlers back with `restore()`."""

    def __init__(self, signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM)) -> None:
        self.signals = tuple(signals)
        self._received: list[int] = []
        self._previous: dict[signal.Signals, _Handler] = {}

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        self._received.append(signum)  # list.append takes no Python-level lock

    @property
    def received(self) -> bool:
        """True once one of the signals arrived (a second one changes nothing)."""
        return bool(self._received)

    def install(self) -> None:
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handler)

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()
