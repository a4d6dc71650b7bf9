"""The project's ROS nodes, listed once: every other list of them is generated from this one or
checked against it (test/nodes/test_node_registry.py).

- setup.py's console scripts (`<name>_node`, what `ros2 run task_learning <name>_node` starts) are
  generated from `NODES` (setup.py runs this file on its own, so it imports nothing of the project);
- plumbing/entry.py resolves those scripts' targets from `NODES`;
- task_learning.apps.bringup allows only these modules in a bring-up file, and config/bringup.yaml (which
  both `task-learning bringup` and launch/task_learning.launch.py read) names nodes of this list:
  an entry's module and executable default to this list's, and the test refuses a file that
  names a node missing here.

Plain tuples of strings and nothing to import: the node entry point imports this before anything
heavy, so a Ctrl-C during a node's start is caught (plumbing/entry.py).
"""
from __future__ import annotations

PACKAGE = "task_learning_nodes"
NODES_PACKAGE = f"{PACKAGE}.nodes"  # nodes/nodes/<name>.py, one module per node
ENTRY_MODULE = f"{PACKAGE}.plumbing.entry"  # every executable starts there (stop handlers first)

# Each node's name: its module nodes/nodes/<name>.py, its executable <name>_node, its key in
# config/bringup.yaml. The order is bring-up's.
NODES = (
    "perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner",
    "anticipation", "synthetic_robot", "llm_server", "live_view", "web_operator",
)


def module_of(name: str) -> str:
    """The node's module: `python -m <module>` (through the entry) runs it."""
    return f"{NODES_PACKAGE}.{name}"


def executable_of(name: str) -> str:
    """The node's console script."""
    return f"{name}_node"


NODE_MODULES = tuple(module_of(name) for name in NODES)
EXECUTABLES = {executable_of(name): module_of(name) for name in NODES}  # script -> node module


def console_scripts() -> list[str]:
    """setup.py's entry points of the nodes: `perception_node = task_learning_nodes.plumbing.entry:perception_node`."""
    return [f"{script} = {ENTRY_MODULE}:{script}" for script in EXECUTABLES]
