"""A watchdog that stops the Ray processes a sweep started when the sweep ends without stopping
them itself (SIGKILL, the out-of-memory killer, a crash of the interpreter).

Ray ties its core processes (GCS, raylet, workers) to the driver that started them, but measured
here with Ray 2.60 its dashboard and runtime-env agents outlived a SIGKILLed driver (reparented
to init, still running a minute later). So the driver starts this watchdog as a process of its
own (its own session: a terminal's Ctrl-C does not reach it), tells it every process it finds
below itself, as "pid starttime" lines on its standard input, and the watchdog, on end of file
(the driver closed the pipe or died), SIGKILLs each of them that still runs with the same start
time (a pid reused since is left alone). Linux only (it reads /proc); elsewhere it does nothing.

    python -m task_learning.apps.sweeps.reaper     (started by Reaper, never by hand)
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterable

PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a process, None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> list[tuple[int, int]]:
    """(pid, start time) of every process below `root`, from one pass over /proc."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                children.setdefault(stat[0], []).append(int(entry.name))
                starts[int(entry.name)] = stat[1]
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append((pid, starts[pid]))
        todo.extend(children.get(pid, []))
    return found


class Reaper:
    """The driver's side: `watch()` after starting processes, `close()` at the end (which also
    kills whatever the shutdown left running)."""

    def __init__(self, remove: Path | None = None) -> None:
        """`remove`: a folder the watchdog deletes at the end (the short link to Ray's folder)."""
        self._seen: set[tuple[int, int]] = set()
        self._proc: subprocess.Popen | None = None
        if PROC.is_dir():
            self._proc = subprocess.Popen([sys.executable, "-m", __name__] + ([str(remove)] if remove else []),
                                          stdin=subprocess.PIPE, text=True, start_new_session=True)

    def watch(self) -> None:
        """Tell the watchdog about every process now below this one."""
        if self._proc is None or self._proc.stdin is None:
            return
        own = {self._proc.pid}
        new = [(pid, start) for pid, start in descendants(os.getpid())
               if (pid, start) not in self._seen and pid not in own]
        if new:
            self._seen.update(new)
            try:
                self._proc.stdin.write("".join(f"{pid} {start}\n" for pid, start in new))
                self._proc.stdin.flush()
            except OSError:  # the watchdog is gone: nothing more to tell it
                self._proc.stdin = None

    def close(self, timeout_s: float = 10.0) -> None:
        if self._proc is None:
            return
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None


def kill_remaining(watched: Iterable[tuple[int, int]]) -> int:
    """SIGKILL each watched process still running with its recorded start time; how many."""
    killed = 0
    for pid, start in watched:
        stat = _stat(pid)
        if stat is not None and stat[1] == start:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a stray Ctrl-C must not end the watch early
    watched: list[tuple[int, int]] = []
    for line in sys.stdin:
        pid, _, start = line.strip().partition(" ")
        if pid.isdigit() and start.isdigit():
            watched.append((int(pid), int(start)))
    kill_remaining(watched)
    if len(sys.argv) > 1:
        shutil.rmtree(sys.argv[1], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
