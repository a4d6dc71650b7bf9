"""The test run's reaper (not a test module): stops what a killed test run left running.

A test graph's processes run in sessions of their own (so a test can signal them as a terminal
would), so they outlive a pytest that is killed before its fixtures' teardown: SIGTERM (a CI
timeout, `kill`), SIGKILL, or a worker that dies. Seen before this: a `make test` stopped by
SIGTERM left a bringup and four nodes running for over an hour, on a domain id the next run
could take.

test/conftest.py marks every process the run starts with TASK_LEARNING_TEST_RUN=<token> in its
environment (children inherit it) and starts this reaper in a session of its own, holding the read
end of a pipe whose write end only pytest holds. When pytest ends, however it ends, the pipe
closes; the reaper then finds every process whose initial environment carries the token
(/proc/<pid>/environ), sends SIGINT (the nodes' clean stop), and SIGKILLs what is still there
after a grace period. After a normal run the fixtures have stopped everything and it finds
nothing.

    python -m test.reaper TOKEN      (stdin: the pipe)
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

MARK = "TASK_LEARNING_TEST_RUN"
GRACE_S = 5.0


def marked(token: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the processes started with MARK=token in their environment (not this one)."""
    needle = f"{MARK}={token}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def reap(token: str, grace_s: float = GRACE_S) -> list[int]:
    """SIGINT every marked process, then SIGKILL those still alive after `grace_s`; the pids."""
    pids = marked(token)
    for pid in pids:
        _signal(pid, signal.SIGINT)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and marked(token):
        time.sleep(0.1)
    for pid in marked(token):
        _signal(pid, signal.SIGKILL)
    return pids


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1]:
        print("usage: python -m test.reaper TOKEN (stdin: a pipe pytest holds)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the terminal is pytest's to handle
    while sys.stdin.buffer.read(4096):  # blocks until pytest's end closes the pipe
        pass
    left = reap(argv[1])
    if left:
        print(f"test reaper: stopped {len(left)} process(es) a test run left running: "
              f"{', '.join(map(str, left))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
