"""The layering rule of docs/architecture.md, read from the code's own imports (every `import`
statement, at module level, inside functions and under TYPE_CHECKING alike):

    applications (task_learning.apps)           may import anything below
    ROS layer (task_learning_nodes, nodes/)     imports the core, never an application
    test doubles (task_learning.testing)        import the core and the offline stand-in
    offline stand-in (task_learning.offline_model)  imports the core (the methods' prompt formats)
    core (every other package of task_learning) imports none of the above, and its packages
                                                import each other without a circle
    the simulated robot (task_learning_sim, sim/)  robot-side: nothing of task_learning (apps
                                                included) or the ROS layer imports it; it is
                                                started as a robot is, as its own program

The offline stand-in is reached from `llm/` by module path only (llm/registry.py). No import runs
from a lower core package to a higher one (the last, kb -> productions, moved into productions/
in issue 28): such an import closes a circle, and a circle fails the test.
"""
from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The layers above the core, highest first by rank; everything else of task_learning is the core (0).
RANK = {"apps": 3, "testing": 2, "offline_model": 1}


def imports_of(path: Path, package: str) -> set[str]:
    """Absolute names of every module `path` imports (relative imports resolved in `package`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def module_imports(source_root: Path, top: str) -> dict[str, set[str]]:
    """`top`.x.y -> the names it imports, for every .py file under source_root/top."""
    found = {}
    for path in sorted((source_root / top).rglob("*.py")):
        parts = list(path.relative_to(source_root).with_suffix("").parts)
        package = ".".join(parts if parts[-1] == "__init__" else parts[:-1])
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = imports_of(path, package)
    return found


def unit(name: str, top: str) -> str | None:
    """The core unit (first component below `top`) a module name belongs to, None outside `top`."""
    parts = name.split(".")
    return parts[1] if parts[0] == top and len(parts) > 1 else None


def distinct(names: set[str], top: str) -> list[str]:
    """"from a.b import c" names both a.b and a.b.c: a.b alone is kept, unless a.b is the top
    package itself ("from task_learning import apps" must still name task_learning.apps)."""
    return sorted(n for n in names if not any(n.startswith(m + ".") and m != top for m in names))


def robot_side_problems(source_root: Path, sim: str, stack: dict[str, str]) -> list[str]:
    """Imports of the simulated robot's package by the stack (package name -> its source folder)."""
    problems = []
    for folder in stack.values():
        if not (source_root / folder).is_dir():
            continue
        for module, names in module_imports(source_root, folder).items():
            found = sorted(name for name in names if name == sim or name.startswith(sim + "."))
            if found:  # one line a module ("from a import b" names both a and a.b)
                problems.append(f"{module} imports the simulated robot ({found[0]}): "
                                f"the stack never imports {sim}")
    return problems


def layer_problems(source_root: Path, top: str = "task_learning", ros: str = "task_learning_nodes",
                   ros_dir: str = "nodes", sim: str = "task_learning_sim") -> list[str]:
    """Every breach of the rule, one line each (empty: the layering holds)."""
    problems: list[str] = robot_side_problems(source_root, sim, {top: top, ros: ros_dir})
    edges: dict[str, set[str]] = {}
    for module, names in module_imports(source_root, top).items():
        here = unit(module, top)
        for name in distinct(names, top):
            there = unit(name, top)
            if name == sim or name.startswith(sim + "."):
                continue  # reported by robot_side_problems
            if name == ros or name.startswith(ros + "."):
                if here != "apps":
                    problems.append(f"{module} imports the ROS layer ({name}): only {top}.apps may")
            elif here is None or there is None or there == here:
                continue
            elif RANK.get(there, 0) > RANK.get(here, 0):
                problems.append(f"{module} imports {name}: {top}.{here} sits below {top}.{there}")
            elif here not in RANK and there not in RANK:
                edges.setdefault(here, set()).add(there)
    if (source_root / ros_dir).is_dir():
        for module, names in module_imports(source_root, ros_dir).items():
            problems += [f"{module} imports {name}: the ROS layer never imports an application"
                         for name in distinct(names, top) if unit(name, top) == "apps"]
    try:
        tuple(TopologicalSorter(edges).static_order())
    except CycleError as exc:
        problems.append(f"core packages import each other in a circle: {' -> '.join(exc.args[1])}")
    return problems


def test_the_project_keeps_its_layers():
    assert layer_problems(ROOT) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


BASE = {
    "task_learning/__init__.py": "",
    "task_learning/world/__init__.py": "from task_learning.errors import Oops\n",
    "task_learning/errors.py": "",
    "task_learning/stars/__init__.py": "from task_learning.world import scene\n",
    "task_learning/apps/__init__.py": "import task_learning_nodes.entry\nfrom task_learning.stars import x\n",
    "task_learning/offline_model/__init__.py": "from task_learning.stars import x\n",
    "nodes/entry.py": "from task_learning.stars import x\n",
}


def test_a_clean_tree_passes(tmp_path):
    assert layer_problems(_tree(tmp_path, BASE)) == []


@pytest.mark.parametrize("path, text, expected", [
    ("task_learning/world/late.py", "def f():\n    import task_learning_nodes.planner\n", "imports the ROS layer"),
    ("task_learning/world/late.py", "from task_learning.apps import cli\n", "sits below task_learning.apps"),
    ("task_learning/llm.py", "from task_learning.offline_model import x\n", "sits below task_learning.offline_model"),
    ("task_learning/world/up.py", "from task_learning.stars import tree\n", "in a circle"),
    ("task_learning/world/up.py", "from ..stars import tree\n", "in a circle"),
    ("nodes/demo.py", "from task_learning.apps.cli import main\n", "the ROS layer never imports an application"),
    ("task_learning/apps/sim.py", "import task_learning_sim.cli\n", "never imports task_learning_sim"),
    ("task_learning/world/physics.py", "def f():\n    from task_learning_sim import scene_world\n",
     "never imports task_learning_sim"),
    ("nodes/sim_bridge.py", "from task_learning_sim.simulator import Simulator\n", "never imports task_learning_sim"),
])
def test_an_added_breach_fails(tmp_path, path, text, expected):
    problems = layer_problems(_tree(tmp_path, {**BASE, path: text}))
    assert len(problems) == 1 and expected in problems[0], problems
