"""The Fast DDS profile the stack's node processes run with unless the user chose one.

Fast DDS's defaults drop a service or action response when the requesting client's response
reader has not matched within 100 ms, so a client made just before its first request on a busy
robot computer can wait forever for a goal the server accepted (config/fastdds_profile.xml says
why, value by value). `task-learning bringup` and both launch files add the variables this module
returns to every node's environment: the profile under the name Fast DDS 3 reads (Kilted and
later), and under Fast DDS 2's name too where ROS_DISTRO names a distribution of Fast DDS 2
(Humble, Iron, Jazzy; their setup scripts set ROS_DISTRO). Not under both everywhere: Fast DDS 3
reads the old name as well and warns once per node that it is deprecated. A choice
the user made always wins: a profile file named in either variable, a default profile file in the
working folder (Fast DDS loads it too, after the variable's), or another middleware in
RMW_IMPLEMENTATION.

Pure Python: only environment variables and a path, no ROS import.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from task_learning.inputs.config import config_path

PROFILE_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"  # Fast DDS 3 (ROS 2 Kilted)
LEGACY_PROFILE_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"  # Fast DDS 2 (ROS 2 Jazzy)
WORKING_FOLDER_PROFILES = ("DEFAULT_FASTDDS_PROFILES.xml", "DEFAULT_FASTRTPS_PROFILES.xml")  # 3, 2
FAST_DDS_MIDDLEWARES = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")  # the ROS 2 default
PROFILE_FILE = "fastdds_profile.xml"
FAST_DDS_2_DISTROS = ("humble", "iron", "jazzy")  # ROS 2 distributions shipping Fast DDS 2


def profile_env(environ: Mapping[str, str], working_folder: str | Path | None = None) -> dict[str, str]:
    """The variables to add to a node's environment `environ`: the profile variable of the node's
    Fast DDS set to config/fastdds_profile.xml when the node will run Fast DDS with no profile of
    the user's, otherwise nothing. `working_folder` is where the node starts (default: this
    process's)."""
    middleware = environ.get("RMW_IMPLEMENTATION", "")
    if middleware and middleware not in FAST_DDS_MIDDLEWARES:
        return {}
    if environ.get(PROFILE_VARIABLE) or environ.get(LEGACY_PROFILE_VARIABLE):
        return {}
    folder = Path(working_folder) if working_folder is not None else Path(os.getcwd())
    if any((folder / name).is_file() for name in WORKING_FOLDER_PROFILES):
        return {}
    profile = str(config_path(PROFILE_FILE))
    if environ.get("ROS_DISTRO", "").strip().lower() in FAST_DDS_2_DISTROS:
        return {PROFILE_VARIABLE: profile, LEGACY_PROFILE_VARIABLE: profile}
    return {PROFILE_VARIABLE: profile}
