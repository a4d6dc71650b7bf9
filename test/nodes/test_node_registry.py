"""The one node registry (nodes/plumbing/registry.py) against every other list of the nodes: setup.py's
console scripts and the installed ones, the entry point's targets, the bring-up file that
`task-learning bringup` and the launch file read, the node modules in the tree. A node added in one
place and not the others fails here, naming the place."""
from __future__ import annotations

import ast
import importlib.metadata
from runpy import run_path

import pytest

from task_learning.apps import bringup
from task_learning.errors import ConfigError
from task_learning_nodes.plumbing import entry, registry

from ..ros_testing import ROOT


def test_setup_py_generates_the_console_scripts_from_the_registry():
    namespace = run_path(str(ROOT / "nodes" / "plumbing" / "registry.py"))
    scripts = namespace["console_scripts"]()
    assert scripts == [f"{name}_node = task_learning_nodes.plumbing.entry:{name}_node" for name in registry.NODES]
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert 'run_path("nodes/plumbing/registry.py")["console_scripts"]()' in setup
    assert "NODE_CONSOLE_SCRIPTS" in setup.split("console_scripts", 2)[-1]  # used in entry_points


def test_the_installed_executables_are_the_registry_s():
    """The editable install's entry points (make setup): a stale install would start other modules."""
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")
                 if ep.value.startswith(f"{registry.PACKAGE}.")}
    assert installed == {script: f"{registry.ENTRY_MODULE}:{script}" for script in registry.EXECUTABLES}


def test_every_executable_resolves_to_a_node_module_whose_main_is_there():
    for script, module in registry.EXECUTABLES.items():
        assert getattr(entry, script).module == module
        path = ROOT / "nodes" / "nodes" / f"{module.rsplit('.', 1)[-1]}.py"
        functions = {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)}
        assert "main" in functions, path
    with pytest.raises(AttributeError):
        entry.no_such_node  # noqa: B018 (the attribute lookup is the test)
    modules = {p.stem for p in (ROOT / "nodes" / "nodes").glob("*.py") if p.stem != "__init__"}
    assert modules == set(registry.NODES), "a module in nodes/nodes/ that is not in the registry, or the reverse"


def test_the_bringup_file_names_registry_nodes_only():
    config = bringup.load_bringup_config()
    for spec in config.nodes:
        assert spec.name in registry.NODES, spec.name
        assert (spec.module, spec.executable) == (registry.module_of(spec.name), registry.executable_of(spec.name))
    assert bringup.NODE_MODULES == registry.NODE_MODULES
    launch = (ROOT / "launch" / "task_learning.launch.py").read_text(encoding="utf-8")
    helpers = (ROOT / "task_learning" / "apps" / "bringup.py").read_text(encoding="utf-8")
    assert "load_bringup_config(" in launch and "launch_node_actions(" in launch  # the launch reads it
    assert "executable=spec.executable" in helpers


def test_a_bringup_entry_outside_the_registry_needs_its_module(tmp_path):
    path = tmp_path / "bringup.yaml"
    path.write_text("nodes:\n  perception_twin: {params: x.yaml}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"nodes\.perception_twin\.module: missing"):
        bringup.load_bringup_config(path)
    path.write_text("nodes:\n  perception_twin: {module: task_learning_nodes.nodes.perception}\n", encoding="utf-8")
    [spec] = bringup.load_bringup_config(path).nodes
    assert (spec.module, spec.executable) == ("task_learning_nodes.nodes.perception", "perception_node")
