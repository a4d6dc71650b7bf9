"""The LLM-State paper's Table I tasks on an AI2-THOR world (`task-learning llm-state --backend symbolic|ai2thor`,
config/llm_state/thor_tasks.yaml): the tasks a FloorPlan supports reach their goal as the
world's metadata says, the others end with the reason (offline model: not a language model)."""
from __future__ import annotations

import json

import pytest

from task_learning.apps.cli import main
from task_learning.errors import ConfigError
from task_learning.llm_state.household import load_household
from task_learning.llm_state.thor_tasks import load_thor_tasks

from ..thor_helpers import thor_env  # noqa: F401  (thor_env: a fixture)

RUNNABLE = ("switch_off_bedroom_light", "open_fridge", "book_on_desk", "switch_off_all_lights")


def test_every_table_i_task_is_either_runnable_or_says_why():
    thor = load_thor_tasks()
    paper = {name for name, task in load_household().tasks.items() if not task.heldout}
    assert set(thor.tasks) | set(thor.unsupported) == paper and not set(thor.tasks) & set(thor.unsupported)


@pytest.mark.parametrize("task", RUNNABLE)
def test_a_supported_task_reaches_its_goal_in_its_floorplan(capsys, task):
    assert main(["llm-state", "--task", task, "--backend", "symbolic", "--show-state", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    trial = data["trials"][0]
    assert trial["success"] and trial["steps"] >= 2 and data["summary"]["hands"] == 1
    assert trial["map"] == f"{load_thor_tasks().task(task).scene}@symbolic" and "NOT a language model" in data["note"]


def test_the_goal_check_is_the_world_not_the_policy(capsys):
    # AI2-THOR has no Computer: the check wants the Laptop on, and the offline model, which does not
    # know a laptop is a computer, searches the drawers and gives up: a failure, reported as such
    assert main(["llm-state", "--task", "use_computer", "--backend", "symbolic", "--json"]) == 0
    trial = json.loads(capsys.readouterr().out)["trials"][0]
    assert not trial["success"] and trial["end_reason"].startswith("policy_done")


@pytest.mark.parametrize("argv, message", [
    (["--task", "heat_milk", "--backend", "symbolic"], "does not run on an AI2-THOR world: AI2-THOR has no Milk"),
    (["--task", "open_fridge", "--backend", "symbolic", "--hands", "2"], "AI2-THOR's agent holds one object"),
    (["--task", "open_fridge", "--backend", "symbolic", "--scene", "map1"], "runs in tidy_floorplan1"),
    (["--task", "open_fridge", "--backend", "unity"], "invalid choice: 'unity'"),
])
def test_bad_input_on_a_thor_backend_is_one_line_and_exit_2(capsys, argv, message):
    assert main(["llm-state", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_bad_thor_tasks_file_names_the_key(tmp_path):
    bad = tmp_path / "thor_tasks.yaml"
    bad.write_text("tasks:\n  open_fridge: {scene: tidy_floorplan1, check: ['open Fridge']}\n")
    with pytest.raises(ConfigError, match=r"tasks\.open_fridge\.check\[0\]"):
        load_thor_tasks(bad)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("thor_env")
def test_through_the_ai2thor_controller_and_the_standin(capsys):
    pytest.importorskip("ai2thor")
    for task in ("book_on_desk", "open_fridge"):
        assert main(["llm-state", "--task", task, "--backend", "ai2thor", "--json"]) == 0
        trial = json.loads(capsys.readouterr().out)["trials"][0]
        assert trial["success"] and trial["map"].endswith("@ai2thor"), trial
