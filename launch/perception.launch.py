"""Launch only the perception node:

    ros2 launch task_learning perception.launch.py [scene:=organize_office] [backend:=symbolic]

Same executable and parameter file (config/nodes/perception.yaml) as
`task-learning bringup --nodes perception`; empty arguments keep the file's values. A node that
cannot start (an unknown scene, a backend that is not available) ends the launch with its error
and exit code 1.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from task_learning.apps.dds_profile import profile_env
from task_learning.world.factory import BACKENDS
from task_learning_nodes.plumbing.launch_support import PACKAGE, on_node_exit


def _perception(context, *args, **kwargs):
    params_file = os.path.join(get_package_share_directory(PACKAGE), "config", "nodes", "perception.yaml")
    overrides = {key: LaunchConfiguration(key).perform(context) for key in ("scene", "backend")}
    parameters = [params_file]
    given = {k: v for k, v in overrides.items() if v}
    if given:
        parameters.append(given)
    return [Node(package=PACKAGE, executable="perception_node", name="perception",
                 parameters=parameters, output="screen", emulate_tty=True,
                 on_exit=on_node_exit("perception", "shutdown"),
                 additional_env=profile_env(context.environment))]  # unless the user chose a Fast DDS profile


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scene", default_value="", description="scene name or file; empty: as in the file"),
        DeclareLaunchArgument("backend", default_value="", choices=["", *BACKENDS],
                              description="world backend; empty: as in the file"),
        OpaqueFunction(function=_perception),
    ])
