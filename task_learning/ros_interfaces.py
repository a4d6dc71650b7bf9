"""Which ROS 2 distribution's field layouts the robot's standard interfaces have.

`config/ros_interfaces.yaml` names it (humble, jazzy or kilted). `make setup` builds the standard
interface packages (interfaces/standard/: nav2_msgs, control_msgs, tf2_msgs, moveit_msgs, ...) in
that layout where the machine has no ROS install providing them; code that reads a field only
some distributions have (NavigateToPose's `error_code`, FollowJointTrajectory feedback's `index`)
asks here which one the robot runs. Plain data: no ROS import.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from task_learning.config import config_path
from task_learning.schema import Schema, load_model

Distribution = Literal["humble", "jazzy", "kilted"]
DISTRIBUTIONS: tuple[Distribution, ...] = ("humble", "jazzy", "kilted")
CONFIG_FILE = ("ros_interfaces.yaml",)


class RosInterfacesConfig(Schema):
    """config/ros_interfaces.yaml: the distribution whose layouts the built packages have."""

    distribution: Distribution


def load_ros_interfaces(path: str | Path | None = None) -> RosInterfacesConfig:
    """The file at `path` (default: config/ros_interfaces.yaml), validated; ConfigError naming
    file and key otherwise."""
    return load_model(RosInterfacesConfig, path if path is not None else config_path(*CONFIG_FILE))
