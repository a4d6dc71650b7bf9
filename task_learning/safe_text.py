"""Text from outside (ROS requests, object names, LLM output) made safe to echo to a terminal or
a log: control characters, ANSI escape sequences included, are dropped, and long text is cut.

Why: an object named "\\x1b[2J..." or a query of 50 MB echoed back verbatim clears or floods
the operator's terminal; the graph echoes requests in its answers and logs.
"""
from __future__ import annotations

import re

# C0 and C1 control characters except tab and newline; DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# CSI/OSC escape sequences as a whole, so their parameters do not remain as text.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def printable(text: str, limit: int | None = None) -> str:
    """`text` without escape sequences and control characters, cut to `limit` characters
    (with an ellipsis saying how much was cut)."""
    clean = _CONTROL.sub("", _ESCAPE.sub("", text))
    if limit is not None and len(clean) > limit:
        return f"{clean[:limit]}... ({len(clean) - limit} more characters)"
    return clean
