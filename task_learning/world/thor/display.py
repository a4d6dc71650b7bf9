"""An X display for AI2-THOR's Linux build: ai2thor puts DISPLAY into the simulator's
environment and fails (a TypeError deep inside subprocess) when it finds none.

`x_display` given: use it. Else $DISPLAY. Else, on Linux with Debian's `xvfb` installed (the
project's set-up installs it), a private Xvfb server on a free display number, stopped with the
bridge. Else a clear error saying what to do.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from task_learning.errors import TaskLearningError

log = logging.getLogger(__name__)
_SOCKETS = Path("/tmp/.X11-unix")


class Display:
    """A display name, and the Xvfb process behind it if this object started one."""

    def __init__(self, name: str, process: subprocess.Popen[bytes] | None = None) -> None:
        self.name = name
        self.process = process

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def acquire_display(x_display: str, platform: str, timeout_s: float = 10.0) -> Display | None:
    """The display the simulator gets (None where ai2thor needs none: macOS, CloudRendering)."""
    if x_display.strip():
        return Display(x_display.strip())
    if not sys.platform.startswith("linux") or platform == "CloudRendering":
        return None
    if os.environ.get("DISPLAY"):
        return Display(os.environ["DISPLAY"])
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise TaskLearningError(
            "AI2-THOR's Linux build needs an X display and none is set: set DISPLAY or the perception "
            "parameter ai2thor.x_display, or install Xvfb (apt-get install xvfb; `make setup` does)")
    for number in range(90 + os.getpid() % 400, 990):
        if (_SOCKETS / f"X{number}").exists() or Path(f"/tmp/.X{number}-lock").exists():
            continue
        process = subprocess.Popen([xvfb, f":{number}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (_SOCKETS / f"X{number}").exists():
                log.info("started Xvfb on :%d for AI2-THOR", number)
                return Display(f":{number}", process)
            if process.poll() is not None:
                break  # lost a race for this number: try the next
            time.sleep(0.05)
        else:
            process.kill()
            process.wait()
            raise TaskLearningError(f"Xvfb did not come up on :{number} within {timeout_s:g} s")
    raise TaskLearningError("no free X display number for Xvfb")
