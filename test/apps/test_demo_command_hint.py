"""The demo's last line names a command the user's shell can run (issue 40): after `make demo` the
venv is not activated, so a bare `task-learning kb show` is "command not found"."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

demo = pytest.importorskip("task_learning_nodes.clients.demo")


def script(folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "task-learning"
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_outside_the_venv_the_hint_is_the_scripts_path(tmp_path, monkeypatch) -> None:
    bin_dir = script(tmp_path / ".venv" / "bin").parent
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert demo.cli_command(bin_dir) == os.path.join(".venv", "bin", "task-learning")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert demo.cli_command(bin_dir) == str(bin_dir / "task-learning")


def test_with_the_venv_on_path_the_hint_is_the_bare_name(tmp_path, monkeypatch) -> None:
    bin_dir = script(tmp_path / ".venv" / "bin").parent
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert demo.cli_command(bin_dir) == "task-learning"
