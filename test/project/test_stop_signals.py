"""task_learning.lifecycle.signals: SIGINT/SIGTERM recorded by a handler that takes no lock, so a
signal landing while the main thread is inside Event.wait cannot deadlock the process."""
from __future__ import annotations

import os
import signal
import threading

from task_learning.lifecycle.signals import StopSignals


def test_a_signal_is_recorded_and_the_previous_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    signals = StopSignals((signal.SIGTERM,))
    signals.install()
    try:
        assert not signals.received
        os.kill(os.getpid(), signal.SIGTERM)  # handled in this (the main) thread before kill returns
        assert signals.received
    finally:
        signals.restore()
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_handler_runs_where_an_event_wait_holds_its_lock():
    """Where the old handler (stop.set()) waited for ever: the signal lands in Event.wait between
    two bytecodes, with the Event's own lock held by the very thread the handler runs in."""
    stop = threading.Event()
    signals = StopSignals((signal.SIGINT,))
    handled = threading.Event()

    def land_inside_wait() -> None:
        with stop._cond:  # what Event.wait holds while it checks or returns
            signals._handler(signal.SIGINT, None)
        handled.set()

    thread = threading.Thread(target=land_inside_wait, daemon=True)
    thread.start()
    assert handled.wait(10), "the handler blocked on the lock the interrupted wait held"
    assert signals.received and not stop.is_set()  # the loop, not the handler, sets its Event
