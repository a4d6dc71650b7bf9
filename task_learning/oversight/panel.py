"""The operator panel: one Qt widget, used standalone (PySide6) and inside rqt (python_qt_binding).

It shows the pending questions (oldest first), the selected question with its object and place,
the candidates behind it (scores, sources, the mismatches and repairs that produced them, their
grounded literals), the time it has left, Yes / No buttons and a text box for the goal in plain
words or a listed candidate's number (read by `answers.interpret_reply`, as every front end reads
replies: "maybe" or an empty box is not sent, the status line says what is expected). Where questions come
from and where answers go is a `PanelBackend`: the in-process `QueueOperator`, or the ROS client of
the oversight node (`task_learning_nodes.clients.oversight_client`). The widget never imports rclpy.
"""
from __future__ import annotations

import logging
from typing import Any, Protocol

from task_learning.oversight.answers import interpret_reply, remaining_text
from task_learning.oversight.qt_compat import (
    QAbstractItemView,
    QFont,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    Qt,
    QTimer,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from task_learning.types import ConfirmationRequest, GoalCandidate

log = logging.getLogger(__name__)

PANEL_OPERATOR = "panel"


class PanelBackend(Protocol):
    """Where the panel reads questions and sends answers."""

    def pending(self) -> list[ConfirmationRequest]: ...

    def submit(self, request_id: str, answer: str, description: str = "",
               operator: str = PANEL_OPERATOR) -> Any:  # .accepted: bool, .message: str
        ...


def _candidate_row(cand: GoalCandidate, asked: bool) -> QTreeWidgetItem:
    viable = "?" if cand.viable is None else ("yes" if cand.viable else "no")
    item = QTreeWidgetItem([("▶ " if asked else "") + str(cand.candidate_id), cand.text,
                            f"{cand.score:.3f}", cand.source.value, viable])
    item.setToolTip(1, cand.text)
    if asked:
        font = QFont()
        font.setBold(True)
        for column in range(5):
            item.setFont(column, font)
    if cand.parent_id >= 0 or cand.repair_feedback:
        how = f"repair of #{cand.parent_id}" if cand.source.value.startswith("repair") else \
            f"from #{cand.parent_id}"
        detail = f"{how}: {cand.repair_feedback}" if cand.repair_feedback else how
        item.addChild(QTreeWidgetItem([detail]))
    for mismatch in cand.mismatches:
        item.addChild(QTreeWidgetItem([f"mismatch ({mismatch.kind.value}): {mismatch.detail} "
                                       f"-> \"{mismatch.feedback}\""]))
    if cand.literals:
        item.addChild(QTreeWidgetItem(["goal: " + ", ".join(str(lit) for lit in cand.literals)]))
    return item


class OperatorPanel(QWidget):
    """Answer the oversight node's questions with a click or a sentence."""

    def __init__(self, backend: PanelBackend, *, poll_ms: int = 250, operator: str = PANEL_OPERATOR,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.operator = operator
        self._requests: dict[str, ConfirmationRequest] = {}
        self._current: str = ""
        self._read_error = ""  # the status line's read error, cleared once reading works again
        self.setObjectName("TaskLearningOperatorPanel")
        self.setWindowTitle("task_learning: operator")
        self._build()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.refresh)
        if poll_ms > 0:
            self._timer.start(poll_ms)
        self.refresh()

    # --- layout ------------------------------------------------------------------------------

    def _build(self) -> None:
        layout = QVBoxLayout(self)

        self.queue_list = QListWidget()
        self.queue_list.setMaximumHeight(90)
        self.queue_list.currentItemChanged.connect(self._on_select)
        queue_box = QGroupBox("Pending questions (oldest first)")
        QVBoxLayout(queue_box).addWidget(self.queue_list)
        layout.addWidget(queue_box)

        question_box = QGroupBox("Question")
        q_layout = QVBoxLayout(question_box)
        self.question_label = QLabel("No question is waiting.")
        self.question_label.setWordWrap(True)
        font = self.question_label.font()
        font.setPointSize(font.pointSize() + 2)
        font.setBold(True)
        self.question_label.setFont(font)
        self.object_label = QLabel("")
        self.request_label = QLabel("")
        self.request_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        q_layout.addWidget(self.question_label)
        q_layout.addWidget(self.object_label)
        q_layout.addWidget(self.request_label)
        layout.addWidget(question_box)

        self.candidate_tree = QTreeWidget()
        self.candidate_tree.setHeaderLabels(["#", "Goal candidate", "Score", "Source", "Viable"])
        self.candidate_tree.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.candidate_tree.header()
        header.setStretchLastSection(False)  # the goal text gets the spare width, not "Viable"
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.candidate_tree.setColumnWidth(0, 70)  # details span the row; do not size to them
        for column in (2, 3, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        cand_box = QGroupBox("Candidates behind the question")
        QVBoxLayout(cand_box).addWidget(self.candidate_tree)
        layout.addWidget(cand_box, 1)

        buttons = QHBoxLayout()
        self.yes_button = QPushButton("Yes")
        self.no_button = QPushButton("No")
        self.yes_button.setObjectName("yesButton")
        self.no_button.setObjectName("noButton")
        self.yes_button.clicked.connect(lambda: self._answer("yes"))
        self.no_button.clicked.connect(lambda: self._answer("no"))
        buttons.addWidget(self.yes_button)
        buttons.addWidget(self.no_button)
        layout.addLayout(buttons)

        desc_box = QGroupBox("Or answer in words: the goal, or a candidate's number")
        d_layout = QHBoxLayout(desc_box)
        self.description_edit = QPlainTextEdit()
        self.description_edit.setPlaceholderText("put it in the cupboard  |  in the fridge, closed  |  17")
        self.description_edit.setMaximumHeight(60)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.send_button.clicked.connect(self._send_description)
        d_layout.addWidget(self.description_edit, 1)
        d_layout.addWidget(self.send_button)
        layout.addWidget(desc_box)

        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        layout.addWidget(self.status_label)
        self._show(None)

    # --- data --------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Poll the backend; redraw only when the set of pending questions changed."""
        try:
            pending = list(self.backend.pending())
        except Exception as exc:  # noqa: BLE001 - shown in the window; the panel keeps polling
            self._read_error = f"Cannot read pending questions: {exc}"
            self.status_label.setText(self._read_error)
            return
        if self._read_error:  # the backend answers again: the old error no longer holds
            if self.status_label.text() == self._read_error:
                self.status_label.setText("")
            self._read_error = ""
        ids = [r.request_id for r in pending]
        if ids == list(self._requests):
            self._show_time_left()
            return
        self._requests = {r.request_id: r for r in pending}
        self.queue_list.blockSignals(True)
        self.queue_list.clear()
        for request in pending:
            label = request.object_description or request.object_id or request.request_id
            kind = "describe" if request.wants_description else "yes/no"
            item = QListWidgetItem(f"[{kind}] {label}: {request.question}")
            item.setData(Qt.ItemDataRole.UserRole, request.request_id)
            self.queue_list.addItem(item)
        self.queue_list.blockSignals(False)
        keep = self._current if self._current in self._requests else (ids[0] if ids else "")
        if keep:
            self.queue_list.setCurrentRow(ids.index(keep))
        self._show(self._requests.get(keep))

    def current_request(self) -> ConfirmationRequest | None:
        return self._requests.get(self._current)

    def _on_select(self, item: QListWidgetItem | None, _previous: Any = None) -> None:
        if item is not None:
            self._show(self._requests.get(item.data(Qt.ItemDataRole.UserRole)))

    def _show(self, request: ConfirmationRequest | None) -> None:
        self._current = request.request_id if request else ""
        self.candidate_tree.clear()
        has = request is not None
        self.yes_button.setEnabled(request is not None and not request.wants_description)
        self.no_button.setEnabled(has)
        self.send_button.setEnabled(has)
        if request is None:
            self.question_label.setText("No question is waiting.")
            self.object_label.setText("")
            self.request_label.setText("")
            return
        self.question_label.setText(request.question)
        place = request.object_description or "?"
        self.object_label.setText(f"Object: {place}" + (f"   ({request.object_id})" if request.object_id else ""))
        self._show_time_left()
        shown = list(request.candidates)
        asked_id = request.candidate.candidate_id if request.candidate else None
        if request.candidate and all(c.text != request.candidate.text for c in shown):
            shown.insert(0, request.candidate)
        for cand in shown:
            asked = request.candidate is not None and cand.candidate_id == asked_id and \
                cand.text == request.candidate.text
            row = _candidate_row(cand, asked)
            self.candidate_tree.addTopLevelItem(row)
            row.setExpanded(True)
            for index in range(row.childCount()):  # details span the row, under the goal
                row.child(index).setFirstColumnSpanned(True)

    def _show_time_left(self) -> None:
        """The request id and the time the question has left, redrawn on every poll."""
        request = self.current_request()
        if request is None:
            self.request_label.setText("")
            return
        left = remaining_text(request)
        self.request_label.setText(f"request {request.request_id}" + (f": {left}" if left else ""))

    # --- answers -----------------------------------------------------------------------------

    def _answer(self, answer: str, description: str = "") -> bool:
        """Send an answer to the selected question; whether the backend accepted it."""
        request = self.current_request()
        if request is None:
            self.status_label.setText("No question is selected.")
            return False
        try:
            result = self.backend.submit(request.request_id, answer, description, self.operator)
        except Exception as exc:  # noqa: BLE001 - shown in the window; nothing is sent as a yes
            self.status_label.setText(f"Answer not delivered: {exc}")
            return False
        accepted = bool(getattr(result, "accepted", False))
        message = str(getattr(result, "message", ""))
        self.status_label.setText(("Sent: " if accepted else "Refused: ") + message)
        if accepted:
            self._requests.pop(request.request_id, None)
            self._show(None)
            self.refresh_now()
        return accepted

    def _send_description(self) -> None:
        """The text box: words, a number or a yes/no, read as every front end reads them; what is
        no answer stays here, with the status line saying what is expected."""
        request = self.current_request()
        if request is None:
            self.status_label.setText("No question is selected.")
            return
        reply = interpret_reply(request, self.description_edit.toPlainText())
        if reply.answer is None:
            self.status_label.setText(f"Not sent: {reply.hint}")
            return
        if self._answer(reply.answer.value, reply.description):
            self.description_edit.clear()

    def stop(self) -> None:
        """Stop polling (the rqt plugin's shutdown)."""
        self._timer.stop()

    def refresh_now(self) -> None:
        """Forget the cached list so the next poll redraws."""
        self._requests = {}
        self.refresh()
