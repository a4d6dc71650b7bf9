"""The offline model's BCR action choices (prompt_type "bcr_selection").

NOT a language model: a deterministic imitation of a zero-shot chat model choosing the next robot
action from the BCR paper's prompt. It reads only what the prompt says (request.context: remaining
goals, completed sub-goals, candidates, previous actions, errors met) plus a little household
common sense (where things are usually kept); never the world state or any ground truth.

Behaviour, so the BCR engines meet realistic answers:
* it favours actions that resolve the latest blocking condition ("needs near(X)" -> go to X,
  "needs visible(X)" -> look around or open where X is usually kept, "No valid positions" ->
  take out what is in the way), actions on the objects of the first remaining goal, and (only
  when the request's context says mode "guarded", this project's extension) actions it has not
  just tried; in mode "paper" it has no repeat penalty;
* it sometimes picks a sibling of the best action (about one decision in eight);
* about one answer in twenty-five names something outside the list (a paraphrase), unless the
  prompt already warns that its last choice was not in the list; then it copies from the list.
The same request always gets the same answer (hash-based, no random state).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.tokens import count_tokens
from task_learning.offline_model.hashing import unit_hash

SIBLING_RATE = 0.12
OFF_LIST_RATE = 0.04
NOISE = 0.6

_ACTION = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$")
_NEEDS = re.compile(r"needs (not )?([a-z_]+)\(([^)]*)\)")
_OBJECT_ID = re.compile(r"[A-Z][A-Za-z]*\|[\w|.+-]+")

# Household common sense: where a thing is usually kept (by AI2-THOR type).
USUAL_PLACES: Mapping[str, tuple[str, ...]] = {
    "Apple": ("Fridge", "Cupboard", "Drawer"),
    "Egg": ("Fridge",),
    "Milk": ("Fridge",),
    "Lettuce": ("Fridge",),
    "Tomato": ("Fridge",),
    "Bread": ("Cupboard", "Pantry", "Fridge"),
    "Mug": ("Cupboard", "Dishwasher"),
    "Cup": ("Cupboard", "Dishwasher"),
    "Plate": ("Cupboard", "Dishwasher"),
    "Bowl": ("Cupboard", "Dishwasher"),
    "Knife": ("Drawer",),
    "ButterKnife": ("Drawer",),
    "Spoon": ("Drawer",),
    "Fork": ("Drawer",),
}
SURFACES = ("CounterTop", "DiningTable", "Desk", "Shelf")


def _type_of(object_id: str) -> str:
    return object_id.split("|", 1)[0]


def _parse(action: str) -> tuple[str, list[str]]:
    match = _ACTION.match(action)
    if not match:
        return action.strip(), []
    return match.group(1), [a.strip() for a in match.group(2).split(",") if a.strip()]


def _latest_needs(errors: Sequence[str]) -> tuple[bool, str, list[str]] | None:
    """The literal the latest blocking condition asks for: (negated, predicate, args)."""
    for text in reversed(errors):
        match = _NEEDS.search(text)
        if match:
            return bool(match.group(1)), match.group(2), [
                a.strip() for a in match.group(3).split(",") if a.strip()]
        if "not in the list" not in text:
            return None
    return None


def _score(cand: str, context: Mapping[str, Any]) -> float:
    verb, args = _parse(cand)
    goals: list[str] = list(context.get("goal") or [])
    errors: list[str] = [str(e) for e in context.get("errors") or []]
    history: list[str] = [str(h) for h in context.get("history") or []]
    score = 0.0
    # 1. what the latest blocking condition asks for
    needs = _latest_needs(errors)
    if needs is not None:
        negated, predicate, need_args = needs
        target = need_args[0] if need_args else ""
        if predicate == "near" and verb == "NavigateToObject" and args[:1] == [target]:
            score += 4.0
        elif predicate == "visible":
            if verb == "NavigateToObject" and args[:1] == [target]:
                score += 3.0
            elif verb == "VisualSearch" and args[:1] == [target]:
                score += 2.6
            elif verb == "OpenObject" and args:
                usual = USUAL_PLACES.get(_type_of(target), ())
                score += 3.2 if _type_of(args[0]) in usual else 1.0
        elif predicate == "holding" and not negated and verb == "PickupObject":
            if args[:1] == [target]:
                score += 4.0
            elif target.startswith("?"):
                score += 3.0
        elif predicate == "hand_empty" and verb == "PutObject" and len(args) == 2:
            score += 3.0 + (0.8 if _type_of(args[1]) in SURFACES[:1] else 0.4)
        elif predicate == "holding" and negated and verb == "PutObject":
            score += 3.0
        elif predicate == "open" and verb == ("CloseObject" if negated else "OpenObject") \
                and args[:1] == [target]:
            score += 4.0
        elif predicate == "switched_on" and verb == ("ToggleObjectOff" if negated
                                                     else "ToggleObjectOn") \
                and args[:1] == [target]:
            score += 4.0
        elif predicate == "inside" and verb == "PutObject" and args == need_args:
            score += 4.0
    latest = errors[-1] if errors else ""
    if "No valid positions" in latest and verb == "PickupObject" and args \
            and args[0] in latest:
        score += 3.5
    if "blocks the view" in latest and verb == "VisualSearch":
        score += 2.0
    # 2. the objects of the first remaining goal matter most
    if goals:
        first = set(_OBJECT_ID.findall(goals[0]))
        rest = set(_OBJECT_ID.findall(" ".join(goals[1:])))
        score += 0.8 * sum(a in first for a in args) + 0.3 * sum(a in rest for a in args)
        for goal in goals[:1]:
            m = re.match(r"(not )?(\w+)\((.*)\)", goal)
            if m and _achieves(verb, args, bool(m.group(1)), m.group(2),
                               [a.strip() for a in m.group(3).split(",")]):
                score += 1.5
    # 3. resume the action that was blocked once something was done about it
    recent = [h.split(" -> ")[0].strip() for h in history]
    outcomes = [h.rsplit(" -> ", 1)[-1].strip() for h in history]
    if len(history) >= 2 and outcomes[-1] == "ok":
        blocked = [a for a, o in zip(recent[:-1], outcomes[:-1]) if o in ("blocked", "failed")]
        if blocked and blocked[-1] == cand:
            score += 3.5
    # stay with the objects of the latest blocked action rather than start something new
    last_blocked = next((a for a, o in zip(reversed(recent), reversed(outcomes))
                         if o in ("blocked", "failed")), "")
    if last_blocked and set(_OBJECT_ID.findall(last_blocked)) & set(args):
        score += 0.8
    # 4. do not repeat what was just done (guarded mode only)
    if context.get("mode", "guarded") != "paper":
        repeats = sum(1 for h in recent if h == cand)
        score -= 1.8 * repeats
        if recent and recent[-1] == cand:
            score -= 1.0
    return score


def _achieves(verb: str, args: list[str], negated: bool, predicate: str,
              goal_args: list[str]) -> bool:
    if predicate in ("inside", "on") and verb == "PutObject":
        return args == goal_args
    if predicate == "switched_on":
        return verb == ("ToggleObjectOff" if negated else "ToggleObjectOn") and args == goal_args
    if predicate == "open":
        return verb == ("CloseObject" if negated else "OpenObject") and args == goal_args
    if predicate == "sliced":
        return verb == "SliceObject" and args == goal_args
    if predicate == "cooked":
        return verb == "CookObject"
    if predicate == "dirty":
        return verb == "CleanObject"
    if predicate == "filled":
        return verb == "FillObject"
    return False


def choose(context: Mapping[str, Any], salt: str = "") -> tuple[str, str]:
    """(answer, one sentence of reasoning) for a BCR context."""
    candidates = [str(c) for c in context.get("candidates") or []]
    if not candidates:
        return "Pass", "There is nothing to choose from."
    key = "\x1e".join([salt, *candidates, *map(str, context.get("history") or []),
                       *map(str, context.get("errors") or []), *map(str, context.get("goal") or [])])
    scored = []
    for cand in candidates:
        noise = NOISE * unit_hash(key, cand)
        scored.append((_score(cand, context) + noise, cand))
    scored.sort(key=lambda item: (-item[0], candidates.index(item[1])))
    best = scored[0][1]
    if len(scored) > 1 and unit_hash(key, "sibling") < SIBLING_RATE:
        best = scored[1][1]
        why = "That could work, but another option looks a little more promising."
    else:
        why = "This addresses what blocked the robot last and moves towards the goal."
    warned = any("not in the list" in str(e) for e in context.get("errors") or [])
    if not warned and unit_hash(key, "off-list") < OFF_LIST_RATE:
        verb, args = _parse(best)
        spoken = " ".join(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", verb).lower().split()[:2])
        return f"{spoken} the {', '.join(_type_of(a).lower() for a in args)}", why
    return best, why


def respond(request: LLMRequest) -> LLMResponse:
    """The offline model's answer to a bcr_selection request, in the `$$ action $$` form."""
    context = request.context or {}
    answer, why = choose(context)
    goals = context.get("goal") or []
    text = (f"The remaining goal is {goals[0] if goals else 'done'}. {why}\n"
            f"$$ {answer} $$")
    return LLMResponse(text=text, prompt_tokens=0, completion_tokens=count_tokens(text),
                       finish_reason="stop")
