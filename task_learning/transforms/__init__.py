"""Frames and transforms: a tf buffer without tf2_ros (buffer.TransformBuffer), ROS-free."""
from task_learning.transforms.buffer import (
    NS_PER_S,
    StampedTransform,
    TransformBuffer,
    TransformUnavailable,
)

__all__ = ["NS_PER_S", "StampedTransform", "TransformBuffer", "TransformUnavailable"]
