"""LLM-State core: the strict parser, the open state's rules, the household world, the loop's
handling of bad answers, and every method on every task deterministically (offline model)."""
from __future__ import annotations

from pathlib import Path

import pytest

from task_learning.errors import ConfigError, TaskLearningError
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import make_client
from task_learning.llm_state.agent import METHODS, LLMStateAgent, run_trial
from task_learning.llm_state.calls import Call, parse_estimator, parse_plan
from task_learning.llm_state.household import HouseholdWorld, load_household
from task_learning.llm_state.state import OpenState, split_attributes

HOUSE = load_household()


# ----------------------------------------------------------------------------- parser
def test_parser_reads_numbered_calls_with_comments_and_quotes():
    parsed = parse_plan("Low-level Action Plan:\n1. move(fridge1)\n2) open('fridge1')  (it is closed)\n"
                        "3. placein(milk1, \"microwave1\")\n- wait()\n")
    assert [c.render() for c in parsed.calls] == ["move(fridge1)", "open(fridge1)", "placein(milk1, microwave1)",
                                                  "wait()"]
    assert parsed.dropped == []


@pytest.mark.parametrize("line, reason", [
    ("1. fly(kitchen1)", "unknown function 'fly'"),
    ("2. placein(milk1)", "placein takes 2 argument(s), got 1"),
    ("3. move(__import__('os').system('ls'))", "unexpected '(' in the arguments"),
    ("4. move(fridge1", "missing ')'"),
    ("5. move('fridge1)", "unterminated string"),
    ("6. move(a + b)", "unexpected '+' in the arguments"),
    ("8. move(desk1), pickup(book1)", "more than one call on a line"),
])
def test_parser_drops_malformed_calls_with_a_reason(line, reason):
    parsed = parse_plan(f"Low-level Action Plan:\n{line}\n7. wait()")
    assert parsed.calls == [Call("wait", ())]
    assert parsed.dropped == [(line, reason)]


def test_parser_never_evaluates_and_prose_is_not_a_dropped_call():
    parsed = parse_plan("I think the robot should first look around.\nSure!")
    assert parsed.calls == [] and parsed.dropped == []
    parsed = parse_estimator('update_state("a", "x")\nadd_attribute("b", "y | z")\ngenerate_summary("s")')
    assert [c.name for c in parsed.calls] == ["update_state", "update_state", "update_reasoning"]


def test_parser_survives_garbage():
    garbage = ["\x00move(a)", "move(" + "x" * 50000 + ")", "move('" + "y" * 30000 + "')", "((((((", "move(\u201ca\u201d)",
               "switchoff(lightswitch1); import os", "placein(a, b, c)", "1. wait() # done", "open(\u2018fridge1\u2019)"]
    parsed = parse_plan("\n".join(garbage))
    assert [c.render() for c in parsed.calls] == ["move(a)", "switchoff(lightswitch1)", "wait()", "open(fridge1)"]
    assert [reason for _line, reason in parsed.dropped] == [
        "no function call", "argument too long", "argument too long", "no function call",
        "placein takes 2 argument(s), got 3"]


def test_split_attributes():
    assert split_attributes("closed | in_kitchen") == ["closed", "in_kitchen"]
    assert split_attributes("[]") == [] and split_attributes("['on', 'hot']") == ["on", "hot"]


# ----------------------------------------------------------------------------- state
def test_attention_is_add_only_and_refuses_unobserved_names():
    state = OpenState()
    report = state.add_key_objects([Call("add_related_objects", ("fridge1",)),
                                    Call("add_related_objects", ("unicorn1",))], {"fridge1"})
    assert state.key_objects == ["fridge1"] and report.rejected == ["unicorn1: never observed"]
    state.add_key_objects([Call("add_related_objects", ("milk1",))], {"fridge1", "milk1"})
    assert state.key_objects == ["fridge1", "milk1"]


def test_rebuild_starts_from_scratch_and_refuses_unobserved_objects():
    state = OpenState(key_objects=["fridge1", "milk1"])
    state.rebuild([Call("update_state", ("fridge1", "open")), Call("update_state", ("milk1", "in_hand"))],
                  {"fridge1", "milk1"})
    report = state.rebuild([Call("update_state", ("fridge1", "closed")), Call("update_state", ("ghost9", "on")),
                            Call("update_reasoning", ("r",))], {"fridge1", "milk1", "kitchen1"})
    assert state.entries == {"fridge1": ["closed"], "milk1": []}  # milk1's old value did not carry over
    assert report.rejected == ["ghost9: never observed"]
    assert state.summary == "r"


# ----------------------------------------------------------------------------- world
def _world(task: str = "heat_milk", map_name: str = "map1", hands: int = 2) -> HouseholdWorld:
    return HouseholdWorld(HOUSE, map_name, HOUSE.task(task), hands=hands)


