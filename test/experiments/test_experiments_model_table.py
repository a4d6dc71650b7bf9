"""`experiment --llm local`: each condition's row from the model, then the offline stand-in's row
for the same condition (run in the same command, labelled as not a language model), then the
paper's; trials, wall times and the machine's load printed; temperature-0 answers shared across
the conditions and counted in each row. A scripted server stands in for llama-server here (fast);
test_llm_local_model.py has the real model."""
from __future__ import annotations

import json
from typing import Any

import pytest

from task_learning.apps.cli import main
from task_learning.experiments.table import STANDIN_LABEL, format_table, format_trials
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.shared_answers import SharedAnswers, SharingProvider
from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply, batch_completion_body

# Every goal request gets the same confident sentence: no branch (every token above 0.9).
_ANSWER = [(" The", -0.01, {}), (" goal", -0.01, {}), (" is", -0.01, {}), (" that", -0.01, {}),
           (" the", -0.01, {}), (" bag", -0.01, {}), (" is", -0.01, {}), (" on", -0.01, {}),
           (" the", -0.01, {}), (" counter", -0.01, {})]


def _answer(body: Any) -> dict[str, Any]:
    prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
    return batch_completion_body([_ANSWER] * len(prompts), model=body.get("model", "m"), layout="llamacpp")


@pytest.fixture
def scripted_server():
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=_answer))
        yield server


