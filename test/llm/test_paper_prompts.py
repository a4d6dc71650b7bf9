"""`--prompts paper`: the task-anticipation and LLM-State papers send the prompts their papers print, verbatim.

The paper's text is written out here again, copied from the seeds (the LLM-State paper Appendix VI-A
Listings 3-5; the task-anticipation paper Execution Examples 01 and 03), independently of config/*/paper_prompts.yaml:
a wrong transcription in the YAML fails these tests. Each test looks at what a recording provider
receives, through the same code path a real model's requests take. The project's own wording stays
the default."""
from __future__ import annotations

import json

import pytest

from task_learning.anticipation.anticipator import Anticipator
from task_learning.anticipation.base8 import Base8Agent
from task_learning.anticipation.config import load_anticipation_config
from task_learning.anticipation.context import DayContext, parse_context
from task_learning.anticipation.experience import Experience
from task_learning.anticipation.household import Household, load_household
from task_learning.apps.cli import main
from task_learning.kb.store import StoredRoutine
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm_state.agent import LLMStateAgent
from task_learning.llm_state.calls import Call
from task_learning.llm_state.household import HouseholdWorld
from task_learning.llm_state.household import load_household as load_llm_state_household
from task_learning.llm_state.prompts import HistoryEntry, estimator_prompt, policy_prompt
from task_learning.llm_state.state import OpenState
from test.llm_state.test_llm_state_golden import GOAL, OBS

# ---------------------------------------------------------------- the LLM-State paper, Appendix VI-A
# Listing 4 (LLM as State Estimator), lines 2-31, whole: its observation is only these four lines.
# The listing prints the lists with typographic quotes; the code writes Python's straight ones.
LISTING_4 = """******** current state start ********
lightswitch1: []
bedroom1: []
lightswitch2: []

******** current state end ********

******** robot actions start ********
["['move', 'lightswitch1'](Success)", "['switchoff', 'lightswitch1'](Success)", "['move', 'bedroom1'](Success)", "['switchoff', 'lightswitch1'](Fail)"]
******** robot actions end ********

Room List: ['bathroom1', 'bedroom1', 'kitchen1', 'livingroom1']
Current Holding: []
You are closed to: ['plate3', 'cellphone1', 'coffeetable1', 'cellphone2']
Current Room: bedroom1

Important!
You may need to search different places and containers for relevant items.
You can only interact (e.g. pickup, open, switch on) with objects that are closed to you.
You only have two hands, when you hold two items, you cannot pickup/open/switch on other items.


Given the current state and robot actions, please update the state by calling the following function:
update_state(object, updated_status)
update_reasoning("reasoning process")

for example:
update_reasoning("fill in the reasoning here especially for possible failure cases")
update_state("apple", "on_table | in_hand")
update_state("table", "in kitchen | not_graspable | not_movable")"""
HISTORY = [HistoryEntry(Call("move", ("lightswitch1",)), True), HistoryEntry(Call("switchoff", ("lightswitch1",)), True),
           HistoryEntry(Call("move", ("bedroom1",)), True), HistoryEntry(Call("switchoff", ("lightswitch1",)), False)]
# The fixed text of Listing 3 (attention) after its observation block, lines 16-27.
LISTING_3_TAIL = """******** current observation end ********

Task goal: {goal}

Given the current observation and task goal, please add related objects from observations:
add_related_objects(object)

for example:
Task goal: peel an apple
add_related_objects("apple1")
add_related_objects("apple2")
add_related_objects("knife1")"""
# Listing 5 (policy), lines 2-23 (before the history) and 42-54 (after the state block).
LISTING_5_HEAD = """******** instruction start ********

At any point, you only have access to the following functions:
 move(a), pickup(a), placein(a,b), placeon(a,b), open(a), close(a), switchon(a), switchoff(a), wait()

******** instruction end ********


******** response template start ********
Low-level Action Plan:
1. move(fridge) (example only)
2. open(fridge) (example only)
3. move(cup1) (example only)
4. pickup(cup1) (example only)
5. move(cupboard1) (example only)
6. placein(cup1, cupboard1) (example only)
******** response template end ********

******** history actions start ********
"""
LISTING_5_TAIL = """


Important!
You may need to search different places and containers for relevant items.
You can only interact (e.g. pickup, open, switch on) with objects that are closed to you.
You only have {hands}, when you hold {items}, you cannot pickup/open/switch on other items.


Task goal: {goal}
- Generate a plan based on the current state.
- Make the plan concise and short, less than 20 steps.
- Be careful about the state information, consider the additional notes in the state.
- You may need to search different places and containers for relevant items."""


