"""The robot-skills layer, ROS-free: robot profiles (config/robots/), the abstract actions as
sequences of standard ROS goals (Nav2 NavigateToPose, control_msgs FollowJointTrajectory,
PointHead and GripperCommand, MoveIt MoveGroup), the arm's inverse kinematics, and the one table
from every standard result to the blocking conditions BCR understands. The action clients that
send these goals live in the ROS layer (`task_learning_nodes.robot`)."""
from task_learning import lazy_exports

_EXPORTS = {
    "BeliefView": "task_learning.robot.belief_view",
    "RobotSkillExecutor": "task_learning.robot.executor",
    "RobotView": "task_learning.robot.executor",
    "MotionGate": "task_learning.robot.gate",
    "GoalOutcome": "task_learning.robot.goals",
    "GripperGoal": "task_learning.robot.goals",
    "MoveGroupGoal": "task_learning.robot.goals",
    "NavigateGoal": "task_learning.robot.goals",
    "PointHeadGoal": "task_learning.robot.goals",
    "RobotGoal": "task_learning.robot.goals",
    "TrajectoryGoal": "task_learning.robot.goals",
    "ArmKinematics": "task_learning.robot.ik",
    "RobotProfile": "task_learning.robot.profile",
    "known_profiles": "task_learning.robot.profile",
    "load_profile": "task_learning.robot.profile",
    "SkillSequencer": "task_learning.robot.sequences",
    "StandInRobotWorld": "task_learning.robot.stand_in",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
