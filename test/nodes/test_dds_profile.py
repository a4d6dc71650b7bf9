"""The stack's Fast DDS profile: what it sets, that every node bringup starts gets it, and that a
choice of the user's always wins."""
from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from task_learning.apps import bringup
from task_learning.apps.dds_profile import (
    LEGACY_PROFILE_VARIABLE,
    PROFILE_VARIABLE,
    WORKING_FOLDER_PROFILES,
    profile_env,
)

NS = {"dds": "http://www.eprosima.com"}


def _plain_env() -> dict[str, str]:
    """This process's environment without any middleware or Fast DDS choice."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("FASTDDS_", "FASTRTPS_")) and k != "RMW_IMPLEMENTATION"}


def test_default_is_the_shipped_profile_with_the_writer_values_it_documents(tmp_path):
    env = profile_env({}, tmp_path)
    # Fast DDS 3 (Kilted, these wheels) reads the old name too and warns, per node, that it is
    # deprecated (issue 32): it is set only where ROS_DISTRO names a Fast DDS 2 distribution.
    assert LEGACY_PROFILE_VARIABLE not in env
    jazzy = profile_env({"ROS_DISTRO": "jazzy"}, tmp_path)
    assert jazzy[LEGACY_PROFILE_VARIABLE] == jazzy[PROFILE_VARIABLE] == env[PROFILE_VARIABLE]
    path = Path(env[PROFILE_VARIABLE])
    assert path.name == "fastdds_profile.xml" and path.is_file()
    writer = ET.parse(path).getroot().find("dds:profiles/dds:data_writer", NS)
    assert writer is not None and writer.get("is_default_profile") == "true"
    blocking = writer.find("dds:qos/dds:reliability/dds:max_blocking_time", NS)
    heartbeat = writer.find("dds:times/dds:heartbeat_period", NS)
    assert (blocking.findtext("dds:sec", namespaces=NS), blocking.findtext("dds:nanosec", namespaces=NS)) == ("5", "0")
    assert (heartbeat.findtext("dds:sec", namespaces=NS),
            heartbeat.findtext("dds:nanosec", namespaces=NS)) == ("0", "250000000")


@pytest.mark.parametrize("middleware", ["rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp"])
def test_fast_dds_named_explicitly_gets_the_profile(tmp_path, middleware):
    assert PROFILE_VARIABLE in profile_env({"RMW_IMPLEMENTATION": middleware}, tmp_path)


@pytest.mark.parametrize("choice", [
    {PROFILE_VARIABLE: "/etc/my_profile.xml"},
    {LEGACY_PROFILE_VARIABLE: "/etc/my_profile.xml"},
    {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"},
    {"RMW_IMPLEMENTATION": "rmw_zenoh_cpp"},
])
def test_a_choice_of_the_users_wins(tmp_path, choice):
    assert profile_env(choice, tmp_path) == {}


@pytest.mark.parametrize("name", WORKING_FOLDER_PROFILES)
def test_a_profile_in_the_working_folder_wins(tmp_path, name):
    (tmp_path / name).write_text("<dds/>", encoding="utf-8")
    assert profile_env({}, tmp_path) == {}


def _started_node_sees(tmp_path: Path, env: dict[str, str]) -> str:
    """Start one stand-in node through Bringup.start and return the profile variable it saw."""
    out = tmp_path / "seen.txt"
    command = [sys.executable, "-c",
               f"import os, sys; open(sys.argv[1], 'w').write(os.environ.get({PROFILE_VARIABLE!r}, '<unset>'))",
               str(out)]
    spec = bringup.NodeSpec(name="probe", module="probe", executable="probe", params_file=None)
    runner = bringup.Bringup([bringup.NodeLaunch(spec, command)], env=env)
    runner.start()
    try:
        assert runner.running[0].process.wait(timeout=60) == 0
    finally:
        runner.stop_all()
    return out.read_text(encoding="utf-8")


def test_bringup_starts_every_node_with_the_profile(tmp_path):
    assert _started_node_sees(tmp_path, _plain_env()) == profile_env({})[PROFILE_VARIABLE]


def test_bringup_keeps_the_users_profile(tmp_path):
    env = {**_plain_env(), PROFILE_VARIABLE: str(tmp_path / "mine.xml")}
    assert _started_node_sees(tmp_path, env) == str(tmp_path / "mine.xml")