class Recording:
    """A completer that records every request and answers from a list (then the last answer)."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        text = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return LLMResponse(text=text, prompt_tokens=10, completion_tokens=5)


def test_the_estimator_prompt_is_listing_4_word_for_word() -> None:
    state = OpenState(key_objects=["lightswitch1", "bedroom1", "lightswitch2"])
    text, context = estimator_prompt(state, HISTORY, OBS, GOAL, wording="paper")
    assert text == LISTING_4
    # the context holds what the text shows: no object lists (the offline stand-in reads only it)
    assert context["observation"]["objects"] == [] and context["observation"]["rooms"] == list(OBS.rooms)
    own, _ = estimator_prompt(state, HISTORY, OBS, GOAL)
    assert own != text and "Object List:" in own  # the project's wording stays the default


def test_the_agent_sends_the_appendix_prompts_to_the_model() -> None:
    """A whole loop with --prompts paper: the attention, estimator and policy requests a recording
    provider receives carry Listings 3, 4 and 5's fixed text (the paper prints no done signal: a run
    ends on an empty plan or the cap)."""
    house = load_llm_state_household()
    task = house.task("open_fridge")
    llm = Recording("", "Low-level Action Plan:\n1. move(fridge1)\n2. open(fridge1)", 'add_related_objects("fridge1")',
                    'update_reasoning("The robot opened fridge1.")\nupdate_state("fridge1", "open")',
                    "Low-level Action Plan:\n")
    result = LLMStateAgent(llm, "ours", wording="paper").run(HouseholdWorld(house, "map2", task), task)
    assert result.success and result.llm_calls == 5
    kinds = [r.prompt_type for r in llm.requests]
    assert kinds == ["llm_state_attention", "llm_state_policy", "llm_state_attention", "llm_state_estimator",
                     "llm_state_policy"]
    attention, policy, estimator = llm.requests[2].prompt, llm.requests[4].prompt, llm.requests[3].prompt
    assert attention.startswith("******** current state start ********\n\n\n******** current state end ********\n\n"
                                "******** current observation start ********\nObject List: [")  # no key object yet
    assert attention.endswith(LISTING_3_TAIL.format(goal=task.goal))
    assert policy.startswith(LISTING_5_HEAD) and policy.endswith(
        LISTING_5_TAIL.format(hands="two hands", items="two items", goal=task.goal))
    assert "******** current state start ********\nfridge1: open\n\n\nReasoning: The robot opened fridge1.\n" \
           "******** current state end ********" in policy
    assert LISTING_4.split("******** robot actions start", 1)[0].replace(
        "lightswitch1: []\nbedroom1: []\nlightswitch2: []", "fridge1: []") in estimator
    assert estimator.endswith(LISTING_4.split("Current Room: bedroom1\n", 1)[1])
    assert "When the goal is reached" not in policy  # our own bullet, not the paper's


def test_ablations_and_w_o_states_drop_only_their_part_of_the_papers_text() -> None:
    state = OpenState(["lightswitch1"], {"lightswitch1": ["off"]}, "The robot switched it off.")
    no_summary, _ = estimator_prompt(state, HISTORY, OBS, GOAL, with_summary=False, wording="paper")
    assert "update_reasoning" not in no_summary and no_summary.endswith(
        "update_state(object, updated_status)\n\nfor example:\nupdate_state(\"apple\", \"on_table | in_hand\")\n"
        "update_state(\"table\", \"in kitchen | not_graspable | not_movable\")")
    no_objects, _ = estimator_prompt(state, HISTORY, OBS, GOAL, with_objects=False, wording="paper")
    assert "update_state" not in no_objects and "lightswitch1: []" not in no_objects
    without, context = policy_prompt(GOAL, OBS, HISTORY, None, wording="paper")
    assert "current state start" not in without and "state" not in context
    assert without.startswith(LISTING_5_HEAD) and "******** current observation end ********\n\n\n\nImportant!" \
        not in without and "******** current observation end ********\n\nImportant!" in without
    one_hand, _ = policy_prompt(GOAL, OBS, HISTORY, state, hands=1, wording="paper")
    assert one_hand.endswith(LISTING_5_TAIL.format(hands="one hand", items="one item", goal=GOAL))
    single, _ = policy_prompt(GOAL, OBS, HISTORY, None, single_step=True, wording="paper")
    assert "Give only the next action." in single  # InnerMonologue-W: the paper prints none, ours stays
    with pytest.raises(ValueError, match="whole history"):
        LLMStateAgent(Recording(""), "ours", wording="paper", history_window=5)


# ---------------------------------------------------------------- the task-anticipation paper, Execution Examples
# Example 01's prompt, seed lines 13-25: the system message, then the user message. One character
# differs on purpose: the paper's first example reads "having guests for lunch : []" (a space
# before the colon) and its second "leaving for office: []"; the examples share one template.
EXAMPLE_01_SYSTEM = (
    "You are an intelligent household assistant. Anticipate future tasks based on previous days’ data. You will "
    "get a list of tasks that can be executed in the household environment, day of the week, an example of a "
    "partially completed routine and the expected output. Complete the rest of the tasks for the partially "
    "completed routine only using the tasks from the task list, following the examples given.")
EXAMPLE_01_TASK_LIST = (
    "Task List: [Prepare breakfast weekday, Prepare coffee, Prepare home work-station, Prepare lunch, Pack bag, "
    "Clean kitchen, Prepare breakfast weekend, Prepare table for guests, Serve snacks, Prepare activities, Clean "
    "dishes]")
EXAMPLE_GUESTS = (
    "Complete the following routine on a weekend the human is having guests for lunch: []\n\n[Prepare breakfast "
    "weekend, Prepare table for guests, Prepare lunch, Clean dishes] As everyday on weekends it is important to "
    "first prepare breakfast. Since the guests are arriving then the agent must make table to serve lunch to the "
    "guests. It is important to start on lunch as soon as the table is ready. Finally the agent may not have time "
    "to clean the whole kitchen while having guests but it can clean atleast the dirty dishes from lunch to "
    "maintain the hygiene.")
EXAMPLE_OFFICE = (
    "Complete the following routine on a weekday the human is leaving for office: []\n\n[Prepare breakfast weekday, "
    "Pack bag, Prepare lunch, Clean kitchen] Since the human is leaving for the office, it’s a busy morning "
    "focused on essentials. Breakfast is prepared first to start the day with energy. Next, packing the bag "
    "ensures they have everything needed for work. Lunch is then prepared in case they need it later. Finally, "
    "after they’ve left, the kitchen is cleaned to maintain a tidy space.")
EXAMPLE_01_QUERY = "Complete the following routine on a weekday the human is working from home and need a snack: []"


def _routine(cfg, context: str, tasks: list[str], explanation: str) -> StoredRoutine:
    ctx = parse_context(context, cfg)
    return StoredRoutine(ctx.day, tuple(sorted(ctx.facts)), tuple(tasks), explanation, source="test")


def test_the_anticipation_prompt_is_example_01_word_for_word() -> None:
    """The two routines the trace shows as examples, drawn from experience (with our own
    explanations stored), are sent with the paper's explanations, in the paper's words."""
    cfg = load_anticipation_config(wording="paper")
    experience = Experience([
        _routine(cfg, "weekend, having guests for lunch",
                 ["Prepare breakfast weekend", "Prepare table for guests", "Prepare lunch", "Clean dishes"], "ours 1"),
        _routine(cfg, "weekday, leaving for office",
                 ["Prepare breakfast weekday", "Pack bag", "Prepare lunch", "Clean kitchen"], "ours 2"),
    ])
    llm = Recording("Prepare breakfast weekday, Prepare home work-station, Serve snacks")
    ctx = parse_context("weekday, working from home and need a snack", cfg)
    result = Anticipator(llm, cfg, experience).anticipate(ctx)
    (request,) = llm.requests
    order = [e["context"] for e in request.context["examples"]]
    shown = {"weekend the human is having guests for lunch": EXAMPLE_GUESTS,
             "weekday the human is leaving for office": EXAMPLE_OFFICE}
    examples = "\n\n".join(f"Example{i}: {shown[c]}" for i, c in enumerate(order, 1))
    assert request.messages == (("system", EXAMPLE_01_SYSTEM),
                                ("user", f"{EXAMPLE_01_TASK_LIST}\n\n{examples}\n\n{EXAMPLE_01_QUERY}"))
    assert result.proposed == ["Prepare breakfast weekday", "Prepare home work-station", "Serve snacks"]
    own = Anticipator(Recording("Serve snacks"), load_anticipation_config(), experience)
    own.anticipate(ctx)
    assert own.client.requests[0].messages[0][1] != EXAMPLE_01_SYSTEM  # the default is the project's wording
    assert "ours 1" in own.client.requests[0].messages[1][1]


# Example 03's Base8 prompt (seed lines 86-153): its system message and its fixed lines.
BASE8_SYSTEM = (
    "You are an intelligent household assistant collaborating with a human to perform daily tasks. Your task is to "
    "achieve the goal by selecting the next feasible action in a logical sequence. Briefly explain your reasoning "
    "and predict only one action at a time, returning the action as a Python list, e.g., `[move(agent,location)]`. "
    "If the goal is already achieved return ‘goal_achieved’. You may choose not to take any action if it is "
    "necessary.")
BASE8_HEAD = """Possible actions:

