"""Every node has the same shape: `main` is `run_node`, parameters are declared from one typed model
(descriptions, ranges) that the parameter files are checked against, and the oversight node stops
cleanly on a second Ctrl-C."""
from __future__ import annotations

import ast
import importlib
import signal

import pytest

from task_learning.apps.bringup import load_bringup_config
from task_learning.errors import ConfigError
from task_learning_nodes.nodes import synthetic_robot  # imports cv2 now: its loader amends LD_LIBRARY_PATH once
from task_learning_nodes.plumbing.fetch_params import FetchParameters
from task_learning_nodes.plumbing.params import check_params_file

from ..ros_testing import ROOT

NODES = [spec for spec in load_bringup_config().nodes]


@pytest.mark.parametrize("spec", NODES, ids=lambda s: s.name)
def test_main_is_run_node(spec):
    source = (ROOT / "nodes" / "nodes" / f"{spec.module.rsplit('.', 1)[-1]}.py").read_text()
    [main] = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    calls = [n.func.id for n in ast.walk(main) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert calls == ["run_node"], f"{spec.module}.main calls {calls}"


@pytest.mark.parametrize("spec", NODES, ids=lambda s: s.name)
def test_parameters_are_described_and_the_file_sets_only_declared_ones(spec):
    module = importlib.import_module(spec.module)
    _check_rows(module.Parameters.rows())
    # rclpy ignores a value for an undeclared parameter: a misspelt key would change nothing. The
    # file is checked against the node's model (perception's: with the fetch backend's too).
    check_params_file(spec.params_file, getattr(module, "ParamsFile", module.Parameters), spec.name)


def test_a_params_file_the_node_would_refuse_is_refused_with_one_line(tmp_path):
    from task_learning_nodes.nodes import planner

    def refused(body: str) -> str:
        path = tmp_path / "planner.yaml"
        path.write_text("planner:\n  ros__parameters:\n" + body, encoding="utf-8")
        with pytest.raises(ConfigError) as err:
            check_params_file(path, planner.Parameters, "planner")
        assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}: ")
        return str(err.value)

    assert refused("    max_action: 5\n").endswith("planner.ros__parameters.max_action: unknown key (did you mean "
                                                   "'max_actions'?)")
    assert "max_actions: must be between 1 and 100000" in refused("    max_actions: 0\n")
    assert "service_timeout_s: expected a number with a decimal point, got 5" in refused("    service_timeout_s: 5\n")
    assert "condition: 'STARZ' is not one of" in refused("    condition: STARZ\n")
    assert "require_confirmation: expected a boolean" in refused("    require_confirmation: 'no'\n")
    params = check_params_file(ROOT / "config" / "nodes" / "planner.yaml", planner.Parameters, "planner")
    assert isinstance(params, planner.Parameters) and params.max_actions == 100 and params.condition == "STARS+O"


def test_perception_reads_its_ai2thor_group_typed():
    from task_learning_nodes.nodes import perception

    values = {p.name: p.default for p in perception.Parameters.rows()}
    values["ai2thor.width"] = 640
    params = perception.Parameters.from_flat(values)
    assert params.ai2thor.width == 640 and params.backend == "symbolic"
    with pytest.raises(ConfigError, match=r"ai2thor\.platform: 'Windows' is not one of"):
        perception.Parameters.from_flat({**values, "ai2thor.platform": "Windows"})


def _check_rows(params) -> None:
    """Each row has a description, a descriptor rclpy accepts, a default within its range."""
    from task_learning_nodes.plumbing.params import Param

    assert params and all(isinstance(p, Param) for p in params)
    for param in params:
        assert len(param.description) > 10, param.name
        descriptor = param.descriptor()  # a range on a string parameter would raise here
        assert descriptor.description == param.description
        if isinstance(param.default, (int, float)) and not isinstance(param.default, bool) and param.min is not None:
            assert param.min <= param.default <= param.max, param.name
        if param.choices:
            assert param.default in param.choices, param.name


def test_the_fetch_bridge_and_the_synthetic_robot_declare_described_rows():
    _check_rows(FetchParameters.rows())
    _check_rows(synthetic_robot.Parameters.rows())
    # the robot's end of the topics and the frames are the bridge's own rows
    shared = {p.name: p for p in FetchParameters.rows()}
    robot_end = {p.name: p for p in synthetic_robot.Parameters.rows() if p.name in shared}
    assert robot_end == {n: shared[n] for n in ("color_topic", "depth_topic", "camera_info_topic", "map_frame",
                                                "base_frame", "skill_action")}


def test_bad_values_name_the_parameter(ros_graph):
    node = ros_graph.start_node("oversight", "-p", "timeout_s:=-3.0")
    code, output = node.stop(sig=None, timeout=30)
    assert code == 2 and "parameter timeout_s" in output and "out of range" in output, output
    assert "Traceback" not in output
    node = ros_graph.start_node("oversight", "-p", "timeout_s:=5")
    code, output = node.stop(sig=None, timeout=30)
    assert code == 2 and "parameter timeout_s: expected a number with a decimal point" in output, output


def test_a_second_sigint_while_stopping_changes_nothing(ros_graph):
    node = ros_graph.start_node("oversight", "-p", f"db_path:={ros_graph.tmp / 'kb.sqlite'}",
                                params_file="oversight.yaml")
    node.wait_for_line("oversight ready", timeout=60)
    node.send_signal(signal.SIGINT)
    node.send_signal(signal.SIGINT)  # as when a terminal's Ctrl-C reaches it and launch forwards one
    code, output = node.stop(sig=None, timeout=30)
    assert code == 0 and "Traceback" not in output and "KeyboardInterrupt" not in output, output
