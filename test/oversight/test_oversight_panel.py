"""The operator panel without ROS (in-process queue backend), and the rqt plugin's wiring."""
from __future__ import annotations

import ast
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from task_learning.oversight.pending import QueueOperator
from task_learning.types import (
    AnswerKind,
    CandidateSource,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    Mismatch,
    MismatchKind,
    Truth,
)
from test.ros_testing import wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def app():
    from task_learning.oversight.qt_compat import QApplication

    return QApplication.instance() or QApplication([])


def _tree_texts(panel) -> list[str]:
    texts = []
    tree = panel.candidate_tree
    for i in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(i)
        texts.append(" | ".join(item.text(c) for c in range(5)))
        texts += ["  " + item.child(j).text(0) for j in range(item.childCount())]
    return texts


def test_panel_shows_candidates_with_repairs_mismatches_and_goals(app):
    from task_learning.oversight.panel import OperatorPanel

    repaired = GoalCandidate("the goal is that the mug is in the drawer and the drawer is closed",
                             0.913, CandidateSource.REPAIR, candidate_id=14, parent_id=1,
                             viable=True, repair_feedback="No. Cannot see a cabinet.",
                             literals=[GoalLiteral("inside", ("Mug|2", "Drawer|1")),
                                       GoalLiteral("open", ("Drawer|1",), Truth.FALSE)])
    unviable = GoalCandidate("the goal is that the mug is in the cabinet", 0.937, candidate_id=1,
                             viable=False, mismatches=[Mismatch(
                                 MismatchKind.UNGROUNDED_OBJECT, "no cabinet in the kitchen",
                                 "No. Cannot see a cabinet.", "cabinet")])
    queue = QueueOperator(timeout_s=10)
    request = ConfirmationRequest("p1", "For a mug in the dish rack is the goal that the mug is in "
                                  "the drawer and the drawer is closed?", "Mug|2",
                                  "mug in the dish rack", repaired, [unviable, repaired])
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("a", queue.ask(request)))
    thread.start()
    wait_until(queue.pending, 10, "the question pending", interval=0.005)
    panel = OperatorPanel(queue, poll_ms=0)
    panel.resize(900, 500)
    app.processEvents()
    texts = _tree_texts(panel)
    assert texts[0].startswith("1 | the goal is that the mug is in the cabinet | 0.937 | initial | no")
    assert "  mismatch (ungrounded_object): no cabinet in the kitchen -> \"No. Cannot see a cabinet.\"" in texts
    assert texts[2].startswith("▶ 14 | the goal is that the mug is in the drawer")
    assert "  repair of #1: No. Cannot see a cabinet." in texts
    assert "  goal: inside(Mug|2, Drawer|1), false:open(Drawer|1)" in texts
    panel.no_button.click()
    thread.join(5)
    assert box["a"].answer is AnswerKind.NO and box["a"].operator == "panel"
    assert panel.question_label.text() == "No question is waiting."
    assert not panel.no_button.isEnabled() and not panel.yes_button.isEnabled()
    panel.no_button.click()  # nothing selected: a message, no exception
    panel.stop()
    panel.close()
    panel.deleteLater()


def test_panel_reports_an_unreachable_backend(app):
    from task_learning.oversight.panel import OperatorPanel

    class Down:
        def pending(self):
            raise ConnectionError("the oversight node is not running")

        def submit(self, *args, **kwargs):
            raise AssertionError("not called")

    panel = OperatorPanel(Down(), poll_ms=0)
    assert "not running" in panel.status_label.text()
    panel.close()
    panel.deleteLater()


def test_the_read_error_goes_once_questions_arrive(app):
    from task_learning.oversight.panel import OperatorPanel

    queue = QueueOperator(timeout_s=10)

    class Late:
        """Not running at first (as when rqt starts before the oversight node), then up."""
        up = False

        def pending(self):
            if not self.up:
                raise ConnectionError("the oversight node is not running (yet)")
            return queue.pending()

        def submit(self, *args, **kwargs):
            return queue.submit(*args, **kwargs)

    backend = Late()
    panel = OperatorPanel(backend, poll_ms=0)
    assert panel.status_label.text().startswith("Cannot read pending questions")
    backend.up = True
    request = ConfirmationRequest("late-1", "For a mug in the dish rack is the goal that the mug is in "
                                  "the cupboard?", "Mug|2", "mug in the dish rack")
    thread = threading.Thread(target=queue.ask, args=(request,))
    thread.start()
    wait_until(queue.pending, 10, "the question pending", interval=0.005)
    panel.refresh()
    assert panel.current_request().request_id == "late-1"
    assert panel.status_label.text() == "", panel.status_label.text()
    panel.no_button.click()
    thread.join(5)
    assert panel.status_label.text().startswith("Sent")
    panel.refresh()  # a later successful read keeps the answer's line
    assert panel.status_label.text().startswith("Sent")
    panel.close()
    panel.deleteLater()


def test_qt_compat_takes_pyside6_standalone_and_qtest_from_the_same_binding():
    from task_learning.oversight import qt_compat

    assert qt_compat.BINDING == "PySide6"  # this process never imported python_qt_binding
    assert qt_compat.QTest.__module__.startswith("PySide6")
    assert qt_compat.QWidget.__module__.startswith("PySide6")


def test_rqt_plugin_is_declared_and_exported():
    plugin = ET.parse(REPO / "plugin.xml").getroot()
    cls = plugin.find("class")
    assert cls.get("base_class_type") == "rqt_gui_py::Plugin"
    module, _, name = cls.get("type").rpartition(".")
    assert module == "task_learning_nodes.clients.rqt_operator_panel"
    source = (REPO / "nodes" / "clients" / "rqt_operator_panel.py").read_text()
    classes = [n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef)]
    assert name in classes
    package = ET.parse(REPO / "package.xml").getroot()
    assert package.find("export/rqt_gui").get("plugin") == "${prefix}/plugin.xml"
