"""`task-learning bag record|play`: rosbag2 files of the head camera and tf, through real topics.

record: subscribes to the camera topics (serialized, exactly as they come off the wire) and writes
them with their receive time into a rosbag2 directory (MCAP or sqlite3) with `rosbags`.
play: publishes a bag's messages on their topics at their recorded pace (`rate` times faster);
with `restamp` (default) every header stamp is shifted to now, as if the robot were live, so
the bridge's staleness check (frames older than 1 s are refused) passes for a recording.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CameraInfo, Image
from tf2_msgs.msg import TFMessage

from task_learning.errors import TaskLearningError
from task_learning.inputs.files import OutputError
from task_learning.perception.bag import BagWriter, read_messages
from task_learning_nodes.plumbing.tf_listener import TF_STATIC_TOPIC, tf_static_qos

TYPES = {
    "sensor_msgs/msg/Image": Image,
    "sensor_msgs/msg/CameraInfo": CameraInfo,
    "tf2_msgs/msg/TFMessage": TFMessage,
}


def _qos(topic: str) -> QoSProfile:
    """/tf_static is transient local (published once; a late recorder or listener still gets it)."""
    if topic == TF_STATIC_TOPIC:
        return tf_static_qos()
    return QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


def _restamp(msg: Any, offset_ns: int) -> None:
    """Shift a message's header stamp (every transform's, for a TFMessage) by `offset_ns`."""
    for header in ([t.header for t in msg.transforms] if isinstance(msg, TFMessage) else [msg.header]):
        stamp_ns = header.stamp.sec * 1_000_000_000 + header.stamp.nanosec + offset_ns
        header.stamp.sec, header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)


class _Graph:
    def __init__(self, name: str, domain_id: int | None = None) -> None:
        self.context = Context()
        if domain_id is None:
            rclpy.init(context=self.context)
        else:
            rclpy.init(context=self.context, domain_id=domain_id)
        self.node = Node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def record(out: str | Path, topics: list[str], *, duration_s: float, storage: str = "mcap",
           discover_s: float = 10.0, stop: threading.Event | None = None,
           domain_id: int | None = None, on_write: Callable[[str], None] | None = None) -> dict[str, int]:
    """Record `topics` for `duration_s` seconds (or until `stop` is set); returns counts per topic.
    `domain_id`: the graph's (default: ROS_DOMAIN_ID); `on_write(topic)` after each message."""
    graph = _Graph("bag_recorder", domain_id)
    writer: BagWriter | None = None
    try:
        deadline = time.monotonic() + discover_s
        found: dict[str, str] = {}
        while time.monotonic() < deadline and len(found) < len(topics):
            for name, types in graph.node.get_topic_names_and_types():
                if name in topics and types:
                    found[name] = types[0]
            time.sleep(0.1)
        missing = [t for t in topics if t not in found]
        if missing:
            raise TaskLearningError(f"no publisher on {', '.join(missing)} within {discover_s:g} s")
        unsupported = [f"{t} ({found[t]})" for t in topics if found[t] not in TYPES]
        if unsupported:
            raise TaskLearningError(f"cannot record {', '.join(unsupported)}: supported types are "
                                    f"{', '.join(sorted(TYPES))}")
        writer = BagWriter(out, storage)
        lock = threading.Lock()
        stop = stop or threading.Event()

        def callback(topic: str, msgtype: str) -> Any:
            def on_message(raw: bytes) -> None:
                with lock:
                    if writer is None:  # closed: recording is over
                        return
                    try:
                        writer.write(topic, msgtype, time.time_ns(), raw)
                    except OutputError:  # a full disk: recording ends, close() raises it
                        stop.set()
                        return
                if on_write is not None:
                    on_write(topic)
            return on_message

        for topic in topics:
            graph.node.create_subscription(TYPES[found[topic]], topic, callback(topic, found[topic]), _qos(topic),
                                           raw=True)
        stop.wait(duration_s)
        with lock:
            counts = dict(writer.counts)
            done, writer = writer, None
            done.close()
        return counts
    finally:
        if writer is not None:
            try:
                writer.close()
            except OutputError:
                pass  # the error that brought us here is the one to report
        graph.close()


def play(bag: str | Path, *, rate: float = 1.0, restamp: bool = True, topics: list[str] | None = None,
         domain_id: int | None = None) -> int:
    """Publish a bag's messages; returns how many were published."""
    if rate <= 0:
        raise TaskLearningError(f"--rate must be > 0, got {rate}")
    messages = list(read_messages(bag, topics))
    if not messages:
        raise TaskLearningError(f"{bag}: no messages on the requested topics")
    graph = _Graph("bag_player", domain_id)
    try:
        publishers: dict[str, Any] = {}
        for topic, msgtype, *_ in messages:
            if topic not in publishers:
                if msgtype not in TYPES:
                    raise TaskLearningError(f"{bag}: cannot play {topic} ({msgtype})")
                publishers[topic] = graph.node.create_publisher(TYPES[msgtype], topic, _qos(topic))
        time.sleep(1.0)  # discovery: let subscribers match before the first message
        first = messages[0][2]
        start = time.time()
        offset_ns = time.time_ns() - first
        for topic, msgtype, t_ns, _msg, raw in messages:
            delay = start + (t_ns - first) / 1e9 / rate - time.time()
            if delay > 0:
                time.sleep(delay)
            if restamp:
                msg = deserialize_message(raw, TYPES[msgtype])
                _restamp(msg, offset_ns)
                publishers[topic].publish(serialize_message(msg))
            else:
                publishers[topic].publish(raw)
        return len(messages)
    finally:
        graph.close()
