"""The fetch backend's parameters, in a module of their own (no OpenCV import), so that the
perception node's parameter file can be checked against them without loading the bridge.

The perception node declares them (`declare_parameters`, with descriptors and ranges like every
node's) only when `backend` is `fetch` (nodes/fetch_bridge.FetchFrontend); the synthetic robot
declares the topic, skill and camera ones of the same rows, so both ends default alike.
"""
from __future__ import annotations

from task_learning_nodes.plumbing.params import Param

DEFAULT_CAMERA_TO_BASE = (0.1, 0.0, 1.2, -0.596368, 0.596368, -0.379928, 0.379928)
_HOUR = 3600.0

FETCH_PARAMETERS: tuple[Param, ...] = (
    Param("color_topic", "/head_camera/rgb/image_raw", "colour image (sensor_msgs/Image)"),
    Param("depth_topic", "/head_camera/depth_registered/image_raw", "depth registered to colour (16UC1 mm or 32FC1 m)"),
    Param("camera_info_topic", "/head_camera/rgb/camera_info", "intrinsics of the colour camera"),
    Param("base_pose_topic", "/amcl_pose", "base pose in the map (PoseWithCovarianceStamped); '' = fixed at the origin"),
    Param("camera_to_base", DEFAULT_CAMERA_TO_BASE, "optical frame in base_link: [x, y, z, qx, qy, qz, qw] "
          "(metres within 10 of the base; the quaternion normalised)", min=-10.0, max=10.0),
    Param("marker_registry", "", "YAML marker registry; '' with synthetic:=true uses the simulated robot's"),
    Param("marker_dictionary", "", "cv2.aruco dictionary overriding the registry's (e.g. DICT_APRILTAG_36h11)"),
    Param("synthetic", False, "the camera is the simulated robot's (synthetic_robot node)"),
    Param("image_qos", "reliable", "reliable | sensor_data (best effort: for a camera driver that publishes so)",
          choices=("reliable", "sensor_data")),
    Param("sync_slop_s", 0.05, "colour, depth and camera info within this many seconds form one frame set",
          min=0.0, max=10.0),
    Param("pose_tolerance_s", 0.1, "the base pose used for a frame set is at most this far from its stamp",
          min=0.0, max=60.0),
    Param("max_frame_age_s", 1.0, "older frame sets are refused as stale (0: never)", min=0.0, max=_HOUR),
    Param("frame_timeout_s", 5.0, "after a skill, wait this long for a new frame", min=0.0, max=_HOUR),
    Param("block_after_s", 5.0, "refuse actions when no frame was used for this long", min=0.0, max=_HOUR),
    Param("belief_half_life_s", 120.0, "confidence of an object out of view halves in this time", min=0.0, max=_HOUR),
    Param("skill_action", "fetch_skills", "the robot's skill action server (task_learning_interfaces/action/Skill)"),
    Param("skill_server_wait_s", 2.0, "a skill server not found within this time is reported down", min=0.0, max=_HOUR),
    Param("skill_timeout_s", 60.0, "a skill not done within this time is cancelled and fails", min=0.0, max=_HOUR),
)
FETCH_DEFAULTS = {p.name: p.default for p in FETCH_PARAMETERS}
