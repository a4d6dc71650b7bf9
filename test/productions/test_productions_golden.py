"""Golden tests from the bootstrapped-productions paper's appendix and method section.

1. The lettuce example through selection -> English rule -> structured rule -> replay check ->
   revision: the first rule asks the world knowledge about one place ("SinkBasin_28084e25 is a
   suitable place for slicing") and fails with the paper's ValueError; the paper's printed revision
   inverts the test and still fails the replay at the sink, which the loop catches and revises
   again; only the corrected rule is stored.
2. The utility example: S0-P1->S1-P2->S2-P3->S0-P4->S4-P5->S5-Pdone updates only P4, P5, Pdone to
   0.9025, 0.95, 1.0; rules with U 1.0 and 0.9025 are drawn about 0.524 / 0.476.
The paper's code answers are given in this project's rule language (the paper's were Python).
"""
from __future__ import annotations

import json
import math
import random

import pytest

from task_learning.productions import prompts
from task_learning.productions.agent import Advice, Decision, ProductionAgent, ProductionSet
from task_learning.productions.knowledge import WorldKnowledge
from task_learning.productions.language import MatchContext, apply, first_match, production_from_dict
from task_learning.productions.learner import Family, LLMAdvisor
from task_learning.productions.utility import (
    DONE_NODE,
    TransitionGraph,
    path_rewards,
    sample,
    selection_probabilities,
    updated_utility,
)
from test.productions_helpers import PlacesWorld, ScriptedProvider, lettuce_state, scripted_client

CHOSEN = "motor action: put Lettuce_895e9ec5 on CounterTop4"

SELECTION_ANSWER = """[Current Task]
Slice a lettuce.

[Common Strategies for "slice a lettuce"]
* Find a lettuce and a knife.
* Pick up the lettuce.
* Move to a countertop or a similar flat surface.
* Put down the lettuce.
* Pick up the knife.
* Slice the lettuce.

[Goal Conditions]
* The lettuce is sliced.

[Current Situation Analysis]
The robot is currently holding a lettuce and is located in front of the sink. The robot has not found a knife yet.

[Task Analysis]
The robot also needs to find a suitable place to put down the lettuce for slicing, such as a countertop.

[Plan]
Step1: Put down the lettuce on a countertop.
Step2: Find and pick up a knife.
Step3: Slice the lettuce.

[Option Evaluation]
"attend to subtask: find a/an <object>": This option is not useful right now because the robot already has the lettuce in its gripper.
"motor action: put Lettuce_895e9ec5 on CounterTop4": This option is useful because it allows the robot to free its gripper so it can pick up a knife.
"special action: 'done'": This option is not appropriate because the task is not completed yet.

[Option Suggestion]
"motor action: put Lettuce_895e9ec5 on CounterTop4"

[Purpose]
The purpose of the suggested option is to free the robot's gripper so it can pick up a knife.

[End]"""

GENERALIZED = ("IF the current task is to slice a/an <object> AND the robot is holding the <object> in its gripper AND "
               "the robot is not at a suitable place for slicing AND there is a countertop available THEN choose "
               "motor action: put <object> on <countertop>.")

ENGLISH_ANSWER = f"""[Relevant Information]
* The current task is to slice a lettuce.
* The robot is currently holding a lettuce in its gripper.
* The robot is currently in front of the sink, which is not an ideal place for slicing.
* A countertop is a suitable place for slicing.

[Specific Rule]
IF the current task is to slice a lettuce AND the robot is holding a lettuce in its gripper AND the robot is not at a suitable place for slicing AND there is a countertop available THEN choose motor action: put Lettuce_895e9ec5 on CounterTop4.

[Generalizable Constants]
* Lettuce_895e9ec5 could be any object that needs to be sliced.
* CounterTop4 could be any countertop or similar flat surface.

[Generalized Rule]
{GENERALIZED}

[Correspondence]
* <object> is Lettuce_895e9ec5.
* <countertop> is CounterTop4.
"""


def rule_answer(conditions: list, heading: str = "[Rule Implementation]") -> str:
    rule = {"name": "slice-put-object-on-countertop", "task": "slice a/an <object>", "conditions": conditions,
            "effect": "motor action: put <held> on <countertop>"}
    return f"[Variable Bindings]\n* held, countertop\n\n{heading}\n```json\n{json.dumps(rule, indent=1)}\n```\n"


BASE = ["holding(<held>)", "is(<held>, <object>)", "at(<location>)"]
# v1: the paper's first code: not OracleQuery(f"{current_location} is a suitable place for slicing")
RULE_V1 = rule_answer(BASE + ['not knows("<location> is a suitable place for slicing")',
                              "nearest(<countertop>, CounterTop)"])
