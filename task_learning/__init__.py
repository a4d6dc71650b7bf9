"""task_learning: a ROS-free core with which a robot learns household tasks from an LLM and a human.

The core never imports rclpy; the thin ROS 2 layer lives in the `task_learning_nodes` package
(the `nodes/` folder). Everything here can be used in-process for experiments.

Each package of the core has one public face: its `__all__`, the names other packages, the ROS
layer and users import from it (the API reference, docs/reference/python-api.md, is generated
from these). Most packages serve their names lazily (`lazy_exports`), so importing one module of
a package never loads the rest of it: a node or a command starts in a fraction of the time an
eager package import would take (measured with the oversight package: 0.05 s against 10 s on a
loaded 2-core machine).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """`__all__` and the module `__getattr__` of a package whose public names (name -> the module
    defining it) are imported on first use (PEP 562)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return sorted(exports), __getattr__
