"""`task-learning run --operator panel`: the run works in a thread while the Qt panel, in the main
thread, shows each question; answers given through the panel reach the run."""
from __future__ import annotations

import pytest

from task_learning.apps.cli import run_cmd
from task_learning.oversight import qt_compat as qt
from task_learning.oversight.simulated import SimulatedOperator
from task_learning.planning.session import RunSpec
from task_learning.world.scene import load_scene

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
