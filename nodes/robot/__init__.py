"""The robot-skills layer's ROS side: action clients of the standard interfaces (Nav2, control_msgs,
MoveIt), the stop inputs (run-stop topic, stop/resume/cancel services), the robot description.
The logic (which goals, what a result means) is the ROS-free core, task_learning.robot."""
