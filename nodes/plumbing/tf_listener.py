"""The ROS side of the tf buffer (task_learning.transforms): /tf and /tf_static into it.

As tf2_ros's TransformListener: `/tf` reliable with depth 100, `/tf_static` reliable and transient
local (a static broadcaster publishes once; a late listener still gets it) with a deep queue. The
subscriptions have a callback group of their own, so a long callback elsewhere in the node (an
action running in a service callback) never holds transforms back. Times are the messages'
stamps; "now" is the node's clock (sim time under use_sim_time), which `now_ns` reads.
"""
from __future__ import annotations

from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

from task_learning.transforms import TransformBuffer

TF_TOPIC = "/tf"
TF_STATIC_TOPIC = "/tf_static"


def tf_qos() -> QoSProfile:
    return QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def tf_static_qos() -> QoSProfile:
    return QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def stamp_ns(stamp: Any) -> int:
    """A builtin_interfaces/Time in integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class TfListener:
    """Feeds `buffer` from /tf and /tf_static (remapped with the node's namespace rules)."""

    def __init__(self, node: Node, buffer: TransformBuffer | None = None) -> None:
        self.node = node
        self.buffer = buffer or TransformBuffer()
        self.rejected = 0  # transforms refused as malformed (logged, throttled)
        group = MutuallyExclusiveCallbackGroup()
        self._subscriptions = [
            node.create_subscription(TFMessage, TF_TOPIC, lambda m: self._on(m, static=False), tf_qos(),
                                     callback_group=group),
            node.create_subscription(TFMessage, TF_STATIC_TOPIC, lambda m: self._on(m, static=True),
                                     tf_static_qos(), callback_group=group),
        ]

    def now_ns(self) -> int:
        """The node clock's time (sim time under use_sim_time) in nanoseconds."""
        return int(self.node.get_clock().now().nanoseconds)

    def _on(self, msg: TFMessage, *, static: bool) -> None:
        for stamped in msg.transforms:
            t, q = stamped.transform.translation, stamped.transform.rotation
            try:
                self.buffer.set_transform(stamped.header.frame_id, stamped.child_frame_id, stamp_ns(stamped.header.stamp),
                                          (t.x, t.y, t.z), (q.x, q.y, q.z, q.w), static=static)
            except ValueError as exc:
                self.rejected += 1
                self.node.get_logger().warning(f"ignored a transform on {TF_STATIC_TOPIC if static else TF_TOPIC}: "
                                               f"{exc}", throttle_duration_sec=5.0)

    def destroy(self) -> None:
        for subscription in self._subscriptions:
            self.node.destroy_subscription(subscription)
        self._subscriptions = []