def _run(world: HouseholdWorld, *steps: str) -> list[bool]:
    out = []
    for step in steps:
        name, _, rest = step.partition("(")
        args = tuple(a.strip() for a in rest.rstrip(")").split(",") if a.strip())
        out.append(world.execute(Call(name, args)).success)
    return out


def test_closed_containers_hide_contents_until_opened():
    world = _world()
    assert world.observe().room == "bedroom1" and "milk1" not in world.observe().known
    assert _run(world, "move(kitchen1)") == [True]
    assert "fridge1" in world.observe().known and "milk1" not in world.observe().known
    assert _run(world, "move(milk1)") == [False]  # never seen
    assert _run(world, "move(fridge1)", "open(fridge1)") == [True, True]
    assert "milk1" in world.observe().known


def test_microwave_heats_only_when_closed_and_hands_block_switches():
    world = _world()
    ok = _run(world, "move(kitchen1)", "move(fridge1)", "open(fridge1)", "pickup(milk1)", "move(microwave1)",
              "open(microwave1)", "placein(milk1, microwave1)", "switchon(microwave1)", "close(microwave1)",
              "switchon(microwave1)")
    assert ok == [True] * 7 + [False, True, True]
    assert world.check(HOUSE.task("heat_milk"))
    one_hand = _world(hands=1)
    ok = _run(one_hand, "move(kitchen1)", "move(fridge1)", "open(fridge1)", "pickup(milk1)", "move(microwave1)",
              "open(microwave1)")
    assert ok == [True] * 5 + [False]  # one hand holds the milk: it cannot open the microwave


def test_toaster_takes_one_slice_and_interaction_needs_closeness():
    world = _world("make_toast")
    ok = _run(world, "move(kitchen1)", "pickup(breadslice1)", "move(breadslice1)", "pickup(breadslice1)",
              "pickup(breadslice2)", "move(toaster1)", "placein(breadslice1, toaster1)",
              "placein(breadslice2, toaster1)", "switchon(toaster1)")
    assert ok == [True, False, True, True, True, True, True, False, True]
    assert world.check(HOUSE.task("make_toast"))


def test_special_tasks_make_objects_ungraspable():
    world = _world("two_toasts_ungraspable")
    assert _run(world, "move(kitchen1)", "move(breadslice1)", "pickup(breadslice1)", "pickup(breadslice3)") == [
        True, True, False, True]


def test_bad_household_config_names_file_and_key(tmp_path: Path):
    folder = tmp_path / "llm_state"
    folder.mkdir()
    source = Path(__file__).resolve().parents[2] / "config" / "llm_state"
    (folder / "tasks.yaml").write_text((source / "tasks.yaml").read_text())
    (folder / "households.yaml").write_text(
        "classes: {fridge: {container: true}}\nmaps:\n  m:\n    rooms: [kitchen1]\n    start: kitchen1\n"
        "    objects:\n      - {name: fridge1, room: kitchen1}\n      - {name: milk1, in: fridge1}\n")
    with pytest.raises(ConfigError, match=r"households.yaml: maps.m.objects\[1\].name: unknown class 'milk'"):
        load_household(folder)
    with pytest.raises(TaskLearningError, match="unknown map"):
        HOUSE.map("map9")


# ----------------------------------------------------------------------------- the loop
class Scripted:
    """A client answering each prompt type from a list of texts (the last one repeats)."""

    def __init__(self, **answers: list[str]) -> None:
        self.answers = answers
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        key = request.prompt_type.replace("llm_state_", "")
        texts = self.answers.get(key, [""])
        text = texts.pop(0) if len(texts) > 1 else texts[0]
        return LLMResponse(text=text, prompt_tokens=10, completion_tokens=2)


def _agent_run(client: Scripted, task: str = "open_fridge", method: str = "ours"):
    return LLMStateAgent(client, method).run(_world(task), HOUSE.task(task))


def test_an_answer_without_a_parseable_call_ends_the_run_with_a_reason():
    result = _agent_run(Scripted(policy=["Low-level Action Plan:\n1. teleport(fridge1)\n2. open fridge1()"]))
    assert result.end_reason.startswith("no_parseable_plan")
    assert result.dropped_calls == 2 and result.dropped["policy"] == 2 and result.steps == 0


def test_a_failed_policy_call_ends_the_run_as_an_llm_error():
    class Failing(Scripted):
        def complete(self, request: LLMRequest) -> LLMResponse:
            self.requests.append(request)
            return LLMResponse(text="", error="openai: connection refused")

    result = _agent_run(Failing())
    assert result.end_reason == "llm_error: the policy call failed" and result.llm_errors == 2
    assert result.steps == 0 and not result.success


def test_a_plan_longer_than_twenty_steps_is_cut_and_counted():
    plan = "Low-level Action Plan:\n" + "\n".join(f"{i}. wait()" for i in range(1, 26))
    result = _agent_run(Scripted(policy=[plan, ""]))
    assert result.steps == 20 and result.dropped["plan_too_long"] == 5
    assert result.end_reason.startswith("policy_done")


