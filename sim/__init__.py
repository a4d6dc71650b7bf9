"""task_learning_sim: a physically simulated Fetch (MuJoCo) behind the robot's standard ROS interfaces.

Robot-side code: it plays the part of a real robot, so nothing of the stack (`task_learning`,
`task_learning_nodes`) imports it (tests/project/test_layers.py). It reads the project's scene
files through the core's scene loader, as a robot integrator's world builder would.
"""
