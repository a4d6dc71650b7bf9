"""live_view_node: the graph's episode topics served to Foxglove over its WebSocket protocol
(foxglove-sdk), as `task-learning run --live-view` serves an in-process run.

It subscribes to every channel of task_learning.episode.messages.CHANNELS (world state, STARS and
BCR trees, questions and answers, actions and outcomes, learned goals, LLM calls, knowledge-base
changes, /diagnostics) and the colour camera, and logs each message as JSON on the channel of the
same name (task_learning.episode.live.LiveView): Foxglove with config/foxglove/task_learning.json,
or the page config/foxglove/viewer.html. On a full ROS install `foxglove_bridge` serves the same
topics as CDR; this node needs nothing but foxglove-sdk.

    live_view_node --ros-args --params-file config/nodes/live_view.yaml [-p port:=8765]
"""
from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rosidl_runtime_py import message_to_ordereddict

from task_learning.episode import messages as msgs
from task_learning.episode.observe import HIGHLIGHTED
from task_learning.lifecycle.signals import StopSignals
from task_learning_nodes.plumbing.episode_topics import QOS, message_class
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param

NODE_NAME = "live_view"

class Parameters(NodeParameters):
    """The live_view node's parameters (config/nodes/live_view.yaml)."""

    host: str = param("127.0.0.1", "Address the WebSocket server listens on (127.0.0.1: this machine only)")
    port: int = param(8765, "Port of the WebSocket server (0: any free port, logged at start)", min=0, max=65535)
    camera_topic: str = param("camera/color/image_raw", "The colour camera shown (rgb8 or bgr8 sensor_msgs/Image); "
                              "empty: none")


def image_dict(msg: Any) -> dict[str, Any]:
    """A sensor_msgs/Image as the live view's rgb8 dict (bytes kept as bytes, not a list)."""
    import numpy as np

    data = bytes(msg.data)
    if msg.encoding == "bgr8":
        data = np.frombuffer(data, dtype=np.uint8).reshape(msg.height, msg.width, 3)[:, :, ::-1].tobytes()
    elif msg.encoding != "rgb8":
        raise ValueError(f"camera encoding {msg.encoding!r} is not shown (rgb8 or bgr8)")
    return {"header": {"stamp": {"sec": msg.header.stamp.sec, "nanosec": msg.header.stamp.nanosec},
                       "frame_id": msg.header.frame_id},
            "height": msg.height, "width": msg.width, "encoding": "rgb8", "step": msg.width * 3, "data": data}


class LiveViewNode(Node):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, Parameters)
        from task_learning.episode.live import LiveView

        self.live = LiveView(host=params.host, port=params.port)  # TaskLearningError: exit 2
        self.forwarded = 0
        group = MutuallyExclusiveCallbackGroup()
        for channel in msgs.CHANNELS:
            if channel.topic != msgs.CAMERA:
                self.create_subscription(message_class(channel.msgtype), channel.topic, self._forward(channel.topic),
                                         QOS, callback_group=group)
        camera = params.camera_topic
        if camera:
            from sensor_msgs.msg import Image

            self.create_subscription(Image, camera, self._on_image, 2, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"live view on {self.live.url} (Foxglove: open a connection to it; layout "
                               f"config/foxglove/task_learning.json)")

    def _forward(self, topic: str) -> Any:
        def forward(msg: Any) -> None:
            self.live.write(topic, message_to_ordereddict(msg), self.get_clock().now().nanoseconds)
            self.forwarded += 1
        return forward

    def _on_image(self, msg: Any) -> None:
        try:
            self.live.write(HIGHLIGHTED, image_dict(msg), self.get_clock().now().nanoseconds)
        except ValueError as exc:
            self.get_logger().warning(str(exc), throttle_duration_sec=30.0)

    def diagnostics(self) -> list[Any]:
        from task_learning_nodes.plumbing.diagnostics import Check, Level

        return [Check("live view", Level.OK, f"serving {self.live.url}", {"forwarded": str(self.forwarded)})]

    def destroy_node(self) -> None:
        live = getattr(self, "live", None)
        if live is not None:
            live.close()
        super().destroy_node()


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(LiveViewNode, args, name=NODE_NAME, signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
