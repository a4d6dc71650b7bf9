"""The fetch backend's parameters, in a module of their own (no OpenCV import), so that the
perception node's parameter file can be checked against them without loading the bridge.

The perception node declares them (`declare_parameters`, with descriptors and ranges like every
node's) only when `backend` is `fetch` (plumbing/fetch_bridge.FetchFrontend); the synthetic robot
declares the topic, skill and camera ones (FetchRobotEndParameters, its base), so both ends default alike.
"""
from __future__ import annotations

from task_learning_nodes.plumbing.params import NodeParameters, param

_HOUR = 3600.0


class FetchRobotEndParameters(NodeParameters):
    """The ends of the bridge both the fetch backend and the synthetic robot declare, alike: the
    camera topics, the frames and the skill server."""

    color_topic: str = param("/head_camera/rgb/image_raw", "colour image (sensor_msgs/Image)")
    depth_topic: str = param("/head_camera/depth_registered/image_raw", "depth registered to colour (16UC1 mm or 32FC1 m)")
    camera_info_topic: str = param("/head_camera/rgb/camera_info", "intrinsics of the colour camera")
    map_frame: str = param("map", "the world frame (REP-103: x forward, y left, z up) of tf and of published poses")
    base_frame: str = param("base_link", "the robot's base frame in tf")
    skill_action: str = param("fetch_skills", "the robot's skill action server (task_learning_interfaces/action/Skill)")


class FetchParameters(FetchRobotEndParameters):
    """The fetch backend's parameters (config/nodes/perception.yaml, declared with backend fetch)."""

    marker_registry: str = param("", "YAML marker registry; '' with synthetic:=true uses the simulated robot's")
    marker_dictionary: str = param("", "cv2.aruco dictionary overriding the registry's (e.g. DICT_APRILTAG_36h11)")
    detector_weights: str = param("", "a learned object detector beside the markers: a local ONNX file "
                                  "(SSD-style output; nothing is downloaded); '' = markers only")
    detector_labels: str = param("", "the detector's labels file (one per line, class id = line number)")
    detector_min_score: float = param(0.5, "detections scoring less are ignored", min=0.0, max=1.0)
    synthetic: bool = param(False, "the camera is the simulated robot's (synthetic_robot node)")
    image_qos: str = param("reliable", "reliable | sensor_data (best effort: for a camera driver that publishes so)",
                           choices=("reliable", "sensor_data"))
    sync_slop_s: float = param(0.05, "colour, depth and camera info within this many seconds form one frame set",
                               min=0.0, max=10.0)
    tf_wait_s: float = param(0.5, "a frame set waits this long for the transforms at its stamp (tf arriving late), "
                             "then is skipped with the reason in the status", min=0.0, max=60.0)
    max_frame_age_s: float = param(1.0, "older frame sets are refused as stale (0: never)", min=0.0, max=_HOUR)
    frame_timeout_s: float = param(5.0, "after a skill, wait this long for a new frame", min=0.0, max=_HOUR)
    block_after_s: float = param(5.0, "refuse actions when no frame was used for this long", min=0.0, max=_HOUR)
    belief_half_life_s: float = param(120.0, "confidence of an object out of view halves in this time", min=0.0, max=_HOUR)
    skill_server_wait_s: float = param(2.0, "a skill server not found within this time is reported down", min=0.0, max=_HOUR)
    skill_timeout_s: float = param(60.0, "a skill not done within this time is cancelled and fails", min=0.0, max=_HOUR)


FETCH_DEFAULTS = {p.name: p.default for p in FetchParameters.rows()}