def test_each_condition_prints_model_standin_and_paper_rows_with_trials(scripted_server, tmp_path, capsys):
    argv = ["experiment", "--scene", "store_groceries", "--conditions", "ST,STARS+O", "--llm", "local",
            "--base-url", scripted_server.base_url, "--workdir", str(tmp_path), "--decoding", "free"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "LLM: local" in lines[0] and "the server's usage figures" in lines[0]
    labels = [line.strip().split("  ")[0] for line in lines[2:] if line.strip() and not line.startswith("-")]
    assert labels[:9] == ["ST", "(offline stand-in)", "(paper ST)", "STARS+O", "(offline stand-in)",
                          "(paper STARS+O)", "Trial #2", "(offline stand-in)", "(paper Trial #2)"]
    paper_st = next(line for line in lines if "(paper ST)" in line)
    assert "96" in paper_st.split() and "66.7" in paper_st.split()
    trials = {line.split(":")[0].strip(): line for line in lines if line.startswith("  ") and ": 1 trial" in line}
    assert set(trials) == {"ST", "STARS+O", "Trial #2"}
    assert "s wall" in trials["ST"] and "on " in trials["ST"] and "cores" in trials["ST"]
    # STARS+O asks ST's root prompts again: answered by ST's answers, still counted in its row.
    assert "answered by an earlier row" in trials["STARS+O"]
    assert any(line.startswith("Model: local: the llama-server at") and "load average" in line for line in lines)
    assert any("NOT a language model" in line for line in lines)


def test_json_carries_the_standin_and_paper_rows_and_the_shared_calls(scripted_server, tmp_path, capsys):
    argv = ["experiment", "--scene", "store_groceries", "--conditions", "ST,STS", "--llm", "local",
            "--base-url", scripted_server.base_url, "--workdir", str(tmp_path), "--json", "--decoding", "free"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["llm"] == "local" and data["machine"]["cores"] >= 1 and data["wall_s"] > 0
    assert "NOT a language model" in data["note"]
    st, sts = data["rows"]
    assert [st["condition"], sts["condition"]] == ["ST", "STS"]  # no +O condition: no Trial #2
    for row in (st, sts):
        assert row["trials"] == 1 and row["wall_s"] >= 0
        assert row["offline_standin"]["trials"] == 1 and "calls_shared" not in row["offline_standin"]
        assert row["paper"]["retrieved"] in (96, 99)
    # ST paid for every root prompt; STS sent the same ones and got ST's answers.
    assert st["calls_shared"] == 0 and st["calls_to_model"] > 0
    assert sts["calls_shared"] >= st["calls_to_model"] and sts["prompt_tokens"] >= st["prompt_tokens"]


def test_local_model_prints_free_and_grounded_rows_of_each_condition_together(scripted_server, tmp_path, capsys):
    """--llm local (decoding auto): the papers' protocol and grounded decoding, one under the other,
    then the stand-in's and the paper's rows; every grounded request carried a grammar."""
    argv = ["experiment", "--scene", "store_groceries", "--conditions", "ST", "--llm", "local",
            "--base-url", scripted_server.base_url, "--workdir", str(tmp_path)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = [line.strip().split("  ")[0] for line in lines[2:] if line.strip() and not line.startswith("-")]
    assert labels[:4] == ["ST", "ST grounded", "(offline stand-in)", "(paper ST)"]
    bodies = [request.body for request in scripted_server.received if isinstance(request.body, dict)]
    grounded = [b for b in bodies if "grammar" in b]
    assert grounded and all("root ::=" in b["grammar"] for b in grounded)
    assert any("grammar" not in b for b in bodies)  # the free rows sent none


def test_offline_experiment_prints_no_standin_twin(tmp_path, capsys):
    assert main(["experiment", "--scene", "store_groceries", "--conditions", "ST", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert STANDIN_LABEL.strip() not in out and "ST: 1 trial" in out and "to the model" not in out


def test_format_table_puts_the_standin_between_the_row_and_the_paper():
    rows = [("STARS", {"completion": 11.1, "retrieved": 120, "words": 28}),
            ("Trial #2", {"completion": 100.0, "words": 2})]
    standin = {"STARS": {"completion": 94.4, "retrieved": 150, "words": 28}}
    text = format_table("store_groceries", rows, llm="local", standin=standin).splitlines()
    body = [line for line in text[3:]]
    assert body[0].startswith("STARS") and "11.1" in body[0]
    assert body[1].startswith(STANDIN_LABEL) and "94.4" in body[1]
    assert body[2].strip().startswith("(paper STARS)") and "171" in body[2]
    assert body[3].startswith("Trial #2") and body[4].strip().startswith("(paper Trial #2)")  # no stand-in row given
    trials = format_trials([("STARS", {"wall_s": 61.25, "trials": 1, "usage": {"calls": 1234},
                                       "calls_shared": 34, "calls_to_model": 1200,
                                       "machine": {"cores": 2, "load_1min_min": 1.0, "load_1min_mean": 2.5,
                                                   "load_1min_max": 4.0}})])
    assert "STARS: 1 trial, 61.2 s wall, 1,234 LLM calls (1,200 to the model, 34 answered" in trials
    assert "load 1.0/2.5/4.0 on 2 cores" in trials


class _Counting:
    name, model = "counting", "m"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self.prompts.append(request.prompt)
        return LLMResponse(text=f"answer {len(self.prompts)}", prompt_tokens=7, completion_tokens=2)

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        return [self.complete(r, timeout_s) for r in requests]


def test_only_temperature_zero_answers_are_shared_and_they_keep_their_token_counts():
    shared, first, second = SharedAnswers(), _Counting(), _Counting()
    one, two = SharingProvider(first, shared), SharingProvider(second, shared)
    cold = LLMRequest("initial", prompt="p", context={"condition": "ST"})
    same_prompt_other_context = LLMRequest("initial", prompt="p", context={"condition": "STARS"})
    hot = LLMRequest("initial", prompt="p", temperature=0.5)
    assert one.complete(cold, 1).text == "answer 1"
    answer = two.complete(same_prompt_other_context, 1)  # the server reads the prompt, not the context
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ("answer 1", 7, 2)
    assert two.complete(hot, 1).text == "answer 1" and second.prompts == ["p"]  # temperature 0.5: asked anew
    assert two._complete_batch([cold, LLMRequest("initial", prompt="q")], 1)[1].text == "answer 2"
    assert (one.asked, one.served, two.asked, two.served) == (1, 0, 2, 2)


def test_the_model_is_named_with_its_size():
    from task_learning.experiments.table import describe_model

    text = describe_model("local", {})
    assert "Gemma 3 270M base" in text and "Q4_K_M" in text and "253 MB" in text
    assert describe_model("local", {"base_url": "http://127.0.0.1:9/v1"}).startswith("local: the llama-server at")


def test_a_list_of_prompts_gets_a_deadline_that_grows_with_its_length():
    from task_learning.llm.local_provider import local_provider
    from task_learning.llm.settings import load_llm_settings

    settings = load_llm_settings().local
    provider = local_provider(settings, {}, {"base_url": "http://127.0.0.1:9/v1"})
    try:
        assert provider.list_deadline(settings.timeout_s, 1) == settings.timeout_s
        assert provider.list_deadline(settings.timeout_s, 32) == settings.timeout_s + 31 * settings.timeout_per_prompt_s
    finally:
        provider.close()


def test_a_call_gets_a_deadline_that_grows_with_its_max_tokens(monkeypatch):
    """A base model often generates all of max_tokens: 900 tokens at 6 tokens/s (a loaded core)
    is 150 s, past the flat 120 s, and a call cut at its deadline is sent again from the start."""
    from task_learning.llm.base import LLMRequest, LLMResponse
    from task_learning.llm.local_provider import local_provider
    from task_learning.llm.openai_provider import OpenAIProvider
    from task_learning.llm.settings import load_llm_settings

    settings = load_llm_settings().local
    provider = local_provider(settings, {}, {"base_url": "http://127.0.0.1:9/v1"})
    seen: list[float] = []

    def answer(self, request, timeout_s):
        seen.append(timeout_s)
        return LLMResponse(text="ok")

    monkeypatch.setattr(OpenAIProvider, "complete", answer)
    try:
        provider.complete(LLMRequest(prompt_type="production_selection", prompt="p", max_tokens=900), 120.0)
        provider.complete(LLMRequest(prompt_type="world_statement", prompt="p", max_tokens=5), 120.0)
    finally:
        provider.close()
    assert seen == [120.0 + 900 * settings.timeout_per_token_s, 120.0 + 5 * settings.timeout_per_token_s]
    assert seen[0] > 900 / 6.0  # the measured 6 tokens/s fits