def test_calls_on_unknown_objects_fail_count_and_replan():
    result = _agent_run(Scripted(policy=["1. move(kitchen1)\n2. move(fridge7)\n3. open(fridge7)",
                                         "1. move(fridge1)\n2. open(fridge1)", ""]))
    assert result.unknown_object_calls == 1 and result.replans == 1
    assert result.success and result.steps == 4


def test_estimator_naming_unobserved_objects_is_dropped_and_counted():
    client = Scripted(attention=['add_related_objects("fridge1")\nadd_related_objects("dragon1")'],
                      estimator=['update_state("ghost1", "on")\nupdate_state("fridge1", "open")\nupdate_reasoning("ok")'],
                      policy=["1. move(kitchen1)", "1. move(fridge1)\n2. open(fridge1)", ""])
    result = _agent_run(client)
    assert result.success
    assert result.dropped["attention"] >= 1 and result.dropped["estimator"] >= 1
    assert result.state["objects"] == {"fridge1": ["open"]}


def test_windowed_mode_bounds_the_estimator_history_and_keeps_the_previous_state():
    client = Scripted(attention=['add_related_objects("fridge1")'],
                      estimator=['update_state("fridge1", "closed")\nupdate_reasoning("r")'],
                      policy=["1. wait()"])
    agent = LLMStateAgent(client, "ours", history_window=3)
    agent.run(_world("open_fridge", "map2"), HOUSE.task("open_fridge"), cap=6)  # starts in the kitchen
    estimates = [r for r in client.requests if r.prompt_type == "llm_state_estimator"]
    assert [len(r.context["history"]) for r in estimates] == [1, 2, 3, 3, 3]
    assert "previous_state" not in estimates[2].context
    assert estimates[3].context["previous_state"]["objects"] == {"fridge1": ["closed"]}
    assert "fridge1: closed" in estimates[3].prompt and "latest robot actions" in estimates[3].prompt
    with pytest.raises(ValueError):
        LLMStateAgent(client, "ours", history_window=0)


def test_the_prompts_state_the_robots_number_of_hands():
    client = Scripted(policy=["1. move(kitchen1)", ""])
    LLMStateAgent(client, "ours").run(_world("open_fridge", hands=1), HOUSE.task("open_fridge"))
    policy = [r for r in client.requests if r.prompt_type == "llm_state_policy"]
    assert "You have one hand: while it holds something" in policy[0].prompt
    assert policy[0].context["hands"] == 1
    offline = make_client("offline", cache=False)
    result = run_trial("heat_milk", "map1", "ours", offline, household=HOUSE, hands=1)
    assert result.success  # it puts the milk down to open the microwave with its one hand
    assert any(line.startswith("['placeon', 'milk1'") for line in result.action_log)


def test_the_step_cap_ends_a_run():
    result = LLMStateAgent(Scripted(policy=["1. wait()"]), "no_states").run(_world("open_fridge"),
                                                                            HOUSE.task("open_fridge"), cap=7)
    assert result.steps == 7 and result.end_reason == "step_cap: 7 steps" and not result.success


def test_offline_runs_are_deterministic_and_each_method_prompts_as_specified():
    client = make_client("offline", cache=False)
    first = run_trial("heat_milk", "map2", "ours", client, household=HOUSE).to_dict()
    second = run_trial("heat_milk", "map2", "ours", client, household=HOUSE).to_dict()
    first.pop("runtime_s"), second.pop("runtime_s")
    assert first == second and first["success"]
    for method in METHODS:
        scripted = Scripted(policy=["1. move(kitchen1)", ""])
        LLMStateAgent(scripted, method).run(_world("open_fridge"), HOUSE.task("open_fridge"))
        kinds = {r.prompt_type for r in scripted.requests}
        expected = {"llm_state_policy"} | ({"llm_state_attention", "llm_state_estimator"}
                                           if method in ("ours", "no_summary") else set())
        if method == "no_objects":
            expected |= {"llm_state_estimator"}
        assert kinds == expected, method


def test_every_method_every_task_on_one_map_offline():
    client = make_client("offline", cache=False)
    for method in METHODS:
        for task in HOUSE.paper_tasks:
            result = run_trial(task, "map1", method, client, household=HOUSE)
            assert 0 < result.steps <= HOUSE.task(task).cap, (task, method)
            assert result.end_reason, (task, method)


def test_paper_and_heldout_sets():
    assert len(HOUSE.paper_tasks) == 15 and len(HOUSE.paper_maps) == 5
    assert sum(HOUSE.tasks[t].level == "simple" for t in HOUSE.paper_tasks) == 8
    assert [n for n, m in HOUSE.maps.items() if m.heldout] == ["heldout1"]
    assert all(HOUSE.tasks[t].heldout for t in HOUSE.tasks if t.startswith("heldout_"))
