"""launch/*.launch.py, checked without a ROS 2 install: `launch`, `launch_ros` and
`ament_index_python` are not installable here, so a subprocess runs each launch file against
minimal stand-ins that record what the file asks for (nodes, executables, parameter files,
overrides). That checks the files' own logic; the launch API itself is exercised on a ROS install."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

STANDINS = {
    "launch/__init__.py": """
class LaunchDescription:
    def __init__(self, entities):
        self.entities = list(entities)
""",
    "launch/actions.py": """
class _Recorded:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
class DeclareLaunchArgument(_Recorded): pass
class LogInfo(_Recorded): pass
class Shutdown(_Recorded): pass
class OpaqueFunction(_Recorded): pass
""",
    "launch/substitutions.py": """
class LaunchConfiguration:
    def __init__(self, name):
        self.name = name
    def perform(self, context):
        return context[self.name]
""",
    "launch_ros/__init__.py": "",
    "launch_ros/actions.py": """
class Node:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
""",
    "ament_index_python/__init__.py": "",
    "ament_index_python/packages.py": """
import os
def get_package_share_directory(name):
    assert name == "task_learning", name
    return os.environ["FAKE_SHARE"]
""",
}

RUNNER = """
import json, runpy, sys
path, arguments = sys.argv[1], json.loads(sys.argv[2])
description = runpy.run_path(path)["generate_launch_description"]()
declared = {}
nodes, skipped = [], []
for entity in description.entities:
    kind = type(entity).__name__
    if kind == "DeclareLaunchArgument":
        declared[entity.args[0]] = entity.kwargs["default_value"]
    elif kind == "OpaqueFunction":
        context = dict(declared, **arguments)
        for action in entity.kwargs["function"](context):
            if type(action).__name__ == "Node":
                k = action.kwargs
                nodes.append({"package": k["package"], "executable": k["executable"], "name": k["name"],
                              "parameters": k["parameters"], "on_exit": type(k.get("on_exit")).__name__})
            else:
                skipped.append(action.kwargs["msg"])
print(json.dumps({"declared": declared, "nodes": nodes, "skipped": skipped}))
"""


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    base = tmp_path_factory.mktemp("launch_standins")
    for rel, text in STANDINS.items():
        path = base / "site" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    share = base / "share" / "task_learning"
    share.mkdir(parents=True)
    (share / "config").symlink_to(ROOT / "config")
    return base


def run_launch(standins: Path, name: str, **arguments: str) -> dict:
    env = {"PYTHONPATH": str(standins / "site"), "FAKE_SHARE": str(standins / "share" / "task_learning"),
           "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", RUNNER, str(ROOT / "launch" / name), json.dumps(arguments)],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_full_launch_starts_every_present_node_with_its_parameter_file(standins):
    from task_learning.bringup import load_bringup_config, module_exists

    out = run_launch(standins, "task_learning.launch.py")
    assert set(out["declared"]) == {"scene", "backend", "nodes"}
    config = load_bringup_config()
    present = [n for n in config.nodes if module_exists(n.module)]
    assert [n["name"] for n in out["nodes"]] == [n.name for n in present]
    assert len(out["skipped"]) == len(config.nodes) - len(present)
    share = standins / "share" / "task_learning" / "config" / "nodes"
    for node, spec in zip(out["nodes"], present):
        assert node["package"] == "task_learning" and node["executable"] == spec.executable
        assert node["parameters"] == [str(share / spec.params_file.name)]  # no overrides by default
        assert node["on_exit"] == "Shutdown"


def test_full_launch_routes_scene_and_backend_overrides(standins):
    out = run_launch(standins, "task_learning.launch.py", scene="organize_office", backend="symbolic",
                     nodes="perception,grounding")
    by_name = {n["name"]: n for n in out["nodes"]}
    assert set(by_name) == {"perception", "grounding"}
    assert by_name["perception"]["parameters"][1] == {"scene": "organize_office", "backend": "symbolic"}
    assert by_name["grounding"]["parameters"][1] == {"scene": "organize_office"}


def test_perception_launch(standins):
    out = run_launch(standins, "perception.launch.py")
    [node] = out["nodes"]
    assert node["executable"] == "perception_node" and node["name"] == "perception"
    assert node["parameters"][0].endswith("config/nodes/perception.yaml") and len(node["parameters"]) == 1
    out = run_launch(standins, "perception.launch.py", backend="ai2thor")
    assert out["nodes"][0]["parameters"][1] == {"backend": "ai2thor"}
