"""One Qt import for the panel: python_qt_binding under rqt (a ROS 2 install), else PySide6.

rqt loads plugins into its own Qt binding; importing PySide6 there would mix two bindings in one
process. Standalone (this machine has no rqt) PySide6 is the binding.
"""
from __future__ import annotations

try:  # rqt / a full ROS 2 install
    from python_qt_binding.QtCore import QObject, Qt, QTimer, Signal  # type: ignore[import-not-found]
    from python_qt_binding.QtGui import QFont  # type: ignore[import-not-found]
    from python_qt_binding.QtWidgets import (  # type: ignore[import-not-found]
        QAbstractItemView, QApplication, QFrame, QGroupBox, QHBoxLayout, QHeaderView, QLabel,
        QListWidget, QListWidgetItem, QPlainTextEdit, QPushButton, QSplitter, QTreeWidget,
        QTreeWidgetItem, QVBoxLayout, QWidget,
    )
    BINDING = "python_qt_binding"
except ImportError:
    from PySide6.QtCore import QObject, Qt, QTimer, Signal
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import (
        QAbstractItemView, QApplication, QFrame, QGroupBox, QHBoxLayout, QHeaderView, QLabel,
        QListWidget, QListWidgetItem, QPlainTextEdit, QPushButton, QSplitter, QTreeWidget,
        QTreeWidgetItem, QVBoxLayout, QWidget,
    )
    BINDING = "PySide6"

__all__ = [
    "BINDING", "QAbstractItemView", "QApplication", "QFont", "QFrame", "QGroupBox", "QHBoxLayout",
    "QHeaderView", "QLabel", "QListWidget", "QListWidgetItem", "QObject", "QPlainTextEdit",
    "QPushButton", "QSplitter", "QTimer", "QTreeWidget", "QTreeWidgetItem", "QVBoxLayout",
    "QWidget", "Qt", "Signal",
]