# v2: the paper's printed revision: `if not any(name_equal(current_location, p) for p in ["CounterTop"]):
# return False`, i.e. it REQUIRES being at a countertop (inverted)
RULE_V2_AS_PRINTED = rule_answer(BASE + ["is(<location>, CounterTop)", "nearest(<countertop>, CounterTop)"])
# v3: the test the English rule means (not at a countertop)
RULE_V3_CORRECT = rule_answer(BASE + ["not is(<location>, CounterTop)", "nearest(<countertop>, CounterTop)"])


def lettuce_decision() -> Decision:
    env = lettuce_state()
    return Decision(task="slice a/an lettuce", env=env, history=[],
                    options=["attend to subtask: find a/an <object>", CHOSEN, "motor action: move to CounterTop4"],
                    blacklist=["attend to subtask: slice a/an lettuce"], reason="no_production",
                    world=WorldKnowledge(oracle=lambda s: True))


def lettuce_advisor(max_revisions: int) -> tuple[LLMAdvisor, ScriptedProvider]:
    provider = ScriptedProvider({
        prompts.SELECTION: [SELECTION_ANSWER],
        prompts.ENGLISH: [ENGLISH_ANSWER],
        prompts.RULE: [RULE_V1],
        prompts.REVISION: [RULE_V2_AS_PRINTED, RULE_V3_CORRECT],
    })
    families = [Family("find a/an <object>", "the robot has found the object and has it in its gripper")]
    return LLMAdvisor(scripted_client(provider), families, learn=True, max_revisions=max_revisions), provider


def test_lettuce_selection_rule_replay_and_two_revisions() -> None:
    advisor, provider = lettuce_advisor(max_revisions=3)
    advice = advisor.advise(lettuce_decision())
    assert advice is not None
    assert advice.option == CHOSEN
    assert advice.purpose.startswith("The purpose of the suggested option is to free the robot's gripper")
    assert [r.prompt_type for r in provider.requests] == [
        prompts.SELECTION, prompts.ENGLISH, prompts.RULE, prompts.REVISION, prompts.REVISION]
    # the first rule asks about one place: the paper's error, fed back in the first revision request
    first_error = "ValueError: got unknown statement: SinkBasin_28084e25 is a suitable place for slicing"
    assert advisor.stats.replay_failures[0] == first_error
    revision_prompt = provider.requests[3].messages[-1][1]
    assert first_error in revision_prompt and "[Expected Return of the precondition]" in revision_prompt
    assert "[Current Task] slice a/an lettuce" in revision_prompt  # action-selection info resent
    # the paper's printed revision still fails the replay at the sink: caught, revised again
    assert advisor.stats.replay_failures[1].startswith("(False, 'condition 4 does not hold: is(<location>, CounterTop)")
    assert advisor.stats.revisions == 2
    production = advice.production
    assert production is not None
    assert production.english == GENERALIZED
    assert production.provenance["revisions"] == 2
    assert production.provenance["replay_errors"][0] == first_error
    assert production.provenance["option"] == CHOSEN
    assert any("slice a/an lettuce" in m[1] for m in production.provenance["conversation"])
    # the stored rule applies on the state it was made in and gives the chosen action
    ctx = MatchContext("slice a/an lettuce", lettuce_state(), WorldKnowledge())
    binding = first_match(production, ctx)
    assert binding is not None and apply(production, binding) == CHOSEN


def test_lettuce_rule_failing_every_replay_is_never_stored() -> None:
    advisor, provider = lettuce_advisor(max_revisions=1)  # one revision: the printed (inverted) one
    advice = advisor.advise(lettuce_decision())
    assert advice is not None and advice.option == CHOSEN  # the action itself is still taken
    assert advice.production is None
    assert advisor.stats.rejected == 1 and advisor.stats.generated == 0
    assert provider.counts[prompts.REVISION] == 1


def test_rule_naming_an_unknown_predicate_is_never_stored() -> None:
    bad = rule_answer(BASE + ["suitable_place_for_slicing(<location>)", "nearest(<countertop>, CounterTop)"])
    provider = ScriptedProvider({prompts.SELECTION: [SELECTION_ANSWER], prompts.ENGLISH: [ENGLISH_ANSWER],
                                 prompts.RULE: [bad], prompts.REVISION: [bad]})
    advisor = LLMAdvisor(scripted_client(provider), [], learn=True, max_revisions=2)
    productions = ProductionSet()
    world = PlacesWorld(["A"], "A")

    class Once:
        def advise(self, decision: Decision) -> Advice | None:
            return advisor.advise(lettuce_decision())

    ProductionAgent(productions, world, advisor=Once(), max_steps=1).run("slice a/an lettuce")
    assert len(productions) == 0
    assert all("unknown predicate 'suitable_place_for_slicing'" in e for e in advisor.stats.replay_failures)
    assert advisor.stats.replay_failures and advisor.stats.rejected == 1


