"""ROS 2 message definitions of the episode's channels, without ROS.

An episode (MCAP) stores each channel's full ROS 2 message definition (`ros2msg`, the dependencies
concatenated after `====` lines, as rosbag2 writes it), so `ros2 bag info`, Foxglove and `rosbags`
read it with no package installed. The definitions come from one place: this project's `msg/`
folder (the source tree's, or `share/task_learning_interfaces/msg` of an installed interface
package) for its own types, and `rosbags`' type store for the standard ones (std_msgs,
sensor_msgs, diagnostic_msgs, ...), so nothing is written twice.

The live view sends the same messages as JSON; `json_schema` turns a definition into the JSON
Schema Foxglove shows beside a JSON channel.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from task_learning.errors import ConfigError

INTERFACE_PACKAGE = "task_learning_interfaces"


def _msg_dirs() -> list[Path]:
    """Where this project's .msg files are: the source tree, then installed interface packages."""
    found = [Path(__file__).resolve().parent.parent.parent / "msg"]
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            found.append(Path(prefix) / "share" / INTERFACE_PACKAGE / "msg")
    return [d for d in found if d.is_dir()]


@functools.lru_cache(maxsize=1)
def typestore() -> Any:
    """rosbags' type store (ROS 2 kilted) with this project's messages registered."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_KILTED if hasattr(Stores, "ROS2_KILTED") else Stores.LATEST)
    dirs = _msg_dirs()
    if not dirs:
        raise ConfigError(None, None, f"no message definitions found ({INTERFACE_PACKAGE}'s msg/ folder)")
    types: dict[str, Any] = {}
    for path in sorted(dirs[0].glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"{INTERFACE_PACKAGE}/msg/{path.stem}"))
    store.register(types)
    return store


def msgdef(msgtype: str) -> str:
    """The concatenated ros2msg definition of `msgtype` ("pkg/msg/Type")."""
    store = typestore()
    if msgtype not in store.fielddefs:
        raise ConfigError(None, None, f"unknown message type {msgtype!r}")
    text, _digest = store.generate_msgdef(msgtype, ros_version=2)
    return str(text)


# rosbags' field kinds (rosbags.typesys.base.Nodetype): 1 base, 2 name (a message), 3 array
# (fixed size), 4 sequence.
_BASE, _NAME, _ARRAY, _SEQUENCE = 1, 2, 3, 4
_INTEGERS = {"bool": "boolean", "byte": "integer", "char": "integer", "int8": "integer", "uint8": "integer",
             "int16": "integer", "uint16": "integer", "int32": "integer", "uint32": "integer",
             "int64": "integer", "uint64": "integer", "float32": "number", "float64": "number",
             "string": "string"}


def fields(msgtype: str) -> list[str]:
    """The field names of a message type, in order."""
    _consts, defs = typestore().fielddefs[msgtype]
    return [name for name, _desc in defs]


def json_schema(msgtype: str) -> dict[str, Any]:
    """A JSON Schema of `msgtype` as the live view sends it (byte arrays as base64 strings)."""
    _consts, defs = typestore().fielddefs[msgtype]
    return {"type": "object", "title": msgtype,
            "properties": {name: _field_schema(desc) for name, desc in defs}}


def _field_schema(desc: Any) -> dict[str, Any]:
    kind, detail = desc
    if kind == _BASE:
        name = detail[0] if isinstance(detail, tuple) else detail
        return {"type": _INTEGERS.get(str(name), "string")}
    if kind == _NAME:
        return json_schema(str(detail))
    inner = detail[0]
    if inner[0] == _BASE and (inner[1][0] if isinstance(inner[1], tuple) else inner[1]) in ("uint8", "byte"):
        return {"type": "string", "contentEncoding": "base64"}
    return {"type": "array", "items": _field_schema(inner)}
