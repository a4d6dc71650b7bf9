"""`experiment --paper bcr`: the BCR paper's Table 1, each task's row beside the offline stand-in's
(with a language model; labelled as not one) and the paper's, with trials, wall time, requests,
tokens and load. A scripted server stands in for llama-server (fast)."""
from __future__ import annotations

import json

import pytest

from task_learning.apps.cli import main
from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply, completion_body


@pytest.fixture
def off_list_server():
    """Answers every decision with an action that is never a candidate."""
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=lambda body: completion_body(
            [(" PickObject(Mug|1)", -0.1, {})], model=body.get("model", "m"), with_logprobs=False)))
        yield server


def test_rows_of_the_model_the_standin_and_the_paper_with_trials(off_list_server, capsys):
    argv = ["experiment", "--paper", "bcr", "--llm", "local", "--base-url", off_list_server.base_url,
            "--tasks", "make_coffee", "--trials", "2"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "answers: bounded" in lines[0] and "2 seeded trials" in lines[0]
    at = next(i for i, line in enumerate(lines) if line.startswith("make_coffee"))
    assert lines[at].split()[1] == "0/2" and "invalid_answer 2" in lines[at]
    assert lines[at + 1].strip().startswith("(offline stand-in)")
    assert lines[at + 2].strip().startswith("(paper, GPT-3.5)") and "50/50" in lines[at + 2]
    assert not any(line.startswith("wash_mug") for line in lines)
    trials = next(line for line in lines if line.startswith("  make_coffee: 2 trials"))
    # six answers off the list end a paper-mode trial; the second trial's prompts repeat the first's
    assert "12 LLM requests (6 to the model, 6 answered by an identical earlier prompt)" in trials
    assert "s wall" in trials and "cores" in trials
    assert any("NOT a language model" in line for line in lines)


def test_json_carries_the_standin_the_paper_and_the_models_answers(off_list_server, capsys):
    argv = ["experiment", "--paper", "bcr", "--llm", "local", "--base-url", off_list_server.base_url,
            "--tasks", "make_coffee", "--trials", "1", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answers"] == "bounded" and data["mode"] == "paper" and data["machine"]["cores"] >= 1
    row = data["rows"][0]
    assert row["successes"] == 0 and row["failures"] == {"invalid_answer": 1}
    assert row["paper"] == {"successes": 50, "trials": 50}
    assert row["offline_standin"]["trials"] == 1 and row["usage"]["calls"] == 6
    assert row["model_answers"][0]["read"] == "PickObject(Mug|1)" and row["model_answers"][0]["accepted"] is None


def test_offline_table_has_no_standin_twin(capsys):
    assert main(["experiment", "--paper", "bcr", "--tasks", "wash_mug", "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert "(offline stand-in)" not in out and "39/50" in out and "NOT a language model" in out


@pytest.mark.parametrize("argv, message", [
    (["--paper", "bcr", "--tasks", "fly"], "--tasks: unknown task(s) fly"),
    (["--trials", "3"], "--trials applies to --paper bcr only"),
    (["--paper", "bcr", "--maps", "map1"], "apply to --paper llm-state only"),
])
def test_bad_options_are_one_line_and_exit_2(argv, message, capsys):
    assert main(["experiment", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
