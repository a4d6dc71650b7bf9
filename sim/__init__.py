"""task_learning_sim: a physically simulated Fetch (MuJoCo) behind the robot's standard ROS interfaces.

Robot-side code: it plays the part of a real robot, so nothing of the stack (`task_learning`,
`task_learning_nodes`) imports it (test/project/test_layers.py). It reads the project's scene
files through the core's scene loader, as a robot integrator's world builder would.
"""

import os as _os

# Offscreen rendering without a display (Mesa's EGL on these machines): MuJoCo reads MUJOCO_GL
# when it is first imported, so it is set here, before any module of the package imports it.
_os.environ.setdefault("MUJOCO_GL", "egl")
