"""Launch every task_learning node on a ROS 2 install (Jazzy/Kilted), with the same executables and
parameter files as `task-learning bringup`:

    ros2 launch task_learning task_learning.launch.py [scene:=tidy_kitchen] [backend:=symbolic]
        [nodes:=perception,grounding]

The node list, parameter files and exit policy come from config/bringup.yaml (installed under
share/task_learning/config), so both bring-ups stay the same. `scene` / `backend`, when given,
override that key in every node whose parameter file has it; empty means "as in the file".
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from task_learning.bringup import load_bringup_config, module_exists, params_file_keys

PACKAGE = "task_learning"
OVERRIDABLE = ("scene", "backend")


def _nodes(context, *args, **kwargs):
    share = get_package_share_directory(PACKAGE)
    config = load_bringup_config(os.path.join(share, "config", "bringup.yaml"))
    wanted = [n.strip() for n in LaunchConfiguration("nodes").perform(context).split(",") if n.strip()]
    overrides = {key: LaunchConfiguration(key).perform(context) for key in OVERRIDABLE}
    actions = []
    for spec in config.nodes:
        if wanted and spec.name not in wanted:
            continue
        if not module_exists(spec.module):
            actions.append(LogInfo(msg=f"skipping node {spec.name}: {spec.module} is not installed"))
            continue
        parameters = []
        keys = set()
        if spec.params_file is not None and spec.params_file.is_file():
            parameters.append(str(spec.params_file))
            keys = params_file_keys(spec.params_file)
        given = {k: v for k, v in overrides.items() if v and k in keys}
        if given:
            parameters.append(given)
        extra = {}
        if config.on_node_exit == "shutdown":
            extra["on_exit"] = Shutdown(reason=f"node {spec.name} exited")
        actions.append(Node(
            package=PACKAGE,
            executable=spec.executable,
            name=spec.name,
            parameters=parameters,
            output="screen",
            emulate_tty=True,
            **extra,
        ))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scene", default_value="",
                              description="scene for every node that takes one (tidy_kitchen, "
                                          "store_groceries, organize_office); empty: as in config/nodes/"),
        DeclareLaunchArgument("backend", default_value="",
                              description="world backend of perception: symbolic | ai2thor | fetch; "
                                          "empty: as in config/nodes/perception.yaml"),
        DeclareLaunchArgument("nodes", default_value="",
                              description="comma-separated node names from config/bringup.yaml; empty: all"),
        OpaqueFunction(function=_nodes),
    ])
