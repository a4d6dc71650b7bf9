"""The fetch backend's parameters, in a module of their own (no OpenCV import), so that the
perception node's parameter file can be checked against them without loading the bridge.

The perception node declares them, with these descriptions, only when `backend` is `fetch`
(nodes/fetch_bridge.FetchFrontend); the synthetic robot reuses the camera ones.
"""
from __future__ import annotations

from typing import Any

DEFAULT_CAMERA_TO_BASE = [0.1, 0.0, 1.2, -0.596368, 0.596368, -0.379928, 0.379928]
FETCH_PARAMETERS: dict[str, tuple[Any, str]] = {
    "color_topic": ("/head_camera/rgb/image_raw", "colour image (sensor_msgs/Image)"),
    "depth_topic": ("/head_camera/depth_registered/image_raw", "depth registered to colour (16UC1 mm or 32FC1 m)"),
    "camera_info_topic": ("/head_camera/rgb/camera_info", "intrinsics of the colour camera"),
    "base_pose_topic": ("/amcl_pose", "base pose in the map (PoseWithCovarianceStamped); '' = fixed at the origin"),
    "camera_to_base": (DEFAULT_CAMERA_TO_BASE, "optical frame in base_link: [x, y, z, qx, qy, qz, qw]"),
    "marker_registry": ("", "YAML marker registry; '' with synthetic:=true uses the simulated robot's"),
    "marker_dictionary": ("", "cv2.aruco dictionary overriding the registry's (e.g. DICT_APRILTAG_36h11)"),
    "synthetic": (False, "the camera is the simulated robot's (synthetic_robot node)"),
    "image_qos": ("reliable", "reliable | sensor_data (best effort: for a camera driver that publishes so)"),
    "sync_slop_s": (0.05, "colour, depth and camera info within this many seconds form one frame set"),
    "pose_tolerance_s": (0.1, "the base pose used for a frame set is at most this far from its stamp"),
    "max_frame_age_s": (1.0, "older frame sets are refused as stale (0: never)"),
    "frame_timeout_s": (5.0, "after a skill, wait this long for a new frame"),
    "block_after_s": (5.0, "refuse actions when no frame was used for this long"),
    "belief_half_life_s": (120.0, "confidence of an object out of view halves in this time"),
    "skill_action": ("fetch_skills", "the robot's skill action server (task_learning_interfaces/action/Skill)"),
    "skill_server_wait_s": (2.0, "a skill server not found within this time is reported down"),
    "skill_timeout_s": (60.0, "a skill not done within this time is cancelled and fails"),
}
