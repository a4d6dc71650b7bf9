"""Launch the simulated Fetch (robot-side: the `task-learning-sim` program of sim/, docs/sim.md):

    ros2 launch task_learning sim.launch.py [robot:=fetch] [scene:=store_groceries]
        [real_time_factor:=1.0] [camera_rate:=2.0]

It serves what a real Fetch with Nav2 serves (navigate_to_pose, the controllers' actions, /clock,
/tf, /joint_states, /robot_description, the head camera), for the stack's launch to run against
with use_sim_time. A scene the simulator cannot build ends the launch with one line naming the
object, and exit code 1.
"""
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from task_learning_nodes.plumbing.launch_support import on_node_exit


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument("robot", default_value="fetch", description="the simulated robot"),
        DeclareLaunchArgument("scene", default_value="store_groceries",
                              description="scene name (config/scenes) or YAML path"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0",
                              description="simulated seconds per wall second at most (0: as fast as it goes)"),
        DeclareLaunchArgument("camera_rate", default_value="2.0",
                              description="head camera frames per simulated second (0: none)"),
    ]
    sim = Node(
        package="task_learning", executable="task-learning-sim", name="fetch_sim", output="screen",
        # the robot gone is the launch over: a death (a scene it cannot build) ends it with exit code 1
        on_exit=on_node_exit("fetch_sim", "shutdown"),
        arguments=["--robot", LaunchConfiguration("robot"), "--scene", LaunchConfiguration("scene"),
                   "--real-time-factor", LaunchConfiguration("real_time_factor"),
                   "--camera-rate", LaunchConfiguration("camera_rate")],
    )
    return LaunchDescription([*arguments, sim])
