"""`task-learning llm-state` and `task-learning experiment --paper llm-state`, in process."""
from __future__ import annotations

import json

import pytest

from task_learning.apps.cli import main


def test_llm_state_json_has_the_issue_fields(capsys):
    assert main(["llm-state", "--scene", "all", "--task", "heat_milk", "--method", "ours", "--llm", "offline",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["map"] for t in data["trials"]] == ["map1", "map2", "map3", "map4", "map5"]
    for trial in data["trials"]:
        assert {"success", "steps", "llm_calls", "tokens", "replans", "dropped_calls"} <= set(trial)
        assert trial["success"] and trial["steps"] > 0 and trial["llm_calls"] > 0 and trial["tokens"] > 0
    assert "NOT a language model" in data["note"] and data["summary"]["successes"] == 5


@pytest.mark.parametrize("trials", [1, 2])
def test_scene_all_runs_every_map_whatever_trials(capsys, trials):
    """Issue 32: `--scene all` ran only map1 unless --trials was 5 or more (trial i on map i)."""
    assert main(["llm-state", "--scene", "all", "--task", "heat_milk", "--trials", str(trials), "--json"]) == 0
    maps = [t["map"] for t in json.loads(capsys.readouterr().out)["trials"]]
    assert maps == [m for m in ("map1", "map2", "map3", "map4", "map5") for _ in range(trials)]


def test_llm_state_text_output_and_state(capsys):
    assert main(["llm-state", "--task", "switch_off_bedroom_light", "--method", "no_summary", "--show-state"]) == 0
    out = capsys.readouterr().out
    assert "ok   map1" in out and "['switchoff', 'lightswitch2'](Success)" in out and "Note: " in out


@pytest.mark.parametrize("argv, message", [
    (["--task", "nope"], "unknown task 'nope'"),
    (["--task", "heat_milk", "--scene", "map9"], "unknown map 'map9'"),
    (["--task", "heat_milk", "--trials", "0"], "must be between 1 and 1000"),
    (["--task", "heat_milk", "--method", "magic"], "invalid choice: 'magic'"),
    (["--task", "heat_milk", "--llm", "bogus"], "unknown LLM provider 'bogus'"),
    (["--task", "heat_milk", "--cap", "-3"], "must be between 1 and 1000"),
])
def test_llm_state_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(["llm-state", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_experiment_runs_every_method_on_every_task_and_map(capsys, tmp_path):
    plot = tmp_path / "tables.png"
    assert main(["experiment", "--paper", "llm-state", "--json", "--plot", str(plot)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["maps"] == ["map1", "map2", "map3", "map4", "map5"] and len(data["table_i"]) == 15
    methods = ("ours", "no_states", "inner_monologue", "progprompt", "no_summary", "no_objects")
    for row in data["table_i"]:
        for method in methods:
            assert row[method]["sr"].endswith("/5") and 0 < row[method]["as"] <= row["cap"], (row["task"], method)
    assert data["means"]["hard"]["ours"]["paper"] == 77.14 and "NOT a language model" in data["note"]
    assert sum(int(row["ours"]["sr"][0]) for row in data["table_i"]) >= 60
    assert set(data["heldout"]) == {"no_states", "ours"}
    assert plot.is_file() and plot.stat().st_size > 1000


def test_tables_i_and_ii_print_the_papers_rows_beside_ours():
    from task_learning.experiments.llm_state_tables import (
        TABLE_I_METHODS,
        TABLE_II_METHODS,
        format_table_i,
        format_table_ii,
        run_tables,
    )
    from task_learning.llm.client import make_client
    from task_learning.llm_state.household import load_household

    house = load_household()
    table = run_tables(house, make_client("offline", cache=False),
                       list(dict.fromkeys(TABLE_I_METHODS + TABLE_II_METHODS)), maps=["map1"])
    first, second = format_table_i(house, table), format_table_ii(house, table)
    assert first.count("(paper)") == 15 + 2 + 1 and second.count("(paper)") == 2 + 1
    assert "2/5 131.0" in first and "77.14%" in first and "8.71%" in second and "64.86%" in second
    assert "1/1" in first  # one map here: x/1
    assert "make 2 slices of toasts using toaster and place them on*" in first


def test_the_loop_runs_against_an_openai_compatible_endpoint():
    """The three prompts go through LLMClient to a (loopback, scripted) endpoint, routed as
    config/llm.yaml routes the LLM-State paper's prompt types: to the chat model (the paper used gpt-4-0613),
    each prompt one user message, nothing to completions; its answers are parsed like the offline
    model's."""
    from task_learning.llm.client import make_client
    from task_learning.llm.settings import load_llm_settings
    from task_learning.llm_state.agent import LLMStateAgent
    from task_learning.llm_state.household import HouseholdWorld, load_household
    from task_learning.testing.fake_server import CHAT, COMPLETIONS, FakeOpenAIServer, ScriptedReply, chat_body

    house = load_household()
    task = house.task("open_fridge")
    answers = [
        "",  # first attention: nothing
        "Low-level Action Plan:\n1. move(fridge1)\n2. open(fridge1)",  # policy (no history yet)
        'add_related_objects("fridge1")',  # attention
        'update_reasoning("The robot opened fridge1.")\nupdate_state("fridge1", "open")',  # estimator
        "Low-level Action Plan:\n",  # policy: done
    ]
    with FakeOpenAIServer() as server:
        for text in answers:
            server.queue(CHAT, ScriptedReply(body=chat_body(text)))
        client = make_client("openai", env={"OPENAI_BASE_URL": server.base_url}, cache=False)
        result = LLMStateAgent(client, "ours", temperature=0.3).run(HouseholdWorld(house, "map2", task), task)
        bodies = [r.body for r in server.requests_to(CHAT)]
        assert server.requests_to(COMPLETIONS) == []
    selection_model = load_llm_settings().openai.selection_model
    assert [b["model"] for b in bodies] == [selection_model] * 5 and {b["temperature"] for b in bodies} == {0.3}
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in bodies)
    sent = [b["messages"][0]["content"] for b in bodies]
    assert result.success and result.steps == 2 and result.llm_calls == 5
    assert result.state["objects"] == {"fridge1": ["open"]} and result.end_reason.startswith("policy_done")
    assert "******** current observation start ********" in sent[0] and "Task goal: open the fridge" in sent[1]
    assert "['open', 'fridge1'](Success)" in sent[3]


def test_the_three_prompt_types_are_routed_to_the_chat_model_by_the_shipped_config():
    """config/llm.yaml lists the LLM-State paper's three prompt types among the selection (chat) types, and
    the routing the commands print says so."""
    from task_learning.llm.client import make_client
    from task_learning.llm.routing import describe_routes, routes
    from task_learning.llm.settings import load_llm_settings
    from task_learning.llm_state.prompts import PROMPT_TYPES

    settings = load_llm_settings()
    assert set(PROMPT_TYPES) <= set(settings.openai.selection_prompt_types)
    client = make_client("openai", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, cache=False)
    model = settings.openai.selection_model
    assert routes(client, PROMPT_TYPES) == {t: {"model": model, "api": settings.openai.selection_api}
                                            for t in PROMPT_TYPES}
    assert describe_routes(client, PROMPT_TYPES) == f"{', '.join(PROMPT_TYPES)} -> chat {model}"
    assert routes(make_client("offline"), PROMPT_TYPES)["llm_state_policy"] == {"provider": "offline"}