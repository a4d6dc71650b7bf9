"""rqt plugin: the task_learning operator panel inside rqt (a full ROS 2 install).

Thin on purpose: the widget is `task_learning.oversight.panel.OperatorPanel` (the same one the
standalone `task-learning operator --panel` shows, here on python_qt_binding); the backend is the
oversight node's ROS client on rqt's own node, which rqt spins.
"""
from __future__ import annotations

from rqt_gui_py.plugin import Plugin  # type: ignore[import-not-found]

from task_learning.oversight.panel import OperatorPanel
from task_learning_nodes.clients.oversight_client import OversightClient


class OperatorPanelPlugin(Plugin):
    def __init__(self, context):
        super().__init__(context)
        self.setObjectName("TaskLearningOperatorPanel")
        from task_learning.oversight.pairing import PairingError, operator_credentials

        try:  # the token file `task-learning operator --rqt` names (or rqt's default one)
            creds, line = operator_credentials("rqt")
        except PairingError as exc:
            creds, line = None, str(exc)
        context.node.get_logger().info(line)
        self._client = OversightClient(node=context.node, name="rqt", credentials=creds)
        self._widget = OperatorPanel(self._client, operator=creds.name if creds else "rqt")
        if context.serial_number() > 1:
            self._widget.setWindowTitle(
                f"{self._widget.windowTitle()} ({context.serial_number()})")
        context.add_widget(self._widget)

    def shutdown_plugin(self) -> None:
        self._widget.stop()
        self._client.close()

    def save_settings(self, plugin_settings, instance_settings) -> None:
        pass

    def restore_settings(self, plugin_settings, instance_settings) -> None:
        pass
