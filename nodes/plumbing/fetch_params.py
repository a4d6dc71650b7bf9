"""The fetch backend's parameters, in a module of their own (no OpenCV import), so that the
perception node's parameter file can be checked against them without loading the bridge.

The perception node declares them (`declare_parameters`, with descriptors and ranges like every
node's) only when `backend` is `fetch` (plumbing/fetch_bridge.FetchFrontend); the synthetic robot
declares the topic, skill and camera ones (FetchRobotEndParameters, its base), so both ends default alike.
"""
from __future__ import annotations

from task_learning_nodes.plumbing.params import NodeParameters, param

DEFAULT_CAMERA_TO_BASE = (0.1, 0.0, 1.2, -0.596368, 0.596368, -0.379928, 0.379928)
_HOUR = 3600.0


class FetchRobotEndParameters(NodeParameters):
    """The ends of the bridge both the fetch backend and the synthetic robot declare, alike: the
    camera topics, the skill server and the camera mount."""

    color_topic: str = param("/head_camera/rgb/image_raw", "colour image (sensor_msgs/Image)")
    depth_topic: str = param("/head_camera/depth_registered/image_raw", "depth registered to colour (16UC1 mm or 32FC1 m)")
    camera_info_topic: str = param("/head_camera/rgb/camera_info", "intrinsics of the colour camera")
    base_pose_topic: str = param("/amcl_pose", "base pose in the map (PoseWithCovarianceStamped); '' = fixed at the origin")
    camera_to_base: tuple[float, ...] = param(DEFAULT_CAMERA_TO_BASE, "optical frame in base_link: [x, y, z, qx, qy, qz, qw] "
                                              "(metres within 10 of the base; the quaternion normalised)", min=-10.0, max=10.0)
    skill_action: str = param("fetch_skills", "the robot's skill action server (task_learning_interfaces/action/Skill)")


class FetchParameters(FetchRobotEndParameters):
    """The fetch backend's parameters (config/nodes/perception.yaml, declared with backend fetch)."""

    marker_registry: str = param("", "YAML marker registry; '' with synthetic:=true uses the simulated robot's")
    marker_dictionary: str = param("", "cv2.aruco dictionary overriding the registry's (e.g. DICT_APRILTAG_36h11)")
    synthetic: bool = param(False, "the camera is the simulated robot's (synthetic_robot node)")
    image_qos: str = param("reliable", "reliable | sensor_data (best effort: for a camera driver that publishes so)",
                           choices=("reliable", "sensor_data"))
    sync_slop_s: float = param(0.05, "colour, depth and camera info within this many seconds form one frame set",
                               min=0.0, max=10.0)
    pose_tolerance_s: float = param(0.1, "the base pose used for a frame set is at most this far from its stamp",
                                    min=0.0, max=60.0)
    max_frame_age_s: float = param(1.0, "older frame sets are refused as stale (0: never)", min=0.0, max=_HOUR)
    frame_timeout_s: float = param(5.0, "after a skill, wait this long for a new frame", min=0.0, max=_HOUR)
    block_after_s: float = param(5.0, "refuse actions when no frame was used for this long", min=0.0, max=_HOUR)
    belief_half_life_s: float = param(120.0, "confidence of an object out of view halves in this time", min=0.0, max=_HOUR)
    skill_server_wait_s: float = param(2.0, "a skill server not found within this time is reported down", min=0.0, max=_HOUR)
    skill_timeout_s: float = param(60.0, "a skill not done within this time is cancelled and fails", min=0.0, max=_HOUR)


FETCH_DEFAULTS = {p.name: p.default for p in FetchParameters.rows()}
