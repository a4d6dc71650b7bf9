"""`--backend ai2thor` on the command line: `scene` reads a scene back through the real ai2thor
Controller (the stand-in simulator here), `run` learns tidy_floorplan1 to 100 % with STARS+O and
Trial #2 makes no LLM call and asks nothing; bad input is one clear line and exit code 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..shared_paths import SIX_SCENES
from ..thor_helpers import state_of, thor_env  # noqa: F401  (thor_env: a fixture)

pytest.importorskip("ai2thor")
pytestmark = [pytest.mark.usefixtures("thor_env"), pytest.mark.slow, pytest.mark.timeout(900)]

CLI = str(Path(sys.executable).parent / "task-learning")


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_scene_json_through_the_controller_equals_the_symbolic_world():
    thor = _cli("scene", "--scene", "tidy_floorplan1", "--backend", "ai2thor", "--json")
    assert thor.returncode == 0, thor.stderr
    mine = _cli("scene", "--scene", "tidy_floorplan1", "--json")
    a, b = json.loads(thor.stdout), json.loads(mine.stdout)
    for key in ("name", "objects", "task_objects", "assertions"):
        assert key in a
    assert a["name"] == "tidy_floorplan1" and a["assertions"] == 10 and len(a["task_objects"]) == 9
    assert state_of({"objects": a["objects"]}) == state_of({"objects": b["objects"]})


def test_scene_from_recorded_metadata_through_the_controller():
    out = _cli("scene", "--scene", f"{SIX_SCENES}#306", "--backend", "ai2thor", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["name"] == "FloorPlan306" and len(data["objects"]) == 29


def test_run_reaches_full_completion_and_trial_two_asks_nothing(tmp_path):
    db = str(tmp_path / "kb.sqlite")
    args = ("run", "--scene", "tidy_floorplan1", "--backend", "ai2thor", "--condition", "STARS+O", "--llm", "offline",
            "--operator", "simulated", "--db", db, "--json")
    first = _cli(*args)
    assert first.returncode == 0, first.stderr
    one = json.loads(first.stdout)
    assert one["completion"] == 100.0 and one["backend"] == "ai2thor", one
    assert one["usage"]["calls"] > 0 and one["yes_no"] > 0
    second = _cli(*args)
    assert second.returncode == 0, second.stderr
    two = json.loads(second.stdout)
    assert two["completion"] == 100.0
    assert two["usage"]["calls"] == 0 and two["yes_no"] == 0 and two["proposed"] == 0


def test_bad_input_is_one_clear_line(tmp_path):
    scene = tmp_path / "nowhere.yaml"
    scene.write_text("task: tidy kitchen\nfloorplan: FloorPlan999\ntask_objects: [{object: Apple, preferred: Fridge}]\n")
    out = _cli("scene", "--scene", str(scene), "--backend", "ai2thor", "--json")
    assert out.returncode == 2 and "FloorPlan999" in out.stderr and "FloorPlan1" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    seeded = _cli("scene", "--scene", "tidy_floorplan1", "--backend", "ai2thor", "--seed", "3")
    assert seeded.returncode == 2 and "takes no seed" in seeded.stderr and "Traceback" not in seeded.stderr
