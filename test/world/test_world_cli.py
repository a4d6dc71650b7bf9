"""`task-learning scene` through the installed console script (a real subprocess)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from test.shared_paths import SIX_SCENES

pytestmark = pytest.mark.slow  # every test runs the CLI in a subprocess

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / ".venv" / "bin" / "task-learning"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), "scene", *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


@pytest.mark.parametrize("name, task_objects, assertions", [
    ("tidy_kitchen", 35, 40), ("store_groceries", 15, 18), ("organize_office", 12, 14)])
def test_scene_json_counts(name, task_objects, assertions):
    result = run("--scene", name, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["name"] == name
    assert len(data["task_objects"]) == task_objects and data["assertions"] == assertions
    ids = {o["objectId"] for o in data["objects"]}
    assert set(data["task_objects"]) <= ids
    assert "preferences" not in data  # ground truth only on request


def test_scene_summary_and_object_lookup():
    result = run("--scene", "tidy_kitchen")
    assert result.returncode == 0, result.stderr
    assert "35 task objects" in result.stdout and "40 completion assertions" in result.stdout
    assert "Mug|2: mug in dish rack" in result.stdout
    result = run("--scene", "tidy_kitchen", "--object", "Mug_in-the dish-rack", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["objectId"] == "Mug|2"


def test_scene_from_recorded_metadata():
    result = run("--scene", f"{SIX_SCENES}#21", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["name"] == "FloorPlan21"


@pytest.mark.parametrize("args, message", [
    (("--scene", "tidy_kitchn"), "did you mean 'tidy_kitchen'"),
    (("--scene", "tidy_kitchen", "--object", "mug"), "names 2 objects"),
    (("--scene", "tidy_kitchen", "--object", "cabinet"), "no object called 'cabinet'"),
])
def test_bad_input_is_one_clear_line(args, message):
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_scene_file_names_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("task: t\nlocation: l\nobjects:\n  - {type: Desk, preferd: Desk|1}\n")
    result = run("--scene", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(path) in result.stderr and "objects[0].preferd" in result.stderr
    assert "did you mean 'preferred'" in result.stderr
