"""task_learning.lifecycle.stop_deadline: a stop that hangs prints every thread's stack and exits 1, from a
Python thread holding the GIL while other threads still run Python; faulthandler's C watchdog is
the backstop only for a thread that never lets the GIL go. Each case runs in its own process,
since the deadline ends the process it is armed in."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from task_learning.lifecycle.stop_deadline import BACKSTOP_S, timeout_header

pytestmark = pytest.mark.slow

RUN_LIMIT_S = 60  # a child that outlives this hung for good: the deadline did not end it


def run_child(body: str) -> subprocess.CompletedProcess[str]:
    code = "import sys, threading, time\nfrom task_learning.lifecycle.stop_deadline import StopDeadline\n"
    return subprocess.run([sys.executable, "-c", code + textwrap.dedent(body)], capture_output=True,
                          text=True, timeout=RUN_LIMIT_S)


@pytest.mark.parametrize("limit_s, header", [
    (9.0, "Timeout (0:00:09)!\n"),
    (0.5, "Timeout (0:00:00.500000)!\n"),
    (3725.25, "Timeout (1:02:05.250000)!\n"),
])
def test_the_header_is_written_as_faulthandler_writes_it(limit_s, header):
    assert timeout_header(limit_s) == header


def test_the_header_matches_faulthandlers_own_watchdog():
    child = run_child("""
        import faulthandler
        faulthandler.dump_traceback_later(0.25, exit=True)
        threading.Event().wait()
    """)
    assert child.returncode == 1, child.stderr
    assert child.stderr.startswith(timeout_header(0.25)), child.stderr


def test_a_hung_stop_names_every_thread_while_another_still_runs_python():
    """The CI crash's conditions: one thread keeps calling Python functions (frames pushed and
    popped all the time) while the main thread hangs past the limit."""
    child = run_child("""
        def busy_callback(n):
            return n + 1

        def keep_spinning():
            n = 0
            while True:
                n = busy_callback(n)

        def hang_in_stop_work():
            threading.Event().wait()

        threading.Thread(target=keep_spinning, daemon=True).start()
        StopDeadline(0.5).arm()
        hang_in_stop_work()
    """)
    assert child.returncode == 1, child.stderr
    err = child.stderr
    assert err.startswith(timeout_header(0.5)), err
    assert err.count("Timeout (") == 1, err  # the Python dump ran; the backstop was cancelled
    assert "hang_in_stop_work" in err and "keep_spinning" in err, err


def test_a_stop_that_ends_in_time_disarms_both_bounds():
    child = run_child(f"""
        deadline = StopDeadline(0.2)
        deadline.arm()
        deadline.disarm()
        time.sleep(0.2 + {BACKSTOP_S} + 1.0)  # past both: neither may fire any more
        print("still here")
    """)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "still here"
    assert "Timeout" not in child.stderr


def test_a_thread_that_never_releases_the_gil_meets_the_backstop():
    """The Python timer cannot run while one thread keeps the GIL; faulthandler's watchdog, a C
    thread, still ends the process BACKSTOP_S later. The loop calls nothing, so the watchdog's
    walk reads a frame that does not change."""
    child = run_child("""
        sys.setswitchinterval(1e6)  # the running thread is not asked to give the GIL up
        StopDeadline(0.3).arm()
        while True:
            pass
    """)
    assert child.returncode == 1, child.stderr
    assert child.stderr.startswith(timeout_header(0.3 + BACKSTOP_S)), child.stderr
