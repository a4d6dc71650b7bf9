"""The built standard interfaces on the wire: NavigateToPose, FollowJointTrajectory, GripperCommand
and MoveGroup goals go from a client in one rclpy context to a server in another, with feedback
and results of the configured distribution's layout (kilted by default)."""
from __future__ import annotations

from typing import Any

from control_msgs.action import FollowJointTrajectory, GripperCommand
from moveit_msgs.action import MoveGroup
from moveit_msgs.msg import MoveItErrorCodes
from nav2_msgs.action import NavigateToPose
from rclpy.action import ActionServer

from task_learning.ros_interfaces import load_ros_interfaces


def serve(node: Any, action_type: Any, name: str, fill: Any) -> ActionServer:
    def execute(handle: Any) -> Any:
        feedback = action_type.Feedback()
        handle.publish_feedback(feedback)
        result = fill(handle.request)
        handle.succeed()
        return result

    return ActionServer(node, action_type, name, execute_callback=execute)


def test_standard_actions_round_trip_between_two_contexts(ros_graph):
    server = ros_graph.client("robot")
    client = ros_graph.client("stack")
    distribution = load_ros_interfaces().distribution

    def navigate(goal: Any) -> Any:
        result = NavigateToPose.Result()
        if distribution != "humble":
            result.error_code = NavigateToPose.Result.NONE if goal.pose.header.frame_id == "map" else 9002
            result.error_msg = f"reached {goal.pose.pose.position.x:.1f}"
        return result

    def follow(goal: Any) -> Any:
        return FollowJointTrajectory.Result(error_code=FollowJointTrajectory.Result.SUCCESSFUL,
                                            error_string=",".join(goal.trajectory.joint_names))

    def grip(goal: Any) -> Any:
        return GripperCommand.Result(position=goal.command.position, reached_goal=True)

    def plan(goal: Any) -> Any:
        result = MoveGroup.Result()
        result.error_code.val = MoveItErrorCodes.SUCCESS if goal.request.group_name == "arm" else MoveItErrorCodes.FAILURE
        return result

    servers = [serve(server.node, NavigateToPose, "navigate_to_pose", navigate),
               serve(server.node, FollowJointTrajectory, "arm_controller/follow_joint_trajectory", follow),
               serve(server.node, GripperCommand, "gripper_controller/gripper_action", grip),
               serve(server.node, MoveGroup, "move_action", plan)]
    goal = NavigateToPose.Goal()
    goal.pose.header.frame_id, goal.pose.pose.position.x = "map", 1.5
    result, _feedback = client.send_goal(NavigateToPose, "navigate_to_pose", goal)
    if distribution != "humble":
        assert (result.error_code, result.error_msg) == (0, "reached 1.5")
    trajectory = FollowJointTrajectory.Goal()
    trajectory.trajectory.joint_names = ["shoulder_pan_joint", "elbow_flex_joint"]
    result, _feedback = client.send_goal(FollowJointTrajectory, "arm_controller/follow_joint_trajectory", trajectory)
    assert result.error_code == 0 and result.error_string == "shoulder_pan_joint,elbow_flex_joint"
    gripper = GripperCommand.Goal()
    gripper.command.position, gripper.command.max_effort = 0.04, 60.0
    result, _feedback = client.send_goal(GripperCommand, "gripper_controller/gripper_action", gripper)
    assert result.reached_goal and abs(result.position - 0.04) < 1e-12
    move = MoveGroup.Goal()
    move.request.group_name = "arm"
    result, _feedback = client.send_goal(MoveGroup, "move_action", move)
    assert result.error_code.val == MoveItErrorCodes.SUCCESS
    assert len(servers) == 4  # kept alive to here; the graph's clients are closed at teardown
