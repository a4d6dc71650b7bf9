"""`experiment --paper anticipation|bootstrapping --llm local`: each row from the model, then the
offline stand-in's row for the same day/condition or family/agent (run in the same command,
labelled as not a language model), then the paper's where it has one; trials, wall times and the
machine's load printed. A scripted server stands in for llama-server (fast); it answers what a
base model often answers here: the prompt's own lines, no action and no option. And the stop
sequences these papers' answers end at (docs/llm.md, "Stop sequences")."""
from __future__ import annotations

import json

import pytest

from task_learning.apps.cli import main
from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply, completion_body

_COPY = " [Current Task] explore the room\n* (1.1 meters away) Drawer has not been explored"


@pytest.fixture
def copying_server():
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=lambda body: completion_body(
            [(_COPY, -0.1, {})], model=body.get("model", "m"), finish_reason="length", with_logprobs=False)))
        yield server


def test_anticipation_prints_model_and_standin_rows_and_wall_times(copying_server, capsys):
    argv = ["experiment", "--paper", "anticipation", "--days", "trace_01", "--llm", "local",
            "--base-url", copying_server.base_url]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    known = ("human alone", "Base8", "proposed", "proposed+O", "(offline stand-in)")
    body = [line for line in lines if line[14:34].strip() in known and not line.startswith("  trace_01")]
    labels = [line[14:34].strip() for line in body]
    assert labels == ["human alone", "Base8", "(offline stand-in)", "proposed", "(offline stand-in)",
                      "proposed+O", "(offline stand-in)"]
    standin_base8 = body[2].split()
    assert standin_base8[:2] == ["(offline", "stand-in)"] and standin_base8[2] == "33"  # the stand-in's own steps
    trials = [line for line in lines if line.startswith("  trace_01 ")]
    assert len(trials) == 4 and all(": 1 trial, " in t and "s wall" in t and "cores" in t for t in trials)
    assert any(line.startswith("  offline stand-in (not a language model), every row:") for line in lines)
    assert any("NOT a language model" in line for line in lines)
    # every request the model got carried the answer's stop sequences
    sent = [r.body for r in copying_server.requests_to(COMPLETIONS)]
    base8 = [b for b in sent if "Possible actions" in b["prompt"]]
    anticipation = [b for b in sent if "Task List:" in b["prompt"]]
    assert base8 and all("]" in b["stop"] and "\n\nAnswer:" in b["stop"] for b in base8)
    assert anticipation and all("\nExample" in b["stop"] for b in anticipation)


def test_anticipation_json_carries_the_standin_beside_each_row(copying_server, capsys):
    argv = ["experiment", "--paper", "anticipation", "--days", "trace_01", "--llm", "local",
            "--base-url", copying_server.base_url, "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert "NOT a language model" in data["standin_note"]
    for row in data["rows"]:
        assert row["trials"] == 1 and row["wall_s"] >= 0 and row["machine"]["cores"] >= 1
        assert row["offline_standin"]["condition"] == row["condition"]
    base8 = next(r for r in data["rows"] if r["condition"] == "Base8")
    assert base8["offline_standin"]["llm_calls"] == 36 and base8["llm_calls"] > 0


def test_offline_anticipation_prints_no_standin_twin(capsys):
    assert main(["experiment", "--paper", "anticipation", "--days", "trace_01"]) == 0
    out = capsys.readouterr().out
    assert "(offline stand-in)" not in out and "trace_01 Base8: 1 trial" in out


@pytest.mark.slow  # two whole Table 1 runs (the scripted model's and the stand-in's): about a minute,
@pytest.mark.timeout(600)  # more on a loaded machine (once past the default 120 s at load 15)
def test_bootstrapping_prints_model_standin_and_paper_rows_with_its_cost(copying_server, capsys, tmp_path):
    argv = ["experiment", "--paper", "bootstrapping", "--families", "find", "--test-scenes", "FloorPlan6",
            "--llm", "local", "--base-url", copying_server.base_url, "--workdir", str(tmp_path),
            "--answers", "paper"]  # the paper's request (bounded answers: test_bounded_answers.py)
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line[24:46].strip() in ("action-only", "bootstrapped", "(offline stand-in)",
                                                               "(paper action-only)", "(paper bootstrapped)")]
    assert [line[24:46].strip() for line in rows] == [
        "action-only", "(offline stand-in)", "(paper action-only)",
        "bootstrapped", "(offline stand-in)", "(paper bootstrapped)"]
    # the copying model never names an option: every held-out instance fails with it, not with the stand-in
    assert rows[0].split()[-4] == "0/15" and rows[1].split()[-4] == "15/15"
    model = next(line for line in lines if line.startswith("  local: "))
    standin = next(line for line in lines if line.startswith("  offline stand-in (not a language model): "))
    assert "held-out trials" in model and "s wall" in model and "LLM calls" in model and "cores" in model
    assert "30 held-out trials" in standin
    sent = [r.body for r in copying_server.requests_to(COMPLETIONS)]
    selection = [b for b in sent if "[Possible Options]" in b["prompt"]]
    assert selection and all(b["stop"] == ["[End]", "\n\nAnswer:"] for b in selection)


def test_the_selection_answer_cut_at_end_still_parses():
    from task_learning.productions.prompts import parse_selection

    cut = '[Option Suggestion]\n"motor action: move to Fridge|1"\n\n[Purpose]\nto look inside\n\n'
    answer = parse_selection(cut)
    assert answer is not None and answer.option == "motor action: move to Fridge|1"
    assert answer.purpose == "to look inside"


@pytest.mark.parametrize(("text", "expected"), [
    ("So, I predict the next action as follows: ['move(agent,counter_three)'", "move(agent,counter_three)"),
    ("So, I predict the next action as follows: ['move(agent,counter_three)']", "move(agent,counter_three)"),
    ("Nothing is left for me: [", None),
])
def test_a_base8_answer_cut_at_its_closing_bracket_still_parses(text, expected):
    from task_learning.anticipation.base8 import parse_action

    answer = parse_action(text)
    if expected is None:
        assert answer.no_action
    else:
        assert answer.action is not None and answer.action.text("agent") == expected


def test_the_provider_sends_a_requests_stops_as_they_are():
    """The next-turn stop belongs to the protocols that end there (Base8, anticipation, production
    selection), not to the provider: a protocol sent as the paper has it keeps no stop."""
    from task_learning.llm.base import NEXT_TURN, LLMRequest
    from task_learning.llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="x", completion_model="m",
                              selection_model="m", selection_api="completions", selection_prompt_types=())
    try:
        chat = provider._completion_args(LLMRequest("base8_action", messages=(("system", "s"), ("user", "u")),
                                                    stop=("]", NEXT_TURN)))
        bare = provider._completion_args(LLMRequest("bcr_selection", messages=(("user", "u"),)))
    finally:
        provider.close()
    assert chat["stop"] == ["]", NEXT_TURN] and chat["prompt"].endswith("Answer:")
    assert "stop" not in bare
