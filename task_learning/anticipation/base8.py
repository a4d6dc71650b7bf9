"""The Base8 baseline (the task-anticipation paper, Example 03): the LLM picks the agent's next low-level action, one
per call, from move/grab/put/open/close/switchon/switchoff under the Action Feasibility Rules.

The prompt has the trace's parts in its order (our wording by default, the trace's own with
`wording="paper"`: paper_prompts.py): the job, the possible actions, the
feasibility rules, the adjacency facts, an example of rational action, the current state, the
team's goal as literals, and the query naming the day's context. The answer is parsed as data
(the last `[...]` holding an action, `goal_achieved`, or `[]` for no action) and checked against
the rules; an infeasible one is fed back, appended to the previous prompt, with the reason in the
trace's words. At most 3 corrections per trial (the seed: per trial, not per step); after them an
infeasible answer is not executed (the agent waits that step; the seed does not say what happens)."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from task_learning.anticipation import paper_prompts
from task_learning.anticipation.anticipator import Completer
from task_learning.anticipation.household import (
    ACTIONS,
    Action,
    Household,
    Infeasible,
    Literal,
    feedback_text,
)
from task_learning.llm.base import NEXT_TURN, LLMRequest

log = logging.getLogger(__name__)

PROMPT_TYPE = "base8_action"
MAX_CORRECTIONS = 3  # the task-anticipation paper, Section 4.1 as the trace cites it: per trial
# The answer ends with its one action as a list (the trace: "... as follows: ['move(agent,counter_three)']"):
# the first "]" ends it, so a model that does not stop by itself stops there, or at its next turn (docs/llm.md)
STOP = ("]", NEXT_TURN)
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(([^()]*)\)")

SYSTEM = (
    "You are a household assistant working with a human on the day's tasks. Reach the team's goal "
    "by choosing the next feasible action for yourself. Explain your reasoning briefly and give "
    "one action only, as a Python list, e.g. [move(agent,location)]. If the goal is already "
    "achieved, answer 'goal_achieved'. You may also take no action, [], when that is best."
)
ACTION_HELP = (
    "Possible actions:\n"
    "move(agent,location): go to a location next to where you are.\n"
    "grab(agent,object): pick an object up.\n"
    "put(agent,object,surface): set an object down on a surface or in a container.\n"
    "open(agent,appliance): open an appliance.\n"
    "close(agent,appliance): close an appliance.\n"
    "switchon(agent,appliance): switch an appliance on.\n"
    "switchoff(agent,appliance): switch an appliance off."
)
RULES = (
    "Action Feasibility Rules:\n"
    "Movement Limitation(Critical): move only to a location adjacent to yours; adjacency is given "
    "by the next_to facts below and nothing else. Check it before every move.\n"
    "Object Location: to grab, put or use something you must be where it is.\n"
    "Carrying Limit: you hold at most two objects; with two in hand you cannot open, close, switch "
    "on or switch off anything until you put one down.\n"
    "Appliance Safety: never open an appliance that is switched on.\n"
    "Objects the human holds are the human's to handle: do not grab or use them; work on the parts "
    "of the goal that do not need them."
)
EXAMPLE = (
    "Example of rational action: to bring an item from one room to another, 1. move to the item's "
    "location, 2. grab it, 3. move to the destination, 4. put it there."
)


@dataclass
class Answer:
    action: Action | None = None
    goal_achieved: bool = False
    no_action: bool = False
    unparseable: bool = False


def parse_action(text: str, agent: str = "agent") -> Answer:
    """The action of an answer: the last bracketed list holding one wins (the trace's answers end
    with e.g. `['move(agent,counter_three)']`). An answer that ends inside an open `[` was cut at its
    closing bracket by the stop sequence (STOP): the list is closed again before parsing."""
    text = text or ""
    if text.rfind("[") > text.rfind("]"):
        text += "]"
    for inner in reversed(_BRACKETS.findall(text)):
        calls = _CALL.findall(inner)
        if calls:
            name, raw = calls[-1]
            args = [a.strip().strip("'\"` ") for a in raw.split(",")]
            if args and args[0] in (agent, "agent"):
                args = args[1:]
            return Answer(action=Action(name.lower(), tuple(args)))
        if "goal_achieved" in inner:
            return Answer(goal_achieved=True)
        if not inner.strip(" '\"`"):
            return Answer(no_action=True)
    if "goal_achieved" in (text or ""):
        return Answer(goal_achieved=True)
    return Answer(unparseable=True)


def build_messages(house: Household, goal_name: str, goal: Sequence[Literal], context_text: str,
                   previous: dict[str, str], agent: str = "agent", wording: str = "own") -> tuple[tuple[str, str], ...]:
    facts = [f"next_to({a}, {b})" for a, b in sorted(tuple(sorted(p)) for p in house.spec.adjacent)]
    if wording == "paper":
        said = ", ".join(f"{who}: {what}" for who, what in previous.items())
        return paper_prompts.base8_messages(facts, house.describe(), f"Previous actions: {said}" if said else None,
                                            goal_name, ", ".join(str(g) for g in goal), context_text)
    adjacency = "\n".join(facts)
    prev = ", ".join(f"{who}: {what}" for who, what in previous.items()) or "none yet"
    user = "\n\n".join([
        ACTION_HELP,
        RULES,
        "You can only move between these adjacent places:\n" + adjacency,
        EXAMPLE,
        "Current state:\n" + house.describe(),
        f"Previous actions: {prev}",
        f"The team's current goal is to {goal_name}:\ngoal = {', '.join(str(g) for g in goal)}",
        f"Choose your next action given the state and the rules above on a {context_text}. Make sure "
        "the Action Feasibility Rules: Movement Limitation(Critical), Object Location, Carrying Limit "
        "and Appliance Safety are strictly respected.",
    ])
    return (("system", SYSTEM), ("user", user))


def request_context(house: Household, goal: Sequence[Literal], agent: str, feedback: Sequence[str]) -> dict[str, Any]:
    """The structured facts of the prompt (what the offline model reads instead of the text)."""
    spec = house.spec
    return {
        "agent": agent,
        "at": dict(house.at),
        "held": {a: list(h) for a, h in house.held.items()},
        "place": dict(house.place),
        "open": sorted(house.open),
        "on": sorted(house.on),
        "locations": list(spec.locations),
        "adjacent": sorted(sorted(p) for p in spec.adjacent),
        "containers": {n: {"at": c.at, "opens": c.opens, "switches": c.switches,
                           "holds_objects": c.holds_objects, "switch_needs_closed": c.switch_needs_closed}
                       for n, c in spec.containers.items()},
        "goal": [str(g) for g in goal],
        "feedback": list(feedback),
    }


@dataclass
class Call:
    """One LLM call of a decision: the answer, what it was parsed to, and the verdict."""

    answer: str
    action: str
    feasible: bool
    feedback: str = ""
    correction: int = 0  # the correction this call's feedback used (1..3), 0 for none
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Base8Agent:
    """An ad hoc agent whose every action the LLM chooses. One instance per trial."""

    client: Completer
    context_text: str
    name: str = "agent"
    max_corrections: int = MAX_CORRECTIONS
    max_tokens: int = 300
    temperature: float = 0.7  # not stated in the seed; the anticipation prompt's (config prompt.temperature)
    wording: str = "own"  # own | paper (--prompts): the prompt's words
    corrections: int = 0
    calls: list[Call] = field(default_factory=list)
    refused_after_limit: int = 0  # infeasible answers met when no correction was left
    unparseable: int = 0
    llm_errors: int = 0

    def decide(self, house: Household, goal_name: str, goal: Sequence[Literal],
               previous: dict[str, str] | None = None) -> Action | None:
        """The agent's action for this step (feasible), or None (no action, goal achieved, an
        infeasible answer with no correction left, or no answer)."""
        messages = build_messages(house, goal_name, goal, self.context_text, previous or {}, self.name,
                                  self.wording)
        feedback: list[str] = []
        while True:
            context = request_context(house, goal, self.name, feedback)
            context["sample"] = len(self.calls)  # each call is a new draw (as TBP's samples are)
            request = LLMRequest(prompt_type=PROMPT_TYPE, messages=messages, max_tokens=self.max_tokens,
                                 temperature=self.temperature, stop=STOP, context=context, scope=f"base8:{self.name}")
            response = self.client.complete(request)
            if not response.ok:
                self.llm_errors += 1
                log.warning("base8: no answer from the LLM (%s): the agent waits", response.error)
                return None
            answer = parse_action(response.text, self.name)
            call = Call(response.text, "", True, prompt_tokens=response.prompt_tokens,
                        completion_tokens=response.completion_tokens)
            self.calls.append(call)
            if answer.goal_achieved or answer.no_action:
                call.action = "goal_achieved" if answer.goal_achieved else "[]"
                return None
            if answer.action is None:
                self.unparseable += 1
                problem = Infeasible("Possible actions", "it named no action")
                text = "the answer"
            else:
                text = answer.action.text(self.name)
                call.action = text
                found = house.check(self.name, answer.action)
                if found is None:
                    return answer.action
                problem = found
            call.feasible = False
            if self.corrections >= self.max_corrections:
                self.refused_after_limit += 1
                log.info("base8: %s not feasible (%s) and no correction left: the agent waits", text, problem.why)
                return None
            self.corrections += 1
            call.correction = self.corrections
            call.feedback = feedback_text(text, problem)
            feedback.append(call.feedback)
            log.info("base8: %s not feasible (%s): correction %d of %d", text, problem.why, self.corrections,
                     self.max_corrections)
            messages = (messages[0], (messages[1][0], messages[1][1] + "\n\n" + call.feedback))


__all__ = ["ACTIONS", "Base8Agent", "Call", "MAX_CORRECTIONS", "build_messages", "parse_action"]