# ------------------------------------------------------------------------------- utilities

def test_utility_shortest_path_update_paper_example() -> None:
    graph = TransitionGraph("S0")
    edges = [("S0", "S1", "P1"), ("S1", "S2", "P2"), ("S2", "S0", "P3"), ("S0", "S4", "P4"), ("S4", "S5", "P5"),
             ("S5", DONE_NODE, "Pdone")]
    closed = [graph.add(a, b, p) for a, b, p in edges]
    assert closed == [False, False, True, False, False, False]  # P3 closes the cycle (DFS)
    path = graph.shortest_path()
    assert path == ["P4", "P5", "Pdone"]
    utilities = {name: updated_utility(0.0, 0, dt)[0] for name, dt in path_rewards(path)}
    assert utilities == pytest.approx({"P4": 0.9025, "P5": 0.95, "Pdone": 1.0})
    assert updated_utility(0.5, 1, 0) == (pytest.approx(0.75), 2)  # (N·U + γ^0)/(N+1)


def test_draw_between_utilities_1_and_09025() -> None:
    p = selection_probabilities([1.0, 0.9025])
    assert p[0] == pytest.approx(math.exp(1.0) / (math.exp(1.0) + math.exp(0.9025)))
    assert p == pytest.approx([0.524, 0.476], abs=1e-3)
    rng = random.Random(7)
    draws = [sample(["a", "b"], [1.0, 0.9025], rng) for _ in range(20000)]
    assert draws.count("a") / len(draws) == pytest.approx(0.524, abs=0.01)


def _move(name: str, here: str, there: str) -> object:
    return production_from_dict({"name": name, "task": "reach the goal", "conditions": [f"at({here})"],
                                 "effect": f"motor action: move to {there}"})


def test_agent_loop_reproduces_the_paper_example() -> None:
    """S0-P1->S1-P2->S2-P3->S0 closes a cycle: the LLM is asked at S0 and (bootstrapping) gives P4;
    then P5 and Pdone. Only P4, P5, Pdone are updated: 0.9025, 0.95, 1.0."""
    rules = [_move("P1", "S0", "S1"), _move("P2", "S1", "S2"), _move("P3", "S2", "S0"), _move("P5", "S4", "S5"),
             production_from_dict({"name": "Pdone", "task": "reach the goal", "conditions": ["at(S5)"],
                                   "effect": "special action: done"})]
    productions = ProductionSet(rules)  # type: ignore[arg-type]
    asked: list[Decision] = []

    class Teacher:
        def advise(self, decision: Decision) -> Advice | None:
            asked.append(decision)
            return Advice("motor action: move to S4", "leave the loop", _move("P4", "S0", "S4"))  # type: ignore[arg-type]

    world = PlacesWorld(["S0", "S1", "S2", "S4", "S5"], "S0")
    episode = ProductionAgent(productions, world, advisor=Teacher(), rng=random.Random(0)).run("reach the goal")
    assert episode.outcome == "done"
    assert world.moves == ["S1", "S2", "S0", "S4", "S5"]
    assert len(asked) == 1 and asked[0].reason == "cycle" and asked[0].env.location == "S0"
    assert "motor action: move to S1" in asked[0].blacklist  # what led into the cycle from here
    got = {p.name: (round(p.utility, 6), p.count) for p in productions}
    assert got == {"P1": (0.0, 0), "P2": (0.0, 0), "P3": (0.0, 0), "P4": (0.9025, 1), "P5": (0.95, 1),
                   "Pdone": (1.0, 1)}


def test_subtask_is_its_own_pathway_and_quit_changes_nothing() -> None:
    """A0-P1->A1-P2->[B3-Q3->B4-Q4->B5-Qdone]->A6-Pdone: two pathways; a quit updates nothing."""
    def rule(name: str, task: str, conds: list[str], effect: str) -> object:
        return production_from_dict({"name": name, "task": task, "conditions": conds, "effect": effect})

    rules = [rule("P1", "main", ["at(A0)"], "motor action: move to A1"),
             rule("P2", "main", ["at(A1)"], "attend to subtask: sub"),
             rule("Q3", "sub", ["at(A1)"], "motor action: move to B4"),
             rule("Q4", "sub", ["at(B4)"], "motor action: move to B5"),
             rule("Qdone", "sub", ["at(B5)"], "special action: done"),
             rule("Pdone", "main", ["at(B5)", 'previous("sub")'], "special action: done")]
    productions = ProductionSet(rules)  # type: ignore[arg-type]
    world = PlacesWorld(["A0", "A1", "B4", "B5"], "A0")
    episode = ProductionAgent(productions, world, rng=random.Random(0)).run("main")
    assert episode.outcome == "done" and episode.llm_decisions == 0
    got = {p.name: round(p.utility, 6) for p in productions}
    assert got == {"P1": 0.9025, "P2": 0.95, "Pdone": 1.0, "Q3": 0.9025, "Q4": 0.95, "Qdone": 1.0}

    quitting = ProductionSet([rule("Go", "q", ["at(A0)"], "motor action: move to A1"),  # type: ignore[list-item]
                              rule("Quit", "q", ["at(A1)"], "special action: quit")])
    episode = ProductionAgent(quitting, PlacesWorld(["A0", "A1"], "A0")).run("q")
    assert episode.outcome == "quit"
    assert [(p.utility, p.count) for p in quitting] == [(0.0, 0), (0.0, 0)]


