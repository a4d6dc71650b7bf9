"""`task-learning run --operator panel`: the run works in a thread while the Qt panel, in the main
thread, shows each question; answers given through the panel reach the run."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess

import pytest

from task_learning.apps.cli import run_cmd
from task_learning.oversight import qt_compat as qt
from task_learning.oversight.simulated import SimulatedOperator
from task_learning.planning.session import RunSpec
from task_learning.world.scene import load_scene
from test.ros_testing import CLI, wait_until

pytestmark = pytest.mark.slow  # a whole task answered through the Qt panel


def test_questions_answered_in_the_panel_reach_the_run(tmp_path):
    app = qt.QApplication.instance() or qt.QApplication([])
    user = SimulatedOperator.from_scene(load_scene("organize_office"))
    seen: list[str] = []

    def answer_like_a_person() -> None:
        panels = [w for w in app.topLevelWidgets() if w.isVisible() and hasattr(w, "current_request")]
        for panel in panels:
            panel.refresh_now()
            request = panel.current_request()
            if request is None or request.request_id in seen:
                continue
            seen.append(request.request_id)
            reply = user.ask(request)
            if reply.answer.value == "yes":
                panel.yes_button.click()
            elif reply.answer.value == "no":
                panel.no_button.click()
            else:
                panel.description_edit.setPlainText(reply.description)
                panel.send_button.click()

    timer = qt.QTimer()
    timer.timeout.connect(answer_like_a_person)
    timer.start(20)
    spec = RunSpec(scene="organize_office", condition="STARS+O", operator="panel", db=tmp_path / "kb.sqlite")
    metrics, learner = run_cmd._run_with_panel(spec, None)
    timer.stop()
    assert metrics.completion == 100.0
    assert metrics.yes_no == len(seen) > 0
    assert all(r.outcome == "done" for r in learner.reports)


def _questions(db) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM questions").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_ends_a_run_with_the_panel_while_a_question_waits(tmp_path, sig):
    """Issue 40: Ctrl-C printed KeyboardInterrupt tracebacks and the process was alive 35 s later."""
    db = tmp_path / "kb.sqlite"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([CLI, "run", "--scene", "store_groceries", "--condition", "STARS+O", "--operator",
                             "panel", "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        wait_until(lambda: _questions(db) > 0 or proc.poll() is not None, 120, "the panel shows a question")
        assert proc.poll() is None
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)  # before: still running 35 s later
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    with sqlite3.connect(db) as conn:  # the waiting question ended with no yes
        assert conn.execute("SELECT COUNT(*) FROM answers WHERE answer = 'yes'").fetchone()[0] == 0
