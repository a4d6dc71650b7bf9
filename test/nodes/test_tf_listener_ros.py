"""The tf listener against a tf broadcaster in another rclpy context: /tf_static published before
the listener starts still arrives (transient local); /tf samples are interpolated; extrapolation
is refused; under use_sim_time the node clock follows /clock."""
from __future__ import annotations

import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from tf2_msgs.msg import TFMessage

from task_learning.transforms import NS_PER_S, TransformUnavailable
from task_learning_nodes.plumbing.tf_listener import TF_STATIC_TOPIC, TF_TOPIC, TfListener, tf_qos, tf_static_qos

from ..ros_testing import wait_until


def transform(parent: str, child: str, sec: int, x: float, z: float = 0.0) -> TransformStamped:
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    msg.header.stamp = Time(sec=sec, nanosec=0)
    msg.transform.translation.x, msg.transform.translation.z = x, z
    msg.transform.rotation.w = 1.0
    return msg


def test_listener_fills_the_buffer_from_tf_and_tf_static(ros_graph):
    broadcaster = ros_graph.client("broadcaster")
    static = broadcaster.node.create_publisher(TFMessage, TF_STATIC_TOPIC, tf_static_qos())
    static.publish(TFMessage(transforms=[transform("base_link", "head_camera_rgb_optical_frame", 0, 0.1, 1.2)]))
    listener_node = ros_graph.client("listener")
    listener = TfListener(listener_node.node)
    wait_until(lambda: "head_camera_rgb_optical_frame" in listener.buffer.frames(), 20.0,
               "the static transform published before the listener started")
    moving = broadcaster.publisher_matched(TFMessage, TF_TOPIC, tf_qos())
    moving.publish(TFMessage(transforms=[transform("map", "base_link", 10, 0.0)]))
    moving.publish(TFMessage(transforms=[transform("map", "base_link", 11, 1.0)]))
    wait_until(lambda: listener.buffer.can_transform("map", "base_link", 11 * NS_PER_S) == "", 20.0, "both samples")
    halfway = listener.buffer.lookup("map", "head_camera_rgb_optical_frame", 10 * NS_PER_S + NS_PER_S // 2)
    assert halfway.translation == pytest.approx((0.6, 0.0, 1.2))
    assert listener.buffer.lookup("map", "head_camera_rgb_optical_frame", 0).stamp_ns == 11 * NS_PER_S
    with pytest.raises(TransformUnavailable, match="extrapolation into the future"):
        listener.buffer.lookup("map", "head_camera_rgb_optical_frame", 12 * NS_PER_S)


def test_node_clock_follows_clock_under_use_sim_time(ros_graph):
    listener_node = ros_graph.client("listener")
    listener_node.node.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
    listener = TfListener(listener_node.node)
    clock = ros_graph.client("sim").publisher_matched(Clock, "/clock", 10)
    tick = Clock(clock=Time(sec=42, nanosec=500_000_000))

    def follows() -> bool:  # /clock is published on and on, as a simulator does: one message
        clock.publish(tick)  # could meet a subscription not yet matched both ways (seen at load 30)
        return listener.now_ns() == 42 * NS_PER_S + 500_000_000

    wait_until(follows, 60.0, "the node clock at /clock's time", interval=0.2)