# ------------------------------------------------------------------------------- critic, selection

def test_critic_end_condition_keep_modify_remove() -> None:
    advisor, _ = lettuce_advisor(max_revisions=3)
    production = advisor.advise(lettuce_decision()).production  # type: ignore[union-attr]
    assert production is not None
    done = production_from_dict({"name": "slice-done", "task": "slice a/an <object>",
                                 "conditions": ["is(<x>, <object>)", "sliced(<x>)"], "effect": "special action: done"})
    done.english = "IF the current task is to slice a/an <object> AND the <object> is sliced THEN choose done."
    extra = production_from_dict({"name": "slice-bad", "task": "slice a/an <object>", "conditions": [],
                                  "effect": "special action: quit"})
    productions = ProductionSet([production, done, extra])
    critic = ("[End Condition]\nthe sliceable object is already sliced and the robot's gripper is holding a knife.\n\n"
              "[Rule Review]\n* slice-put-object-on-countertop: modify: put the held object on the nearest countertop\n"
              "* slice-done: keep\n* slice-bad: remove\n")
    provider = ScriptedProvider({prompts.CRITIC: [critic], prompts.RULE: [RULE_V3_CORRECT]})
    critic_advisor = LLMAdvisor(scripted_client(provider), [], learn=True)
    family = Family("slice a/an <object>")
    verdicts = critic_advisor.critique(family, productions, WorldKnowledge())
    assert family.end_condition.startswith("the sliceable object is already sliced")
    assert verdicts == {"slice-put-object-on-countertop": "modify", "slice-done": "keep", "slice-bad": "remove"}
    assert sorted(p.name for p in productions) == ["slice-done", "slice-put-object-on-countertop"]
    assert productions.get("slice-put-object-on-countertop").english == "put the held object on the nearest countertop"  # type: ignore[union-attr]

    # a modification whose rule fails the replay on the state the rule was made in is not applied
    provider = ScriptedProvider({prompts.CRITIC: [critic.replace("slice-bad: remove", "")],
                                 prompts.RULE: [RULE_V2_AS_PRINTED], prompts.REVISION: [RULE_V2_AS_PRINTED]})
    before = productions.get("slice-put-object-on-countertop").conditions  # type: ignore[union-attr]
    verdicts = LLMAdvisor(scripted_client(provider), [], learn=True, max_revisions=1).critique(
        family, productions, WorldKnowledge())
    assert verdicts["slice-put-object-on-countertop"].startswith("keep (modification failed")
    assert productions.get("slice-put-object-on-countertop").conditions == before  # type: ignore[union-attr]


def test_an_option_outside_the_list_or_blacklisted_is_asked_again_then_the_task_fails() -> None:
    blacklisted = SELECTION_ANSWER.replace('"motor action: put Lettuce_895e9ec5 on CounterTop4"\n\n[Purpose]',
                                           '"attend to subtask: slice a/an lettuce"\n\n[Purpose]')
    off_list = SELECTION_ANSWER.replace('"motor action: put Lettuce_895e9ec5 on CounterTop4"\n\n[Purpose]',
                                        '"motor action: juggle Lettuce_895e9ec5"\n\n[Purpose]')
    provider = ScriptedProvider({prompts.SELECTION: [blacklisted, off_list, SELECTION_ANSWER]})
    advisor = LLMAdvisor(scripted_client(provider), [], learn=False, max_invalid=2)
    advice = advisor.advise(lettuce_decision())
    assert advice is not None and advice.option == CHOSEN and provider.counts[prompts.SELECTION] == 3
    assert "is not one of the possible options or is blacklisted" in provider.requests[1].messages[-1][1]

    provider = ScriptedProvider({prompts.SELECTION: [off_list]})
    advisor = LLMAdvisor(scripted_client(provider), [], learn=False, max_invalid=2)
    assert advisor.advise(lettuce_decision()) is None
    world = PlacesWorld(["A"], "A")
    episode = ProductionAgent(ProductionSet(), world, advisor=advisor).run("slice a/an lettuce")
    assert episode.outcome == "failed" and world.moves == []
