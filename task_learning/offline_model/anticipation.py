"""The offline model's answers to the task-anticipation paper's prompts: the day's routine ("anticipation") and
Base8's next action ("base8_action").

NOT a language model. Hand-written household habits, written for this project after reading the
seed's traces, and never adjusted to the validator's verdicts, the experiment's days or the
seeded experience. It reads the request's structured context (the day, its facts, the tasks
done, the task list; for Base8 the state, the goal and the feedback), never a true routine.

Routine: breakfast of the day type; then what the facts suggest (working from home: the
work-station, maybe coffee, maybe lunch; leaving for office: maybe coffee, the bag, lunch; guests:
the table, lunch; no guests: activities, maybe lunch; a snack: snacks), sometimes a snack nobody
asked for, often a cleaning task at the end. Like a real model it sometimes spells a task as the
traces' headers do ("Make Coffee"), names a task outside the list, or repeats a task already done,
so the parser's handling of those has work. Variation is hash-based on the request (the agent's
name among it), so two agents can get different answers, and the same request the same answer.
Above temperature 0 a choice of probability p is taken when the hash is below p; at 0 when p >= 0.5.

Base8: the sound next action of the project's planner (task_learning/anticipation/planner.py) on
the state the prompt gives, except that, like the trace's model, it sometimes names a place that
is not adjacent (moving straight to where it wants to be) when no feedback has warned it yet.
Above temperature 0 every call is a new draw (the request's `sample` index is hashed in).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError
from task_learning.llm.tokens import count_tokens
from task_learning.offline_model.hashing import unit_hash

if TYPE_CHECKING:
    from task_learning.anticipation.household import Household

# Spellings a model might use for a task (the traces' headers); the parser's alias table has them.
SPELLINGS = {
    "Prepare coffee": "Make Coffee",
    "Prepare home work-station": "Prepare Workstation",
    "Prepare breakfast weekday": "Prepare Breakfast for a Weekday",
    "Prepare breakfast weekend": "Prepare Breakfast for a Weekend",
}
OFF_LIST = ("Water the plants", "Take out the trash", "Do the laundry")
SPELLING_RATE = 0.15
OFF_LIST_RATE = 0.08
REPEAT_DONE_RATE = 0.1
SKIP_ADJACENCY_RATE = 0.3


def _chooser(ctx: Mapping[str, Any], temperature: float) -> Callable[[str, float], bool]:
    salt = [str(ctx.get("agent", "")), str(ctx.get("day", "")), ",".join(ctx.get("facts") or ()),
            ",".join(ctx.get("done") or ()), f"{temperature:.3f}"]

    def take(name: str, p: float) -> bool:
        if temperature <= 0:
            return p >= 0.5
        return unit_hash(*salt, name) < p

    return take


def routine(ctx: Mapping[str, Any], temperature: float) -> tuple[list[str], list[str]]:
    """The routine the model answers with (task names as it spells them) and its reasons."""
    take = _chooser(ctx, temperature)
    facts = set(ctx.get("facts") or ())
    weekday = ctx.get("day") == "weekday"
    tasks: list[str] = []
    why: list[str] = []
    tasks.append("Prepare breakfast weekday" if weekday else "Prepare breakfast weekend")
    why.append("The day starts with breakfast.")
    if "working_from_home" in facts:
        if take("coffee_first", 0.3):
            tasks.append("Prepare coffee")
        tasks.append("Prepare home work-station")
        why.append("Working from home, the desk has to be ready for work.")
        if "Prepare coffee" not in tasks and take("coffee", 0.45):
            tasks.append("Prepare coffee")
            why.append("A coffee helps the morning's work.")
    if "leaving_for_office" in facts:
        if take("office_coffee", 0.35):
            tasks.append("Prepare coffee")
        tasks += ["Pack bag", "Prepare lunch"]
        why.append("Before leaving, the bag is packed and a lunch made to take along.")
    if "guests_for_lunch" in facts:
        tasks += ["Prepare table for guests", "Prepare lunch"]
        why.append("Guests come for lunch, so the table is set and lunch cooked.")
    if "no_guests" in facts:
        tasks.append("Prepare activities")
        why.append("A free day calls for something to do.")
        if take("quiet_lunch", 0.6):
            tasks.append("Prepare lunch")
    if "needs_snack" in facts:
        tasks.append("Serve snacks")
        why.append("The human wants a snack.")
    elif take("unasked_snack", 0.3):
        tasks.append("Serve snacks")
        why.append("A snack keeps them going.")
    if "working_from_home" in facts and "Prepare lunch" not in tasks and take("home_lunch", 0.4):
        tasks.append("Prepare lunch")
    if "Prepare lunch" in tasks and take("dishes", 0.55):
        tasks.append("Clean dishes")
        why.append("The dishes are washed after lunch.")
    elif take("clean_kitchen", 0.5):
        tasks.append("Clean kitchen")
        why.append("Finally the kitchen is cleaned so the space stays tidy.")
    return tasks, why


def anticipation_response(request: LLMRequest, prompt_tokens: int) -> LLMResponse:
    ctx = request.context or {}
    if not ctx.get("day"):
        raise ProviderError("offline model: an anticipation request needs context['day']")
    temperature = max(0.0, float(request.temperature or 0.0))
    take = _chooser(ctx, temperature)
    tasks, why = routine(ctx, temperature)
    done = [str(t) for t in ctx.get("done") or ()]
    listed = set(ctx.get("tasks") or ())
    out = [t for t in tasks if t not in done and (not listed or t in listed)]
    if done and take("repeat_done", REPEAT_DONE_RATE):
        out.insert(0, done[-1])
    if out and take("off_list", OFF_LIST_RATE):
        out.insert(min(2, len(out)), OFF_LIST[int(unit_hash(str(ctx.get("agent")), "which") * len(OFF_LIST))])
    out = [SPELLINGS[t] if t in SPELLINGS and take("spell " + t, SPELLING_RATE) else t for t in out]
    text = ", ".join(out) + "\n" + " ".join(why)
    return LLMResponse(text=text, prompt_tokens=prompt_tokens, completion_tokens=count_tokens(text),
                       finish_reason="stop")


def base8_response(request: LLMRequest, prompt_tokens: int) -> LLMResponse:
    from task_learning.anticipation.household import Literal, parse_literal
    from task_learning.anticipation.planner import next_action

    ctx = request.context or {}
    try:
        house = _house(ctx)
        goal: list[Literal] = [parse_literal(str(g)) for g in ctx.get("goal") or ()]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProviderError(f"offline model: a base8_action request needs the state in its context ({exc})") from None
    agent = str(ctx.get("agent") or "agent")
    if all(house.holds(g) for g in goal):
        text = "Every part of the goal holds already: 'goal_achieved'"
    else:
        avoid = [o for a, held in house.held.items() if a != agent for o in held]
        action = next_action(house, agent, goal, adjacent_only=True, avoid=avoid)
        if action is None:
            text = "What is left of the goal is in the human's hands, so I take no action now: []"
        else:
            straight = next_action(house, agent, goal, adjacent_only=False, avoid=avoid)
            salt = [agent, ",".join(f"{k}={v}" for k, v in sorted(house.at.items())), ",".join(ctx.get("goal") or ()),
                    ",".join(sorted(f"{k}:{v}" for k, v in house.place.items()))]
            if float(request.temperature or 0.0) > 0:  # a new draw per call, seeded by the call's index
                salt.append(str(ctx.get("sample", 0)))
            if (not ctx.get("feedback") and straight is not None and straight != action
                    and unit_hash(*salt, "skip adjacency") < SKIP_ADJACENCY_RATE):
                action = straight  # names where it wants to be, not the next place on the way
            text = (f"To work toward {', '.join(ctx.get('goal') or ())}, the next step for me is "
                    f"{action.text(agent)}.\n\nSo, I predict the next action as follows: ['{action.text(agent)}']")
    return LLMResponse(text=text, prompt_tokens=prompt_tokens, completion_tokens=count_tokens(text),
                       finish_reason="stop")


def _house(ctx: Mapping[str, Any]) -> "Household":
    from task_learning.anticipation.household import Container, Household, HouseholdSpec

    containers = {n: Container(n, str(c["at"]), bool(c["opens"]), bool(c["switches"]),
                               bool(c.get("holds_objects", True)), bool(c.get("switch_needs_closed", False)))
                  for n, c in dict(ctx["containers"]).items()}
    spec = HouseholdSpec("<prompt>", tuple(ctx["locations"]), frozenset(frozenset(p) for p in ctx["adjacent"]),
                         containers, dict(ctx["place"]), dict(ctx["at"]), {}, [])
    return Household(spec, dict(ctx["place"]), dict(ctx["at"]), {a: list(h) for a, h in dict(ctx["held"]).items()},
                     set(ctx.get("open") or ()), set(ctx.get("on") or ()))
