"""Every package of the core has one public face, its `__all__` (task_learning/__init__.py says
why most serve it lazily): each name it lists resolves, and the API reference is made from them."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_CORE = {"apps", "testing"}  # applications and test doubles: no public face of the core
PACKAGES = sorted(p.name for p in (ROOT / "task_learning").iterdir()
                  if (p / "__init__.py").exists() and p.name not in NOT_CORE)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_declares_its_public_names(package: str) -> None:
    module = importlib.import_module(f"task_learning.{package}")
    exported = getattr(module, "__all__", None)
    assert exported, f"task_learning.{package} has no __all__"
    assert len(set(exported)) == len(exported), f"task_learning.{package}.__all__ lists a name twice"


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves(package: str) -> None:
    """In a fresh interpreter, as a user's first import would: a name that only resolves after
    another package happened to be imported (an import circle) fails here."""
    code = (f"import task_learning.{package} as p; "
            "print(' '.join(n for n in p.__all__ if not hasattr(p, n)))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [], f"task_learning.{package} exports names that do not resolve: {run.stdout}"


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    import task_learning.planning as planning

    with pytest.raises(AttributeError, match=r"'task_learning\.planning' has no attribute 'nope'"):
        planning.nope  # noqa: B018


def test_importing_one_module_does_not_load_its_whole_package() -> None:
    code = ("import sys, task_learning.oversight.answers; "
            "print(sorted(m for m in sys.modules if m.startswith('task_learning.oversight.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "task_learning.oversight.web" not in loaded and "task_learning.oversight.panel" not in loaded
