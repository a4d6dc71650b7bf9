"""Launch only the perception node on a ROS 2 install (Jazzy/Kilted):

    ros2 launch task_learning perception.launch.py [scene:=organize_office] [backend:=symbolic]

Same executable and parameter file (config/nodes/perception.yaml) as
`task-learning bringup --nodes perception`; empty arguments keep the file's values.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _perception(context, *args, **kwargs):
    params_file = os.path.join(get_package_share_directory("task_learning"), "config", "nodes",
                               "perception.yaml")
    overrides = {key: LaunchConfiguration(key).perform(context) for key in ("scene", "backend")}
    parameters = [params_file]
    given = {k: v for k, v in overrides.items() if v}
    if given:
        parameters.append(given)
    return [Node(package="task_learning", executable="perception_node", name="perception",
                 parameters=parameters, output="screen", emulate_tty=True)]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scene", default_value="", description="scene name or file; empty: as in the file"),
        DeclareLaunchArgument("backend", default_value="",
                              description="symbolic | ai2thor | fetch; empty: as in the file"),
        OpaqueFunction(function=_perception),
    ])