`move(agent,location)`: Move the agent to an adjacent location.

`grab(agent,object)`: Pick up an object.

`put(agent,object,surface)`: Place an object on a surface.

open(agent,appliance): Open an appliance.

close(agent,appliance): Close an appliance.

switchon(agent,appliance): Switch on an appliance.

switchoff(agent,appliance): Switch off an appliance.

Action Feasibility Rules:

Movement Limitation(Critical): You must only move to adjacent locations. Adjacent locations are explicitly defined in the next_to relationships below. If the destination is not adjacent, the move action is prohibited. Always check adjacency before predicting a move.

Object Location: You must be in the same location as an object to perform any action on it (e.g., grab or put).

Carrying Limit: You cannot hold more than two objects at a time. When holding two objects, actions like open, close, switchon, or switchoff require putting down at least one object first.

Appliance Safety: For safety, you should not open appliance doors when they are switched on.

If the human is holding an object, assume they will handle the tasks involving that object. You must not attempt to grab, or interact with the object in the humans possession. Instead, focus on completing other parts of the goal unrelated to that object.

You can only move between the following adjacent places:

next_to("""
BASE8_MIDDLE = """

Example Sequence for Rational Action:

If a task requires moving an item from one room to another, you should:

1. Move to the item's location.
2. Grab the item.

3. Move to the destination.

4. Place the item.

Current state:

human location: kitchentable, agent location: kitchentable, """
BASE8_TAIL = """

The teams current goal is to Prepare breakfast on a weekday:

goal = on(cereal,kitchentable), on(breadslice,kitchentable), on(bananas,kitchentable)

Anticipate an action for you to perform given above state and constraints on a weekday the human is working from home. Ensure the Action Feasibility Rules: Movement Limitation(Critical), Object Location, Carrying Limit and Appliance Safety are strictly respected and predict the next logical action."""


def test_the_base8_prompt_is_example_03s() -> None:
    spec = load_household()
    house = Household.initial(spec)
    goal = spec.task_goals["Prepare breakfast weekday"]
    llm = Recording("So, I predict the next action as follows: ['move(agent,counter_three)']")
    agent = Base8Agent(llm, "weekday the human is working from home", wording="paper")
    agent.decide(house, "Prepare breakfast on a weekday", goal)
    agent.decide(house, "Prepare breakfast on a weekday", goal, {"human": "move(human,livingroom_coffeetable)"})
    first, second = (r.messages for r in llm.requests)
    assert first[0] == ("system", BASE8_SYSTEM)
    user = first[1][1]
    assert user.startswith(BASE8_HEAD) and BASE8_MIDDLE in user and user.endswith(BASE8_TAIL)
    assert "next_to(counter_one, counter_three)\n\nnext_to(" in user  # one fact per paragraph, as printed
    assert "Previous actions" not in user  # the printed prompt is a first step: no previous actions
    assert "\n\nPrevious actions: human: move(human,livingroom_coffeetable)\n\nThe teams current goal" in second[1][1]
    own = Recording("['move(agent,counter_three)']")
    Base8Agent(own, "weekday the human is working from home").decide(house, "Prepare breakfast on a weekday", goal)
    assert own.requests[0].messages[0][1] != BASE8_SYSTEM


# ---------------------------------------------------------------- commands
def test_commands_take_prompts_paper_and_report_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "--paper", "llm-state", "--prompts", "paper", "--methods", "ours", "--runs", "1",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["prompts"] == "paper" and data["methods"] == ["ours"] and data["runs_per_task"] == 1
    assert "not reproduced" in data["table_iii"]
    assert main(["llm-state", "--task", "open_fridge", "--prompts", "paper", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["prompts"] == "paper"
    assert main(["anticipate", "--context", "weekday, working from home", "--prompts", "paper", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["proposed"]


@pytest.mark.parametrize("argv, message", [
    (["experiment", "--paper", "stars", "--prompts", "paper"], "--prompts applies to --paper llm-state and"),
    (["experiment", "--paper", "bootstrapping", "--runs", "3"], "apply to --paper llm-state only"),
    (["experiment", "--paper", "llm-state", "--methods", "ours,telepathy"], "unknown method(s) telepathy"),
    (["experiment", "--paper", "llm-state", "--temperature", "3"], "must be a finite number in [0, 2]"),
    (["llm-state", "--task", "open_fridge", "--prompts", "poetry"], "invalid choice: 'poetry'"),
])
def test_bad_protocol_options_are_one_line_exit_2(argv: list[str], message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_day_context_reads_as_the_paper_says_it() -> None:
    cfg = load_anticipation_config()
    assert DayContext("weekday", frozenset({"working_from_home", "needs_snack"})).describe(cfg) == \
        "weekday the human is working from home and need a snack"


def test_a_template_with_an_unknown_slot_names_file_and_key(tmp_path) -> None:
    from task_learning.errors import ConfigError
    from task_learning.llm.prompt_templates import fill
    from task_learning.llm_state.paper_prompts import default_path, load_paper_prompts

    text = tmp_path / "p.yaml"
    text.write_text(default_path().read_text(encoding="utf-8").replace("Task goal: {goal}", "Task goal: {gaol}", 1),
                    encoding="utf-8")
    with pytest.raises(ConfigError, match=r"p\.yaml: attention: unknown slot\(s\) \{gaol\}"):
        load_paper_prompts(str(text))
    # a value is never read again as a template; a None slot takes its line and the blank lines after
    assert fill("a {x}\n{y}\n\nb", {"x": "{y}", "y": None}) == "a {y}\nb"
