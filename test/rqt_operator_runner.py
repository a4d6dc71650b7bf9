"""Run real rqt with the operator plugin and answer one pending question through it (not a test
module: test_rqt_operator_panel.py starts it with the rqt venv's Python).

    python rqt_operator_runner.py REQUEST_ID ANSWER SCREENSHOT.png [TIMEOUT_S]

This is rqt's own `main` (rqt_gui.main.Main), started as `rqt -s task_learning/OperatorPanel`,
with a Qt timer added when rqt creates its application. The timer waits until the plugin's panel
shows the question REQUEST_ID (from the oversight node, through the plugin's ROS client on rqt's
node), saves a screenshot of the panel, clicks Yes or No (QTest from rqt's binding), waits for the
panel's "Sent:" line and closes rqt's window; rqt then shuts the plugin down and exits. One JSON
line on stdout says what happened; exit code 0 only if the click was sent.
"""
from __future__ import annotations

import json
import sys
import time

from rqt_gui.main import Main

REQUEST_ID, ANSWER, SCREENSHOT = sys.argv[1], sys.argv[2], sys.argv[3]
TIMEOUT_S = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
PANEL_NAME = "TaskLearningOperatorPanel"


class Driver:
    """Polls rqt's widgets from its own event loop (every 100 ms) and drives the panel."""

    def __init__(self, app) -> None:
        from python_qt_binding.QtCore import QTimer

        self.app = app
        self.start = time.monotonic()
        self.report: dict = {"request_id": REQUEST_ID, "sent": False}
        self.clicked = False
        self.timer = QTimer()
        self.timer.timeout.connect(self.tick)
        self.timer.start(100)

    def panel(self):
        from python_qt_binding.QtWidgets import QWidget

        for window in self.app.topLevelWidgets():
            found = window.findChild(QWidget, PANEL_NAME)
            if found is not None and hasattr(found, "current_request"):
                return found
        return None

    def finish(self, reason: str) -> None:
        self.timer.stop()
        self.report["reason"] = reason
        self.report["seconds"] = round(time.monotonic() - self.start, 2)
        print(json.dumps(self.report), flush=True)
        self.app.closeAllWindows()  # rqt calls the plugin's shutdown_plugin and exits

    def tick(self) -> None:
        try:
            self._tick()
        except Exception as exc:  # noqa: BLE001 - reported, never a hang
            self.finish(f"error: {exc!r}")

    def _tick(self) -> None:
        if time.monotonic() - self.start > TIMEOUT_S:
            panel = self.panel()
            self.report["status"] = panel.status_label.text() if panel is not None else None
            self.finish("timeout")
            return
        panel = self.panel()
        if panel is None:
            return
        self.report.setdefault("binding", type(panel).__mro__[1].__module__)
        if not self.clicked:
            request = panel.current_request()
            if request is None or not request.object_description.endswith(f"({REQUEST_ID})"):
                return
            self.report["question"] = panel.question_label.text()
            self.report["status_before"] = panel.status_label.text()
            self.report["candidates"] = panel.candidate_tree.topLevelItemCount()
            window = panel.window()  # rqt's main window, with the plugin's dock in it
            window.resize(1000, 720)
            self.app.processEvents()
            self.report["window"] = window.windowTitle()
            self.report["screenshot"] = bool(window.grab().save(SCREENSHOT))
            from python_qt_binding.QtCore import Qt
            from python_qt_binding.QtTest import QTest

            button = panel.yes_button if ANSWER == "yes" else panel.no_button
            QTest.mouseClick(button, Qt.LeftButton)
            self.clicked = True
            return
        status = panel.status_label.text()
        if status.startswith(("Sent", "Refused", "Answer not delivered")):
            self.report["status"] = status
            self.report["sent"] = status.startswith("Sent")
            self.finish("answered")


class ScreenshotMain(Main):
    """rqt's Main, with the driver attached to the application rqt creates."""

    def create_application(self, argv):
        app = super().create_application(argv)
        self.driver = Driver(app)
        return app


def main() -> int:
    runner = ScreenshotMain()
    code = runner.main(["rqt", "--force-discover", "-s", "task_learning/OperatorPanel"])
    driver = getattr(runner, "driver", None)
    if driver is None:
        print(json.dumps({"sent": False, "reason": "rqt created no application"}), flush=True)
        return 1
    return 0 if driver.report.get("sent") and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
