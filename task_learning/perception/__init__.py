"""Perception from an RGB-D head camera (the `fetch` backend), pure Python + NumPy/OpenCV.

- `registry`: the YAML marker registry (marker id -> object, size, receptacle volume, door);
- `geometry`, `frames`: rigid transforms, one colour+depth frame set (the pinhole model is
  task_learning/world/camera_model.py, shared with the simulators);
- `detect`: fiducial detection (cv2.aruco), pose from the corners (solvePnP) refined with depth;
- `belief`: the belief world state (last seen, decaying confidence, containment, open/closed)
  as AI2-THOR metadata, so grounding, STARS, BCR and the planner run unchanged;
- `skills`: the skill contract a robot integrator implements (navigate, pick, place, open, ...);
- `bridge`: `FetchWorld`, the WorldBackend over belief + skill client;
- `synthetic`: a simulated robot (symbolic scene, 3D layout, rendered RGB-D camera, skill server);
- `evaluate`: synthetic frames vs ground truth (the `perceive` command).
Nothing here imports rclpy; the ROS glue is in `nodes/`.
"""
from task_learning import lazy_exports

_EXPORTS = {
    "BagWriter": "task_learning.perception.bag",
    "bag_info": "task_learning.perception.bag",
    "read_messages": "task_learning.perception.bag",
    "replay_into_bridge": "task_learning.perception.bag",
    "FetchWorld": "task_learning.perception.bridge",
    "MarkerDetector": "task_learning.perception.detect",
    "perceive": "task_learning.perception.evaluate",
    "RGBDFrame": "task_learning.perception.frames",
    "image_fields": "task_learning.perception.images",
    "image_to_array": "task_learning.perception.images",
    "to_bgr": "task_learning.perception.images",
    "to_metres": "task_learning.perception.images",
    "MarkerRegistry": "task_learning.perception.registry",
    "MarkerSpec": "task_learning.perception.registry",
    "load_registry": "task_learning.perception.registry",
    "SKILLS": "task_learning.perception.skills",
    "SkillRequest": "task_learning.perception.skills",
    "SkillResult": "task_learning.perception.skills",
    "ApproximateSync": "task_learning.perception.sync",
    "Quad": "task_learning.perception.synthetic",
    "Renderer": "task_learning.perception.synthetic",
    "SYNTHETIC_DICTIONARY": "task_learning.perception.synthetic",
    "SimulatedRobot": "task_learning.perception.synthetic",
    "SyntheticLayout": "task_learning.perception.synthetic",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
