"""Bounded answers for a base model (llm/answer_bounds.py): the cue, the stops and the max_tokens a
request carries under `--answers bounded` (the default with `--llm local`), what the parser reads
back, the paper's values under `--answers paper`; and `experiment --paper llm-state` on a subset,
the model's rows beside the offline stand-in's and the paper's. A scripted server stands in for
llama-server (fast)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from task_learning.apps.cli import main
from task_learning.llm.answer_bounds import bound_for, load_bounds, resolve
from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply, completion_body


def _text_reply(text: str) -> ScriptedReply:
    return ScriptedReply(body=lambda body: completion_body([(text, -0.1, {})], model=body.get("model", "m"),
                                                           with_logprobs=False))


@pytest.fixture
def server():
    with FakeOpenAIServer() as fake:
        yield fake


def test_auto_is_bounded_for_the_local_model_only():
    assert resolve("auto", "local") == "bounded"
    assert resolve("auto", "offline") == "paper" and resolve("auto", "openai") == "paper"
    assert resolve("paper", "local") == "paper"
    with pytest.raises(ValueError, match="answers"):
        resolve("short", "local")
    assert bound_for("bcr_selection", "paper") is None


def test_a_bound_adds_its_cue_and_the_parser_reads_the_cues_last_line_with_the_answer():
    bounds = load_bounds()
    assert set(bounds) == {"bcr_selection", "llm_state_attention", "llm_state_estimator", "llm_state_policy",
                           "llm_state_progprompt", "production_selection", "production_english", "production_rule",
                           "production_revision"}
    estimator = bounds["llm_state_estimator"]
    assert estimator.prompt("PROMPT").endswith("PROMPT\n\nAnswer:\nupdate_")
    assert estimator.answer('state("cup1", "in_hand")') == 'update_state("cup1", "in_hand")'
    attention = bounds["llm_state_attention"]
    assert attention.prompt("P", goal="open the fridge").endswith("\n\nTask goal: open the fridge\n")
    assert attention.answer('add_related_objects("fridge1")', goal="open the fridge") == 'add_related_objects("fridge1")'
    for bound in bounds.values():
        assert bound.stop and 0 < bound.max_tokens <= 200


def _bcr(server: FakeOpenAIServer, *extra: str, capsys: Any) -> dict[str, Any]:
    argv = ["bcr", "--task", "make_coffee", "--engine", "llm", "--llm", "local", "--base-url", server.base_url,
            "--trials", "1", "--mode", "paper", "--max-actions", "2", "--json", *extra]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_bcr_bounded_request_ends_at_the_lines_end_and_a_listed_answer_is_taken(server, capsys):
    server.set_default(COMPLETIONS, _text_reply(" putObject(Mug|1, CoffeeMachine|1)"))
    data = _bcr(server, capsys=capsys)
    assert data["summary"]["answers"] == "bounded"
    first = server.requests_to(COMPLETIONS)[0].body
    assert first["prompt"].endswith("copy one action exactly.\n\nSelected action:\n-") or \
        first["prompt"].endswith("$$ <selected action> $$.\n\nSelected action:\n-")
    assert first["stop"] == ["\n"] and first["max_tokens"] == 48
    answer = data["trials"][0]["model_answers"][0]
    assert answer["read"] == "putObject(Mug|1, CoffeeMachine|1)"
    assert answer["accepted"] == "PutObject(Mug|1, CoffeeMachine|1)"  # case and spacing are ignored
    assert data["trials"][0]["action_log"][0].startswith("PutObject(Mug|1, CoffeeMachine|1)")


def test_bcr_an_answer_outside_the_list_is_asked_again_then_the_paper_trial_ends(server, capsys):
    server.set_default(COMPLETIONS, _text_reply(" PickObject(Mug|1)"))
    trial = _bcr(server, capsys=capsys)["trials"][0]
    assert trial["failure"] == "invalid_answer" and trial["llm_requests"] == 6
    assert [a["accepted"] for a in trial["model_answers"]] == [None] * 6
    sent = [r.body["prompt"] for r in server.requests_to(COMPLETIONS)]
    assert "Your last choice 'PickObject(Mug|1)' was not in the list" in sent[-1]


def test_bcr_paper_answers_keep_the_papers_request(server, capsys):
    server.set_default(COMPLETIONS, _text_reply(" $$ PutObject(Mug|1, CoffeeMachine|1) $$"))
    data = _bcr(server, "--answers", "paper", capsys=capsys)
    assert data["summary"]["answers"] == "paper"
    first = server.requests_to(COMPLETIONS)[0].body
    assert first["prompt"].endswith("$$ <selected action> $$.\n\nAnswer:")
    assert first["max_tokens"] == 300 and "stop" not in first
    assert data["trials"][0]["model_answers"][0]["accepted"] == "PutObject(Mug|1, CoffeeMachine|1)"


def _llm_state_reply(body: Any) -> dict[str, Any]:
    """A plan of one move on the first policy call, an empty plan after it; nothing else."""
    prompt = body["prompt"]
    text = ""
    if prompt.endswith("Low-level Action Plan:\n") and '"[\'move\', \'fridge1\']' not in prompt:
        text = "1. move(fridge1)"
    return completion_body([(text, -0.1, {})], model=body.get("model", "m"), with_logprobs=False)


def test_llm_state_experiment_subset_prints_model_standin_and_paper_rows(server, capsys):
    server.set_default(COMPLETIONS, ScriptedReply(body=_llm_state_reply))
    argv = ["experiment", "--paper", "llm-state", "--llm", "local", "--base-url", server.base_url,
            "--tasks", "open_fridge", "--maps", "map1", "--runs", "1", "--methods", "no_states,ours"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "answers: bounded" in lines[0]
    at = next(i for i, line in enumerate(lines) if line.startswith("  open the fridge"))
    assert lines[at + 1].strip().startswith("(offline stand-in)") and lines[at + 2].strip().startswith("(paper)")
    assert "5/5   4.0" in lines[at + 2]  # Table I's w/o States cell
    assert not any(line.startswith("  put a book") for line in lines)  # only the task asked for
    runs = [line for line in lines if line.startswith("  Ours:") or line.startswith("  w/o States:")]
    assert len(runs) == 2 and all("s wall" in r and "LLM calls" in r and "cores" in r for r in runs)
    assert any("Held-out runs left out" in line for line in lines)
    assert any("NOT a language model" in line for line in lines)
    policy = [r.body for r in server.requests_to(COMPLETIONS) if r.body["prompt"].endswith("Low-level Action Plan:\n")]
    assert policy and all(b["max_tokens"] == 160 and "\n\n" in b["stop"] for b in policy)


def test_llm_state_experiment_json_carries_standin_trials_and_answers(server, capsys):
    server.set_default(COMPLETIONS, ScriptedReply(body=_llm_state_reply))
    argv = ["experiment", "--paper", "llm-state", "--llm", "local", "--base-url", server.base_url,
            "--tasks", "open_fridge", "--maps", "map1", "--runs", "1", "--methods", "ours", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answers"] == "bounded" and data["tasks"] == ["open_fridge"]
    assert [row["task"] for row in data["table_i"]] == ["open_fridge"]
    assert data["table_i"][0]["ours"]["paper"] == {"sr": "5/5", "as": 4.4}
    assert data["offline_standin"]["table_i"][0]["ours"]["sr"] == "1/1"
    trials = data["trials"]["ours"]
    assert trials["runs"] == 1 and trials["llm_calls"] >= 2 and trials["cores"] >= 1
    run = data["model_answers"][0]
    assert run["method"] == "ours" and run["answers"][0]["call"] == "llm_state_attention"
    assert any(a["answer"] == "1. move(fridge1)" for a in run["answers"])
    assert run["actions"][0].startswith("['move', 'fridge1']")
    assert "NOT a language model" in data["note"] and data["heldout"] == {}


@pytest.mark.parametrize("argv, message", [
    (["--tasks", "fly_to_mars"], "--tasks: unknown task(s) fly_to_mars"),
    (["--maps", "map9"], "--maps: unknown map(s) map9"),
])
def test_llm_state_experiment_unknown_subset_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["experiment", "--paper", "llm-state", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_subset_options_belong_to_llm_state(capsys):
    assert main(["experiment", "--tasks", "open_fridge"]) == 2
    assert "applies to --paper llm-state and --paper bcr only" in capsys.readouterr().err
    assert main(["experiment", "--answers", "paper"]) == 2
    assert "--answers applies to --paper llm-state, bcr and bootstrapping only" in capsys.readouterr().err


def test_llm_state_command_bounds_its_calls_with_the_local_model(server, capsys):
    server.set_default(COMPLETIONS, ScriptedReply(body=_llm_state_reply))
    argv = ["llm-state", "--scene", "map1", "--task", "open_fridge", "--method", "no_states", "--llm", "local",
            "--base-url", server.base_url, "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["answers"] == "bounded"
    first = server.requests_to(COMPLETIONS)[0].body
    assert first["prompt"].endswith("\n\nLow-level Action Plan:\n") and first["max_tokens"] == 160


SELECTION_CUE = "\n\nAnswer:\n[Possible Options: the one suggested]\n*"


def _selection_reply(option: str) -> ScriptedReply:
    """`option` to a bounded production-selection request, nothing to anything else."""
    def body(request: Any) -> dict[str, Any]:
        text = f" {option}" if request["prompt"].endswith(SELECTION_CUE) else ""
        return completion_body([(text, -0.1, {})], model=request.get("model", "m"), with_logprobs=False)
    return ScriptedReply(body=body)


def _bootstrap(server: FakeOpenAIServer, tmp_path: Any, *extra: str, capsys: Any) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)  # --db never creates its folder (issue 40)
    argv = ["bootstrap", "--families", "explore", "--max-instances", "1", "--llm", "local", "--base-url",
            server.base_url, "--db", str(tmp_path / "kb.sqlite"), "--json", *extra]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_bootstrap_bounded_selection_opens_the_option_list_and_reads_the_line_as_the_option(server, tmp_path, capsys):
    server.set_default(COMPLETIONS, _selection_reply("special action: 'done'"))
    data = _bootstrap(server, tmp_path, capsys=capsys)
    assert data["answers"] == "bounded"
    explore = data["families"][0]
    assert explore["instances"] == 1 and explore["llm_decisions"] == 1  # one answer, parsed: no re-ask
    sent = [r.body for r in server.requests_to(COMPLETIONS)]
    selection = [b for b in sent if b["prompt"].endswith(SELECTION_CUE)]
    assert len(selection) == 1
    assert selection[0]["stop"] == ["\n", "[End]"] and selection[0]["max_tokens"] == 96
    assert "[Possible Options]\n* motor action: move to " in selection[0]["prompt"]
    english = [b for b in sent if b not in selection]  # the production the choice is turned into
    assert english and english[0]["max_tokens"] == 96 and english[0]["stop"] == ["\n"]
    assert english[0]["prompt"].endswith(ENGLISH_CUE)
    assert '[Option Suggestion]\n* special action: \'done\'' in english[0]["prompt"]
    assert len(sent) == 2  # the model's empty rule sentence ends the production there: no rule is asked for


ENGLISH_CUE = "\n\nAnswer:\n[Generalized Rule]\nIF the current task is"
RULE_CUE = '\n\nAnswer:\n[Rule Implementation]\n```json\n{"name": "'


def _production_replies(english: str, rule: str) -> ScriptedReply:
    """done to the selection, `english` to the English-rule cue, `rule` to the rule and revision cues."""
    def body(request: Any) -> dict[str, Any]:
        prompt = request["prompt"]
        text = (" special action: 'done'" if prompt.endswith(SELECTION_CUE) else english if prompt.endswith(ENGLISH_CUE)
                else rule if prompt.endswith(RULE_CUE) else "")
        return completion_body([(text, -0.1, {})], model=request.get("model", "m"), with_logprobs=False)
    return ScriptedReply(body=body)


def test_bootstrap_bounded_rule_answers_are_one_line_each_and_a_rule_that_replays_is_learned(server, tmp_path, capsys):
    server.set_default(COMPLETIONS, _production_replies(
        " explore <receptacle> THEN choose special action: done.",
        'explore-done", "task": "explore <receptacle>", "conditions": [], "effect": "special action: done"}\n'
        'and then the model goes on writing'))
    data = _bootstrap(server, tmp_path, capsys=capsys)
    assert [p["task"] for p in data["productions"]] == ["explore <receptacle>"]
    assert data["productions"][0]["english"] == ("IF the current task is explore <receptacle> THEN choose special "
                                                 "action: done.")
    sent = [r.body for r in server.requests_to(COMPLETIONS)]
    rule = [b for b in sent if b["prompt"].endswith(RULE_CUE)]
    assert len(rule) == 1 and rule[0]["stop"] == ["```", "\n\n"] and rule[0]["max_tokens"] == 200
    assert "[Generalized Rule]\nIF the current task is explore <receptacle> THEN choose special action: done." in \
        rule[0]["prompt"]  # the English answer as the parser read it, heading and all


def test_bootstrap_a_copied_instruction_is_no_rule_and_a_bad_rule_is_revised_then_dropped(server, tmp_path, capsys):
    server.set_default(COMPLETIONS, _production_replies(" ... AND ... THEN choose ...", ""))
    assert _bootstrap(server, tmp_path, capsys=capsys)["productions"] == []
    assert not [r for r in server.requests_to(COMPLETIONS) if r.body["prompt"].endswith(RULE_CUE)]
    server.set_default(COMPLETIONS, _production_replies(
        " explore <receptacle> THEN choose special action: done.",
        'SinkBasin", "task": "explore <receptacle>", "condition": "a sink"}, {"name": "x"}'))
    data = _bootstrap(server, tmp_path / "second", capsys=capsys)
    assert data["productions"] == []
    revisions = [r.body["prompt"] for r in server.requests_to(COMPLETIONS) if r.body["prompt"].endswith(RULE_CUE)
                 and "[Your Rule Return]" in r.body["prompt"]]
    assert len(revisions) == 3  # --max-revisions' default, each told what was wrong with the first object
    assert all("unknown field(s) condition" in p for p in revisions)


def test_bootstrap_a_line_that_is_no_option_is_asked_again_twice(server, tmp_path, capsys):
    server.set_default(COMPLETIONS, _selection_reply("(0.0 meters away) Sink|-01.90|+00.97|-01.50|SinkBasin"))
    explore = _bootstrap(server, tmp_path, capsys=capsys)["families"][0]
    assert explore["instances"] == 1 and explore["learned"] == []
    sent = [r.body["prompt"] for r in server.requests_to(COMPLETIONS)]
    assert len(sent) == 3 and all(p.endswith(SELECTION_CUE) for p in sent)
    assert "'(0.0 meters away) Sink|-01.90|+00.97|-01.50|SinkBasin' is not one of the possible options" in sent[-1]


def test_bootstrap_paper_answers_keep_the_papers_request(server, tmp_path, capsys):
    server.set_default(COMPLETIONS, _selection_reply("unused"))
    data = _bootstrap(server, tmp_path, "--answers", "paper", capsys=capsys)
    assert data["answers"] == "paper"
    first = server.requests_to(COMPLETIONS)[0].body
    assert first["prompt"].endswith("[Blacklisted Options]\n* attend to subtask: explore Sink|-01.90|+00.97|-01.50|"
                                    "SinkBasin\n\nAnswer:")  # the flattened conversation, no cue
    assert first["max_tokens"] == 900 and first["stop"] == ["[End]", "\n\nAnswer:"]


def test_the_offline_standin_bootstraps_the_same_under_either_answers(tmp_path, capsys):
    runs = []
    for answers in ("paper", "bounded"):
        argv = ["bootstrap", "--families", "explore", "--max-instances", "1", "--db", str(tmp_path / f"{answers}.sqlite"),
                "--answers", answers, "--json"]
        assert main(argv) == 0
        data = json.loads(capsys.readouterr().out)
        # what it chose and learned; its token count is the prompt's length, longer by the cue
        runs.append(([{k: v for k, v in f.items() if k != "tokens"} for f in data["families"]], data["productions"]))
    assert runs[0] == runs[1] and runs[0][1]


def test_a_knowledge_base_bootstrapped_without_a_production_is_tested_as_it_is(server, tmp_path, capsys):
    """A model that learned nothing still bootstrapped: `experiment --db` tests it and does not bootstrap again."""
    server.set_default(COMPLETIONS, _production_replies("", ""))
    assert _bootstrap(server, tmp_path, capsys=capsys)["productions"] == []
    calls = len(server.requests_to(COMPLETIONS))
    argv = ["experiment", "--paper", "bootstrapping", "--families", "find", "--llm", "local", "--base-url",
            server.base_url, "--db", str(tmp_path / "kb.sqlite"), "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bootstrap"] == [] and data["productions"] == 0
    explore = data["bootstrapped_in_kb"]["explore"]
    assert explore["instances"] == 1 and explore["learned"] == 0 and explore["answers"] == "bounded"
    assert {r["agent"] for r in data["trials"]} == {"action-only", "bootstrapped"} and len(data["trials"]) == 30
    held_out = [r.body["prompt"] for r in server.requests_to(COMPLETIONS)][calls:]
    assert held_out and not any("[Current Task] explore" in p for p in held_out)  # no bootstrap instance again
    assert main(["kb", "show", "--db", str(tmp_path / "kb.sqlite")]) == 0
    shown = capsys.readouterr().out
    assert "explore: 1 instances, 1 LLM decisions, 0 productions learned, not converged (llm local, answers bounded" \
        in shown


def test_bootstrap_grounded_answers_carry_their_grammars(server, tmp_path, capsys):
    """--decoding grounded (auto with --llm local): the selection may be only a listed option that
    is not blacklisted, or done/quit; the English rule the asked form with a family's task pattern;
    the rule the rule language's JSON object."""
    server.set_default(COMPLETIONS, _production_replies(
        " explore <receptacle> THEN choose special action: done",
        'explore-done", "task": "explore <receptacle>", "conditions": [], "effect": "special action: done"}'))
    data = _bootstrap(server, tmp_path, capsys=capsys)
    assert [p["task"] for p in data["productions"]] == ["explore <receptacle>"]
    sent = [r.body for r in server.requests_to(COMPLETIONS)]
    selection = next(b for b in sent if b["prompt"].endswith(SELECTION_CUE))
    english = next(b for b in sent if b["prompt"].endswith(ENGLISH_CUE))
    rule = next(b for b in sent if b["prompt"].endswith(RULE_CUE))
    assert '"motor action: " ("move to ' in selection["grammar"] and "done'" in selection["grammar"]
    assert '"explore <receptacle>"' in english["grammar"] and '" THEN choose "' in english["grammar"]
    assert '\\"task\\": \\""' in rule["grammar"] and '"explore <receptacle>"' in rule["grammar"]
    free = _bootstrap(server, tmp_path / "free", "--decoding", "free", capsys=capsys)
    assert free["productions"] and "grammar" not in server.requests_to(COMPLETIONS)[-1].body


def test_llm_state_grounded_policy_may_name_only_primitives_on_observed_objects(server, capsys):
    server.set_default(COMPLETIONS, ScriptedReply(body=_llm_state_reply))
    argv = ["llm-state", "--scene", "map1", "--task", "open_fridge", "--method", "no_states", "--llm", "local",
            "--base-url", server.base_url, "--json"]
    assert main(argv) == 0
    first = server.requests_to(COMPLETIONS)[0].body
    grammar = first["grammar"]
    assert grammar.startswith('root ::= step ("\\n" step){0,11}')  # 12 lines end before 160 tokens
    assert '"placein(" obj ", " obj ")"' in grammar and '"wait()"' in grammar
    objects = grammar.split("obj ::= ", 1)[1]
    assert '"sink1"' not in objects  # the template example's object: map1 has none
    assert main(argv + ["--decoding", "free"]) == 0
    assert "grammar" not in server.requests_to(COMPLETIONS)[-1].body
