"""Human oversight (the STARS paper §4.4, appendix B.7): the robot proposes goals it already vetted, the
operator answers yes/no, and only after rejections is the operator asked to describe the goal.

Pure Python: the ROS node (`task_learning_nodes.nodes.oversight`) and the Qt panel (`panel.py`, imported
only on demand) wrap these modules.
"""
from task_learning import lazy_exports

_EXPORTS = {
    "remaining_s": "task_learning.oversight.answers",
    "goal_text_key": "task_learning.oversight.audit",
    "operator_confirmations": "task_learning.oversight.audit",
    "ConfirmationLedger": "task_learning.oversight.confirmations",
    "OversightCounts": "task_learning.oversight.flow",
    "OversightLimits": "task_learning.oversight.flow",
    "OversightStatus": "task_learning.oversight.flow",
    "OversightSubject": "task_learning.oversight.flow",
    "run_oversight": "task_learning.oversight.flow",
    "RememberingOperator": "task_learning.oversight.memory",
    "Operator": "task_learning.oversight.operator",
    "ScriptedOperator": "task_learning.oversight.operator",
    "TIMEOUT_OPERATOR": "task_learning.oversight.operator",
    "timeout_answer": "task_learning.oversight.operator",
    "OperatorCredentials": "task_learning.oversight.pairing",
    "OperatorRegistry": "task_learning.oversight.pairing",
    "PairingError": "task_learning.oversight.pairing",
    "StackKey": "task_learning.oversight.pairing",
    "TOKEN_FILE_ENV": "task_learning.oversight.pairing",
    "default_token_file": "task_learning.oversight.pairing",
    "make_token": "task_learning.oversight.pairing",
    "operator_credentials": "task_learning.oversight.pairing",
    "OperatorPanel": "task_learning.oversight.panel",
    "QueueOperator": "task_learning.oversight.pending",
    "parse_safe_default": "task_learning.oversight.pending",
    "refused_answer": "task_learning.oversight.pending",
    "goal_clause": "task_learning.oversight.phrasing",
    "goal_sentence": "task_learning.oversight.phrasing",
    "delete_widget": "task_learning.oversight.qt_compat",
    "check_qt_platform": "task_learning.oversight.qt_platform",
    "drop_opencv_qt_from_environ": "task_learning.oversight.qt_platform",
    "pyqt5_xcb_plugin": "task_learning.oversight.qt_platform",
    "without_opencv_qt": "task_learning.oversight.qt_platform",
    "SimulatedOperator": "task_learning.oversight.simulated",
    "TerminalOperator": "task_learning.oversight.terminal",
    "format_request": "task_learning.oversight.terminal",
    "prompt_answer": "task_learning.oversight.terminal",
    "QueueBackend": "task_learning.oversight.web.backend",
    "pairing_link": "task_learning.oversight.web.link",
    "qr_text": "task_learning.oversight.web.link",
    "WebPanel": "task_learning.oversight.web.server",
    "WebServer": "task_learning.oversight.web.server",
    "WebSettings": "task_learning.oversight.web.server",
    "panel_url": "task_learning.oversight.web.server",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
