"""Camera topics of a rendering world backend (AI2-THOR): what a real RGB-D camera driver offers.

- camera/color/image_raw (sensor_msgs/Image, rgb8)
- camera/depth/image_raw (sensor_msgs/Image, 32FC1, metres; planar depth, registered to color)
- camera/color/camera_info (sensor_msgs/CameraInfo: the project's pinhole model,
  task_learning.world.camera_model.CameraModel, from the field of view and the frame size)
- camera/pose (geometry_msgs/PoseStamped: the camera in the world frame, as AI2-THOR states it:
  Unity's left-handed frame, y up; the orientation turns x, y, z into the camera's right, up and
  forward, so the images' optical frame is this with y flipped)

All four carry the stamp of the world_state message published with them; the images and the
camera info carry the camera's frame id. They are published when the frame changes (after an
action), with the world_state QoS, so a late subscriber gets the latest frame.
"""
from __future__ import annotations

from typing import Any

from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import CameraInfo, Image

from task_learning.episode.observe import PosedCamera
from task_learning.perception.images import image_fields
from task_learning.world.backend import WorldBackend
from task_learning.world.camera_model import CameraModel

COLOR_TOPIC = "camera/color/image_raw"
DEPTH_TOPIC = "camera/depth/image_raw"
INFO_TOPIC = "camera/color/camera_info"
POSE_TOPIC = "camera/pose"


def image_msg(array: Any, encoding: str, stamp: Time, frame_id: str) -> Image:
    """A sensor_msgs/Image of `array` (row-major, top row first; a copy when it is a view)."""
    msg = Image()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    fields = image_fields(array, encoding)
    msg.height, msg.width, msg.encoding = fields["height"], fields["width"], fields["encoding"]
    msg.is_bigendian, msg.step, msg.data = fields["is_bigendian"], fields["step"], fields["data"]
    return msg


def camera_info_msg(intrinsics: CameraModel, stamp: Time, frame_id: str) -> CameraInfo:
    msg = CameraInfo()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.width, msg.height = int(intrinsics.width), int(intrinsics.height)
    msg.distortion_model = "plumb_bob"
    msg.d = [0.0] * 5
    msg.k = [float(v) for v in intrinsics.k()]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [float(v) for v in intrinsics.p()]
    return msg


class CameraTopics:
    """Publishes the backend's latest frames; `publish` is a no-op while the frame is unchanged."""

    def __init__(self, node: Node, qos: QoSProfile, frame_id: str, world_frame_id: str) -> None:
        import numpy  # noqa: F401  (the image stack: fail at start, clearly, if missing)

        self.frame_id = frame_id
        self.world_frame_id = world_frame_id
        self.color = node.create_publisher(Image, COLOR_TOPIC, qos)
        self.depth = node.create_publisher(Image, DEPTH_TOPIC, qos)
        self.info = node.create_publisher(CameraInfo, INFO_TOPIC, qos)
        self.pose = node.create_publisher(PoseStamped, POSE_TOPIC, qos)
        self._last: Any = None
        self.published = 0

    def publish(self, backend: WorldBackend, stamp: Time) -> None:
        """The backend's latest camera frame, once; a backend without a posed camera has none."""
        frame = getattr(backend, "frame", None)
        if frame is None or frame is self._last or not isinstance(backend, PosedCamera):
            return
        self._last = frame
        self.color.publish(image_msg(frame, "rgb8", stamp, self.frame_id))
        depth = getattr(backend, "depth_frame", None)
        if depth is not None:
            self.depth.publish(image_msg(depth.astype("float32", copy=False), "32FC1", stamp, self.frame_id))
        self.info.publish(camera_info_msg(backend.intrinsics(), stamp, self.frame_id))
        pose = backend.camera_pose()
        msg = PoseStamped()
        msg.header.stamp = stamp
        msg.header.frame_id = self.world_frame_id
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in pose.position)
        qx, qy, qz, qw = pose.quaternion_xyzw()
        msg.pose.orientation.x, msg.pose.orientation.y = float(qx), float(qy)
        msg.pose.orientation.z, msg.pose.orientation.w = float(qz), float(qw)
        self.pose.publish(msg)
        self.published += 1
