"""The Base8 baseline on the traces' household (the task-anticipation paper, Example 03): the golden correction, the
feasibility rules, the parser of its answers."""
from __future__ import annotations

import pytest

from task_learning.anticipation.base8 import Base8Agent, parse_action
from task_learning.anticipation.household import Action, Household, load_household, log_line
from test.anticipation.test_anticipation_core import Scripted  # the scripted completer these tests share

CALL_5 = ("In the current state, the human is holding both cereal and bananas, which means they cannot handle "
          "any additional objects. ... one action I can perform immediately is to move to the livingroom desk "
          "to prepare for placing the items once the human is free.\n\nI will predict the next action based on "
          "this reasoning.\n\nNext action: ['move(agent,livingroom_desk)']")
RETRY = ("The kitchen_smalltable is adjacent to the kitchentable. Therefore, the agent should move to the "
         "kitchen_smalltable.\n\nThe action I will predict is: ['move(agent,kitchen_smalltable)']")
FEEDBACK = ("Your previous action move(agent,livingroom_desk) was not feasible since you can only move to adjacent "
            "locations. livingroom_desk and kitchentable are not next to each other. Please select a feasible "
            "action.\n\nEnsure the Action Feasibility Rules: Movement Limitation(Critical) is strictly respected.")


@pytest.fixture(scope="module")
def spec():
    return load_household()


def test_trace_03_correction(spec):
    house = Household.initial(spec)
    goal_name = "Prepare breakfast on a weekday"
    goal = spec.task_goals["Prepare breakfast weekday"]
    llm = Scripted("So, I predict the next action as follows: ['move(agent,counter_three)']",
                   "['grab(agent,breadslice)']", "['move(agent,kitchentable)']",
                   "['put(agent,breadslice,kitchentable)']", CALL_5, RETRY)
    agent = Base8Agent(llm, "weekday the human is working from home")
    human = [Action("move", ("livingroom_coffeetable",)), Action("grab", ("bananas",)),
             Action("move", ("livingroom_desk",)), Action("grab", ("cereal",))]
    lines = []
    for step in range(4):
        mine = agent.decide(house, goal_name, goal)
        assert mine is not None
        assert house.apply("human", human[step], checked=False) is None
        assert house.apply("agent", mine) is None
        lines.append(log_line({"human": human[step], "agent": mine}))
    assert lines == [
        "< human > [find] < livingroom_coffeetable > | < agent > [find] < counter_three >",
        "< human > [grab] < bananas > | < agent > [grab] < breadslice >",
        "< human > [find] < livingroom_desk > | < agent > [find] < kitchentable >",
        "< human > [grab] < cereal > | < agent > [putback] < breadslice > < kitchentable >",
    ]
    assert agent.corrections == 0
    fifth = agent.decide(house, goal_name, goal)
    assert fifth == Action("move", ("kitchen_smalltable",))
    rejected, accepted = agent.calls[-2:]
    assert rejected.action == "move(agent,livingroom_desk)" and not rejected.feasible
    assert rejected.feedback == FEEDBACK
    assert rejected.correction == 1 and agent.corrections == 1 and agent.max_corrections == 3
    assert accepted.feasible and accepted.action == "move(agent,kitchen_smalltable)"
    # the feedback was appended to the previous prompt and resent
    assert llm.requests[-1].messages[1][1] == llm.requests[-2].messages[1][1] + "\n\n" + FEEDBACK
    assert house.apply("agent", fifth) is None and house.at["agent"] == "kitchen_smalltable"


def test_three_corrections_per_trial_then_the_agent_waits(spec):
    house = Household.initial(spec)
    goal = spec.task_goals["Prepare breakfast weekday"]
    bad = "['move(agent,livingroom_desk)']"
    agent = Base8Agent(Scripted(bad, bad, "['move(agent,counter_three)']", bad, bad, bad), "weekday")
    assert agent.decide(house, "breakfast", goal) == Action("move", ("counter_three",))
    assert agent.corrections == 2
    assert agent.decide(house, "breakfast", goal) is None  # third correction used, then no more
    assert agent.corrections == 3 and agent.refused_after_limit == 1 and len(agent.calls) == 5


@pytest.mark.parametrize("actor_action, rule", [
    (("agent", Action("grab", ("cereal",))), "Object Location"),
    (("agent", Action("fly", ("kitchentable",))), "Possible actions"),
    (("agent", Action("move", ("attic",))), "Movement Limitation(Critical)"),
    (("agent", Action("put", ("milk", "kitchentable"))), "Object Location"),
])
def test_rules(spec, actor_action, rule):
    house = Household.initial(spec)
    actor, action = actor_action
    assert house.check(actor, action).rule == rule


def test_carrying_limit_human_objects_and_appliance_safety(spec):
    house = Household.initial(spec)
    house.at["agent"] = "counter_one"
    assert house.apply("agent", Action("grab", ("plate",))) is None
    assert house.apply("agent", Action("grab", ("cutlets",))) is None
    house.at["agent"] = "kitchentable"
    assert house.check("agent", Action("grab", ("milk",))).rule == "Carrying Limit"
    house.at["agent"] = "counter_three"
    assert house.check("agent", Action("open", ("dishwasher",))).rule == "Carrying Limit"
    house.held["agent"].clear()
    house.on.add("dishwasher")
    assert house.check("agent", Action("open", ("dishwasher",))).rule == "Appliance Safety"
    house.at["human"] = "counter_three"
    assert house.apply("human", Action("grab", ("breadslice",))) is None
    assert house.check("agent", Action("grab", ("breadslice",))).rule == "Human's Objects"


def test_parse_action_forms():
    assert parse_action("reasoning [x] then ['grab(agent,milk)']").action == Action("grab", ("milk",))
    assert parse_action("All done: 'goal_achieved'").goal_achieved
    assert parse_action("I will wait: []").no_action
    assert parse_action("I would move to the desk").unparseable
    assert parse_action("[put(agent, milk , kitchentable)]").action == Action("put", ("milk", "kitchentable"))
