"""Perception from an RGB-D head camera (the `fetch` backend), pure Python + NumPy/OpenCV.

- `registry`: the YAML marker registry (marker id -> object, size, receptacle volume, door);
- `geometry`, `frames`: rigid transforms, one colour+depth frame set (the pinhole model is
  task_learning/camera_model.py, shared with the simulators);
- `detect`: fiducial detection (cv2.aruco), pose from the corners (solvePnP) refined with depth;
- `belief`: the belief world state (last seen, decaying confidence, containment, open/closed)
  as AI2-THOR metadata, so grounding, STARS, BCR and the planner run unchanged;
- `skills`: the skill contract a robot integrator implements (navigate, pick, place, open, ...);
- `bridge`: `FetchWorld`, the WorldBackend over belief + skill client;
- `synthetic`: a simulated robot (symbolic scene, 3D layout, rendered RGB-D camera, skill server);
- `evaluate`: synthetic frames vs ground truth (the `perceive` command).
Nothing here imports rclpy; the ROS glue is in `nodes/`.
"""
