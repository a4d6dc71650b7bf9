"""AI2-THOR's FIFO wire protocol, the simulator's side (written from reading ai2thor 5.0's client).

Two named pipes: the simulator writes events to the "server" pipe and reads actions from the
"client" pipe (paths in AI2THOR_FIFO_SERVER_PIPE_PATH and AI2THOR_FIFO_CLIENT_PIPE_PATH). Every
field is a 5-byte header (type byte, big-endian uint32 length) and its body; a message ends with
an END_OF_MESSAGE header of length 0. Actions arrive as one ACTION field of UTF-8 JSON. An event
is a METADATA field (msgpack map {agents: [agent metadata], sequenceId, activeAgentId,
thirdPartyCameras}) followed by image fields: raw buffers of width x height pixels, rows
bottom-to-top (the client flips them), RGB as uint8 x 3, depth as little-endian float32.
"""
from __future__ import annotations

import json
import struct
from enum import IntEnum
from typing import Any, BinaryIO

import msgpack  # type: ignore[import-untyped]
import numpy as np

HEADER = struct.Struct("!BI")


class Field(IntEnum):
    METADATA = 1
    ACTION = 2
    RGB_IMAGE = 4
    DEPTH_IMAGE = 5
    IDS_IMAGE = 9
    END_OF_MESSAGE = 255


class PipeClosed(Exception):
    """The client closed its end (the Controller stopped)."""


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    data = b""
    while len(data) < size:
        part = stream.read(size - len(data))
        if not part:
            raise PipeClosed()
        data += part
    return data


def read_action(stream: BinaryIO) -> dict[str, Any]:
    """The next action message (fields up to END_OF_MESSAGE); PipeClosed at end of stream."""
    action: dict[str, Any] | None = None
    while True:
        kind, length = HEADER.unpack(_read_exact(stream, HEADER.size))
        if kind == Field.END_OF_MESSAGE:
            break
        body = _read_exact(stream, length)
        if kind == Field.ACTION:
            action = json.loads(body.decode("utf-8"))
    if action is None:
        raise ValueError("a message without an ACTION field")
    return action


def image_body(frame: np.ndarray) -> bytes:
    """A frame (top row first, as numpy holds it) as the wire's bottom-to-top buffer."""
    return np.ascontiguousarray(frame[::-1]).tobytes()


def write_event(stream: BinaryIO, agent_metadata: dict[str, Any], sequence_id: int,
                rgb: np.ndarray | None = None, depth: np.ndarray | None = None,
                ids: np.ndarray | None = None) -> None:
    envelope = {"agents": [agent_metadata], "sequenceId": sequence_id, "activeAgentId": 0,
                "thirdPartyCameras": []}
    parts = [(Field.METADATA, msgpack.dumps(envelope, use_bin_type=True))]
    if rgb is not None:
        parts.append((Field.RGB_IMAGE, image_body(rgb.astype(np.uint8))))
    if depth is not None:
        parts.append((Field.DEPTH_IMAGE, image_body(depth.astype("<f4"))))
    if ids is not None:
        parts.append((Field.IDS_IMAGE, image_body(ids.astype(np.uint8))))
    out = bytearray()
    for kind, body in parts:
        out += HEADER.pack(kind, len(body)) + body
    out += HEADER.pack(Field.END_OF_MESSAGE, 0)
    stream.write(bytes(out))
    stream.flush()
