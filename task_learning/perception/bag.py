"""rosbag2 files (MCAP or sqlite3) for the fetch bridge, read and written with the `rosbags`
library (pure Python; rosbag2_py is not installable from PyPI).

- `BagWriter`: what `task-learning bag record` writes: serialized CDR messages as they came off
  the wire, each with its receive time, in a real rosbag2 directory (`ros2 bag info` reads it).
- `bag_info`: topics, types, counts and duration of a bag.
- `replay_into_bridge`: the camera topics of a bag through a fresh FetchWorld, offline (no ROS):
  the same synchronisation, conversion, tf lookups and detection as the live node, with the bag's
  own clock and its /tf and /tf_static, so a session captured on the robot can be debugged at a
  desk.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from task_learning.errors import TaskLearningError
from task_learning.inputs.files import AtomicOutput, OutputError, require_regular_file
from task_learning.perception.bridge import FetchWorld
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.images import image_to_array, to_bgr, to_metres
from task_learning.perception.sync import ApproximateSync
from task_learning.transforms import NS_PER_S, TransformBuffer, TransformUnavailable
from task_learning.world.camera_model import CameraModel

MSGTYPES = {"sensor_msgs/msg/Image", "sensor_msgs/msg/CameraInfo", "tf2_msgs/msg/TFMessage"}
TF_TOPICS = ("/tf", "/tf_static")


def _typestore() -> Any:
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_KILTED if hasattr(Stores, "ROS2_KILTED") else Stores.LATEST)


def _storage(name: str) -> Any:
    from rosbags.rosbag2 import StoragePlugin

    key = name.strip().lower()
    if key not in ("mcap", "sqlite3"):
        raise TaskLearningError(f"unknown bag storage {name!r} (mcap or sqlite3)")
    return StoragePlugin.MCAP if key == "mcap" else StoragePlugin.SQLITE3


class BagWriter:
    """A rosbag2 directory being written; topics added as they are first seen. It is written
    under a temporary name beside `path` and renamed when closed complete, so a bag that could
    not be written (a full disk) leaves nothing behind: `write` and `close` raise OutputError
    naming the bag, and every later `write` raises it again."""

    def __init__(self, path: str | Path, storage: str = "mcap") -> None:
        from rosbags.rosbag2 import Writer

        self.path = Path(path)
        if self.path.exists():
            raise TaskLearningError(f"{self.path}: already exists (a bag is a new directory)")
        self.typestore = _typestore()
        plugin = _storage(storage)
        self._output = AtomicOutput(self.path, directory=True)
        self._failure: OutputError | None = None
        try:
            self._writer = Writer(self._output.path, version=9, storage_plugin=plugin)
            self._writer.open()
        except OSError as exc:
            raise self._output.failed(exc) from None
        self._connections: dict[str, Any] = {}
        self.counts: dict[str, int] = {}

    def write(self, topic: str, msgtype: str, stamp_ns: int, raw: bytes) -> None:
        if self._failure is not None:
            raise self._failure
        try:
            connection = self._connections.get(topic)
            if connection is None:
                connection = self._writer.add_connection(topic, msgtype, typestore=self.typestore)
                self._connections[topic] = connection
                self.counts[topic] = 0
            self._writer.write(connection, int(stamp_ns), bytes(raw))
        except OSError as exc:
            self._failure = self._output.failed(exc)
            raise self._failure from None
        self.counts[topic] += 1

    def close(self) -> None:
        """Finish the bag and give it its name; OutputError (and nothing left) if it failed."""
        if self._failure is not None:
            raise self._failure
        try:
            self._writer.close()
        except OSError as exc:
            self._failure = self._output.failed(exc)
            raise self._failure from None
        self._output.commit()


def _open(path: str | Path) -> Any:
    from rosbags.rosbag2 import Reader

    bag = Path(path)
    if not (bag / "metadata.yaml").is_file():
        raise TaskLearningError(f"{bag}: not a rosbag2 directory (no metadata.yaml)")
    for entry in bag.iterdir():  # a FIFO or a device as the storage file would hang the reader
        if not entry.is_dir():
            require_regular_file(entry)
    try:
        reader = Reader(bag)
        reader.open()
    except Exception as exc:  # noqa: BLE001 - rosbags raises its own errors for unreadable bags
        raise TaskLearningError(f"{bag}: cannot read the bag: {exc}") from None
    return reader


def bag_info(path: str | Path) -> dict[str, Any]:
    reader = _open(path)
    try:
        return {
            "path": str(path),
            "duration_s": round(reader.duration / 1e9, 3),
            "messages": reader.message_count,
            "topics": {c.topic: {"type": c.msgtype, "count": c.msgcount} for c in reader.connections},
        }
    finally:
        reader.close()


def read_messages(path: str | Path, topics: list[str] | None = None) -> Iterator[tuple[str, str, int, Any, bytes]]:
    """(topic, msgtype, receive time ns, deserialized message, raw CDR) in time order."""
    reader = _open(path)
    typestore = _typestore()
    try:
        connections = [c for c in reader.connections if topics is None or c.topic in topics]
        for connection, timestamp, raw in reader.messages(connections=connections):
            yield connection.topic, connection.msgtype, timestamp, typestore.deserialize_cdr(raw, connection.msgtype), raw
    finally:
        reader.close()


def _stamp(header: Any) -> float:
    return float(header.stamp.sec) + float(header.stamp.nanosec) * 1e-9


@dataclass
class ReplayReport:
    frames_used: int
    frames_refused: list[str]
    messages: int


def bag_transforms(path: str | Path) -> TransformBuffer:
    """Every transform of the bag's /tf and /tf_static in one buffer that keeps them all (the
    node keeps 10 s; a replay looks up at any stamp of the bag)."""
    buffer = TransformBuffer(cache_s=max(1.0, bag_info(path)["duration_s"] + 1.0))
    for topic, _type, _t, msg, _raw in read_messages(path, list(TF_TOPICS)):
        for stamped in msg.transforms:
            t, q = stamped.transform.translation, stamped.transform.rotation
            try:
                buffer.set_transform(stamped.header.frame_id, stamped.child_frame_id,
                                     int(stamped.header.stamp.sec) * NS_PER_S + int(stamped.header.stamp.nanosec),
                                     (t.x, t.y, t.z), (q.x, q.y, q.z, q.w), static=topic == "/tf_static")
            except ValueError:
                continue  # the node ignores a malformed transform too
    return buffer


def replay_into_bridge(path: str | Path, world: FetchWorld, *, color_topic: str, depth_topic: str,
                       info_topic: str, map_frame: str = "map", base_frame: str = "base_link",
                       slop_s: float = 0.05) -> ReplayReport:
    """Feed a bag's camera topics through `world`, with poses from the bag's tf at each image's
    stamp (its clock should follow the bag: return the newest stamp, or max_age_s 0)."""
    sync = ApproximateSync(["color", "depth", "info"], slop_s=slop_s)
    tf = bag_transforms(path)
    streams = {color_topic: "color", depth_topic: "depth", info_topic: "info"}
    used, refused, count = 0, [], 0
    for topic, _type, _t, msg, _raw in read_messages(path, [color_topic, depth_topic, info_topic]):
        count += 1
        matched = sync.add(streams[topic], _stamp(msg.header), msg)
        if matched is None:
            continue
        color, depth, info = matched["color"][1], matched["depth"][1], matched["info"][1]
        stamp = _stamp(color.header)
        stamp_ns = int(color.header.stamp.sec) * NS_PER_S + int(color.header.stamp.nanosec)
        try:
            T_map_camera = tf.lookup(map_frame, color.header.frame_id, stamp_ns).matrix
            T_map_base = tf.lookup(map_frame, base_frame, stamp_ns).matrix
        except (TransformUnavailable, ValueError) as exc:
            refused.append(f"frame at {stamp:.3f} s skipped: tf: {exc}")
            continue
        try:
            camera = CameraModel.from_k(int(info.width), int(info.height), [float(v) for v in info.k],
                                        [float(v) for v in info.d])
            bgr = to_bgr(image_to_array(color.encoding, color.height, color.width, color.step,
                                        color.data, color.is_bigendian), color.encoding)
            metres = to_metres(image_to_array(depth.encoding, depth.height, depth.width, depth.step,
                                              depth.data, depth.is_bigendian), depth.encoding)
        except ValueError as exc:
            refused.append(str(exc))
            continue
        problem = world.process(RGBDFrame(bgr, metres, camera, stamp, T_map_camera), T_world_base=T_map_base)
        if problem:
            refused.append(problem)
        else:
            used += 1
    return ReplayReport(used, refused, count)
