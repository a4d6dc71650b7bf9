"""A bound on how long a process may take to stop: past it, every thread's stack goes to stderr
and the process exits with code 1, so a hang names itself instead of waiting for SIGKILL.

Why not `faulthandler.dump_traceback_later` alone: its watchdog is a C thread that walks the
other threads' frames without holding the GIL. When another thread is still running Python (a
node's executor keeps spinning while `stop_work()` ends the long callbacks), those frames change
under the walk, which can crash the process with SIGSEGV in the middle of the dump (docs/ros.md,
"History"): a hang reported as a crash. Here a Python timer thread does the dump while it holds the GIL
(faulthandler.dump_traceback writes without releasing it), so no Python frame changes meanwhile,
then ends the process with os._exit. The C watchdog stays armed BACKSTOP_S later for the one hang
the timer cannot see: a thread that holds the GIL and never lets it go.
"""
from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading

logger = logging.getLogger(__name__)

BACKSTOP_S = 0.5  # how long after the limit faulthandler's C watchdog fires, for a hang where the
#                   timer thread never gets the GIL (limit + BACKSTOP_S stays under launch's 10 s)
EXIT_HUNG = 1


def timeout_header(limit_s: float) -> str:
    """The first line faulthandler's own watchdog prints ("Timeout (0:00:09)!"), so a reader or a
    log filter sees one format whichever of the two reported the hang."""
    whole = int(limit_s)
    micro = round((limit_s - whole) * 1_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = f".{micro:06d}" if micro else ""
    return f"Timeout ({hours}:{minutes:02d}:{seconds:02d}{fraction})!\n"


class StopDeadline:
    """`arm()` when stopping starts, `disarm()` when it is over; one use per instance."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        faulthandler.dump_traceback_later(self.limit_s + BACKSTOP_S, exit=True)
        self._timer = threading.Timer(self.limit_s, self._expire)
        self._timer.name = "stop-deadline"
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        faulthandler.cancel_dump_traceback_later()

    def _expire(self) -> None:
        # The backstop first: its walk must not run beside this one. cancel_dump_traceback_later
        # waits for a dump already under way, and then this process ends anyway.
        faulthandler.cancel_dump_traceback_later()
        try:
            sys.stdout.flush()  # os._exit below flushes nothing
            sys.stderr.write(timeout_header(self.limit_s))
            sys.stderr.flush()
            faulthandler.dump_traceback(all_threads=True)
        except (OSError, ValueError) as exc:  # a closed or broken stderr: still end the hang
            logger.debug("could not print the stacks: %s", exc)
        finally:
            os._exit(EXIT_HUNG)
