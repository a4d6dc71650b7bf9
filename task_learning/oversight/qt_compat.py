"""One Qt import for the operator panel: rqt's binding inside rqt, PySide6 standalone.

rqt loads plugins into the Qt binding it started with (python_qt_binding, PyQt5 here): a plugin
that imported PySide6 there would mix two Qt libraries in one process. Standalone (`task-learning
operator --panel`, `run --operator panel`, the tests) the panel uses PySide6, even when
python_qt_binding is installed. So the choice is "has python_qt_binding already been imported in
this process?" (rqt imports it before any plugin), with python_qt_binding as the fallback where
PySide6 is missing (a ROS 2 install without it). `QTest` comes from the same binding, so a test
never clicks one binding's widgets with the other's QTest.
"""
from __future__ import annotations

import importlib.util
import sys


def _use_python_qt_binding() -> bool:
    return "python_qt_binding" in sys.modules or importlib.util.find_spec("PySide6") is None


if _use_python_qt_binding():
    from python_qt_binding.QtCore import QObject, Qt, QTimer, Signal  # type: ignore[import-not-found]
    from python_qt_binding.QtGui import QFont  # type: ignore[import-not-found]
    from python_qt_binding.QtTest import QTest  # type: ignore[import-not-found]
    from python_qt_binding.QtWidgets import (  # type: ignore[import-not-found]
        QAbstractItemView,
        QApplication,
        QFrame,
        QGroupBox,
        QHBoxLayout,
        QHeaderView,
        QLabel,
        QListWidget,
        QListWidgetItem,
        QPlainTextEdit,
        QPushButton,
        QSplitter,
        QTreeWidget,
        QTreeWidgetItem,
        QVBoxLayout,
        QWidget,
    )
    BINDING = "python_qt_binding"

    def delete_widget(obj: QObject) -> None:
        """Delete the C++ object now (not when Python's collector gets to it at exit)."""
        from python_qt_binding import QT_BINDING  # type: ignore[import-not-found]

        if QT_BINDING == "pyside":
            import shiboken2  # type: ignore[import-not-found]

            shiboken2.delete(obj)
        else:
            from PyQt5 import sip  # type: ignore[import-not-found]

            sip.delete(obj)
else:
    from PySide6.QtCore import QObject, Qt, QTimer, Signal
    from PySide6.QtGui import QFont
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import (
        QAbstractItemView,
        QApplication,
        QFrame,
        QGroupBox,
        QHBoxLayout,
        QHeaderView,
        QLabel,
        QListWidget,
        QListWidgetItem,
        QPlainTextEdit,
        QPushButton,
        QSplitter,
        QTreeWidget,
        QTreeWidgetItem,
        QVBoxLayout,
        QWidget,
    )
    BINDING = "PySide6"

    def delete_widget(obj: QObject) -> None:
        """Delete the C++ object now (not when Python's collector gets to it at exit)."""
        import shiboken6

        shiboken6.delete(obj)

__all__ = [
    "BINDING", "QAbstractItemView", "QApplication", "QFont", "QFrame", "QGroupBox", "QHBoxLayout",
    "QHeaderView", "QLabel", "QListWidget", "QListWidgetItem", "QObject", "QPlainTextEdit",
    "QPushButton", "QSplitter", "QTest", "QTimer", "QTreeWidget", "QTreeWidgetItem",
    "QVBoxLayout", "QWidget", "Qt", "Signal", "delete_widget",
]
