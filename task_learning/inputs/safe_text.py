"""Text from outside (ROS requests, object names, LLM output) made safe to echo to a terminal or
a log: control characters, ANSI escape sequences included, are dropped, and long text is cut.

Why: an object named "\\x1b[2J..." or a query of 50 MB echoed back verbatim clears or floods
the operator's terminal; the graph echoes requests in its answers and logs.
"""
from __future__ import annotations

import re

# ANSI escape sequences as a whole (CSI, OSC, two-byte, 8-bit CSI), so their parameters do not
# remain as text; then any other C0/C1 control character except tab, newline and carriage return.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def has_control_characters(text: str) -> bool:
    """Whether `text` holds any C0/C1 control character (tab and newline included): never part
    of a name or an id, so such a value is refused where it is read, not cleaned."""
    return _ANY_CONTROL.search(text) is not None


def printable(text: str, limit: int | None = None) -> str:
    """`text` without escape sequences and control characters (newlines and tabs kept), cut to
    `limit` characters (with a note saying how much was cut). The one implementation: the CLI's
    output stream (cli/options.py) and the nodes' answers use it."""
    clean = _CONTROLS.sub("", _ESCAPES.sub("", text))
    if limit is not None and len(clean) > limit:
        return f"{clean[:limit]}... ({len(clean) - limit} more characters)"
    return clean
