"""The live view: a run's messages on a Foxglove WebSocket server (the `foxglove.websocket.v1`
protocol, served by PyPI `foxglove-sdk`), for Foxglove with the shipped layout
(`config/foxglove/task_learning.json`) or any client of that protocol (the page in
`config/foxglove/viewer.html`).

Every channel of `episode.messages.CHANNELS` is a JSON channel whose schema is the JSON Schema of
its ROS 2 message (named like the ROS type, so Foxglove picks its panels: Diagnostics for
`/diagnostics`, ...); the camera goes out as `foxglove.CompressedImage` (JPEG, JSON encoded)
with the object being worked on boxed (`/camera/highlighted`). Text from a model or a scene is
sent as JSON strings: a viewer shows it as text.

The server listens on 127.0.0.1 unless told otherwise; port 0 takes a free one (`port`).
"""
from __future__ import annotations

import base64
import json
import logging
from typing import Any, Mapping

from task_learning.episode import messages as msgs
from task_learning.episode.observe import HIGHLIGHTED
from task_learning.episode.schema import json_schema
from task_learning.errors import TaskLearningError

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
COMPRESSED_IMAGE_SCHEMA = {
    "type": "object", "title": "foxglove.CompressedImage",
    "properties": {"timestamp": {"type": "object", "properties": {"sec": {"type": "integer"},
                                                                  "nsec": {"type": "integer"}}},
                   "frame_id": {"type": "string"}, "data": {"type": "string", "contentEncoding": "base64"},
                   "format": {"type": "string"}},
}


def compressed_image(message: Mapping[str, Any]) -> dict[str, Any]:
    """An rgb8 sensor_msgs/Image dict -> foxglove.CompressedImage (JPEG) as JSON."""
    import cv2
    import numpy as np

    height, width = int(message["height"]), int(message["width"])
    rgb = np.frombuffer(bytes(message["data"]), dtype=np.uint8).reshape(height, width, 3)
    ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 85])
    if not ok:
        raise TaskLearningError("live view: the camera image could not be encoded")
    stamp = message["header"]["stamp"]
    return {"timestamp": {"sec": stamp["sec"], "nsec": stamp["nanosec"]},
            "frame_id": message["header"]["frame_id"], "data": base64.b64encode(jpeg.tobytes()).decode("ascii"),
            "format": "jpeg"}


class LiveView:
    """An episode sink serving the messages to Foxglove WebSocket clients while the run goes on."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, name: str = "task_learning") -> None:
        try:
            import foxglove
        except ImportError as exc:
            raise TaskLearningError(f"the live view needs foxglove-sdk (pip install foxglove-sdk): {exc}") from None
        self._context = foxglove.Context()
        self._channels: dict[str, Any] = {}
        for channel in msgs.CHANNELS:
            if channel.topic == msgs.CAMERA:
                continue  # shown as HIGHLIGHTED, JPEG
            self._channels[channel.topic] = foxglove.Channel(channel.topic, schema=json_schema(channel.msgtype),
                                                             context=self._context)
        self._channels[HIGHLIGHTED] = foxglove.Channel(HIGHLIGHTED, schema=COMPRESSED_IMAGE_SCHEMA,
                                                       context=self._context)
        self.topics = set(self._channels)
        try:
            self.server = foxglove.start_server(name=name, host=host, port=port, context=self._context)
        except Exception as exc:  # noqa: BLE001 - the port is taken, the host is not ours: foxglove raises its own
            raise TaskLearningError(f"live view: cannot listen on {host}:{port}: {exc}") from None
        self.host = host

    @property
    def port(self) -> int:
        return int(self.server.port)

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def write(self, topic: str, message: Mapping[str, Any], log_time_ns: int) -> None:
        channel = self._channels.get(topic)
        if channel is None:
            return
        payload = compressed_image(message) if topic == HIGHLIGHTED else msgs.base64_bytes(message)
        channel.log(json.dumps(payload, ensure_ascii=False).encode("utf-8"), log_time=log_time_ns)

    def close(self) -> None:
        try:
            self.server.stop()
        except Exception as exc:  # noqa: BLE001 - stopping twice, or a server that already failed
            log.debug("live view stop: %s", exc)
