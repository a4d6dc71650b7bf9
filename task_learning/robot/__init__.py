"""The robot-skills layer, ROS-free: robot profiles (config/robots/), the abstract actions as
sequences of standard ROS goals (Nav2 NavigateToPose, control_msgs FollowJointTrajectory,
PointHead and GripperCommand, MoveIt MoveGroup), the arm's inverse kinematics, and the one table
from every standard result to the blocking conditions BCR understands. The action clients that
send these goals live in the ROS layer (`task_learning_nodes.robot`)."""
