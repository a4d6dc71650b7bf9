"""Helpers for the child processes the stack starts and owns (ROS nodes under bringup, the local
LLM server): a child that dies with its parent, and an exit status in words."""
from __future__ import annotations

import signal
import sys
from typing import Callable


def describe_exit(code: int) -> str:
    """`-9` -> "killed by SIGKILL", `3` -> "exit code 3"."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def die_with_parent() -> Callable[[], None] | None:
    """What a child runs before exec to get SIGTERM if its parent dies (Linux), so it is never
    orphaned, even when the parent is killed with SIGKILL. libc is loaded here, in the parent:
    between fork and exec the child may only make the call (an import there can deadlock on a lock
    another thread of the parent held at the fork). Linux sends the signal when the *thread* that
    started the child ends: start children from a thread that lives as long as they should."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
