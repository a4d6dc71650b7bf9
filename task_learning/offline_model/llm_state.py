"""The offline model's answers to LLM-State's three prompts (attention, estimator, policy) and to
its baselines' prompts (prompt types `llm_state_*`).

NOT a language model. A deterministic, hand-written imitation, written by us with the LLM-State paper's task
list at hand (its goal reader knows the phrasings of Table I's tasks, plus a few general ones),
and never tuned against Table I or II: its rules were fixed before any table was run. It reads
only the request's context, which holds exactly what the prompt text shows (goal, observation,
history, state), never the world. Answers are text in the paper's function-call format, parsed
by the same strict parser as a real model's.

How it reasons, so its numbers can be read for what they are:
* attention: adds observed objects whose class the goal needs (the goal's objects, the appliances
  its verbs need, the places where missing objects are usually kept, light switches for lights);
* estimator: replays the whole history once with household rules of thumb (what a successful
  action changes) and, when asked for a summary, explains each failure from what it knows then
  (hands full, not close, container closed, appliance occupied, object not graspable); without
  the summary it gives the effects of successful actions only (the appendix VI-B contrast);
* policy: plans towards the goal from what it believes: the state entries and the summary's notes
  when the prompt has them, plus its own reading of the most recent `IMPLICIT_SPAN` history lines
  (a fixed limit on how much raw history it tracks without a state, chosen before any run).
  That limit is what separates the baselines from LLM-State here: it is a design of this
  stand-in, not evidence that a state helps a language model.
* a goal that names objects ("put the apple1 in the cabinet3", goal literals as text on an
  AI2-THOR world) is about those very objects: another cabinet, or another apple, does not do.
  Table I's goals name classes ("the kitchen cabinets"), where any object of the class does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError
from task_learning.llm.tokens import count_tokens

PROMPT_TYPES = ("llm_state_attention", "llm_state_estimator", "llm_state_policy")
IMPLICIT_SPAN = 10  # history lines the policy tracks by itself (see module docstring)
PLAN_LIMIT = 20
HANDS = 2  # when the prompt does not say
_DIGITS = re.compile(r"\d+$")

# Household common sense (ours): where things are usually kept, which room holds which furniture,
# what opens.
USUAL_PLACES: Mapping[str, tuple[str, ...]] = {
    "milk": ("fridge", "kitchencabinet", "kitchencounter"),
    "juice": ("fridge", "kitchencabinet", "kitchencounter"),
    "breadslice": ("kitchencounter", "kitchencabinet", "fridge"),
    "book": ("bookshelf", "desk", "nightstand", "closet", "sofa", "bed", "coffeetable"),
    "magazine": ("coffeetable", "nightstand", "bookshelf", "sofa", "closet", "desk"),
    "toothbrush": ("bathroomcounter", "bathroomcabinet"),
    "facecream": ("bathroomcounter", "bathroomcabinet"),
    "wineglass": ("kitchencabinet", "kitchentable", "kitchencounter"),
    "computer": ("desk",),
}
USUAL_ROOM: Mapping[str, str] = {
    "fridge": "kitchen", "microwave": "kitchen", "toaster": "kitchen", "kitchentable": "kitchen",
    "kitchencabinet": "kitchen", "kitchencounter": "kitchen", "milk": "kitchen", "juice": "kitchen",
    "breadslice": "kitchen", "wineglass": "kitchen", "bed": "bedroom", "desk": "bedroom",
    "computer": "bedroom", "magazine": "livingroom", "book": "bedroom", "bathroomcabinet": "bathroom",
    "toothbrush": "bathroom", "facecream": "bathroom", "sofa": "livingroom",
}
OPENABLE = ("fridge", "microwave", "kitchencabinet", "bathroomcabinet", "closet", "nightstand",
            "cabinet", "cupboard", "pantry", "drawer", "dishwasher")
SINGLE_SLOT = ("toaster", "microwave")
FIXED = ("lightswitch", "fridge", "microwave", "toaster", "kitchencabinet", "bathroomcabinet", "closet",
         "nightstand", "bookshelf", "kitchentable", "kitchencounter", "bathroomcounter", "desk", "bed",
         "sofa", "coffeetable", "tvstand", "tv", "computer", "chair")
NOUNS = {"toast": "breadslice", "toasts": "breadslice", "bread": "breadslice", "light": "lightswitch",
         "lights": "lightswitch", "cabinets": "kitchencabinet"}


def class_of(name: str) -> str:
    return _DIGITS.sub("", name)


def instance_named(words: str) -> str:
    """"the cabinet3" -> "cabinet3": an object's name written in the goal (goal literals as text
    name the very objects, thor_world.goal_text); "" for a class ("the kitchen cabinets")."""
    text = re.sub(r"^(?:the|a|an|some|all)\s+", "", words.strip().lower())
    return text if re.fullmatch(r"[a-z]+\d+", text) else ""


def noun_class(words: str) -> str:
    """"kitchen table" -> kitchentable, "face cream" -> facecream, "kitchen cabinets" -> kitchencabinet."""
    text = re.sub(r"^(?:the|a|an|some|all)\s+", "", words.strip().lower())
    if re.fullmatch(r"[a-z]+\d+", text):  # an object's name ("chips1"): its class as written
        return class_of(text)
    if text in NOUNS:
        return NOUNS[text]
    joined = re.sub(r"[^a-z]", "", text)
    if joined in NOUNS:
        return NOUNS[joined]
    return joined[:-1] if joined.endswith("s") and not joined.endswith("ss") else joined


# --------------------------------------------------------------------------- goals
@dataclass(frozen=True)
class Subgoal:
    kind: str  # switch_off | switch_on | open | close | place | attr | clear
    cls: str = ""
    room: str = ""  # switch_off: the room class ("" = every room)
    relation: str = ""  # place: ON | IN
    target: str = ""  # place/clear: class of the destination
    attr: str = ""  # place/attr: attribute the object needs (toasted, hot)
    count: int = 1  # clear: 0 = all
    name: str = ""  # the very object when the goal names one ("apple1"): only it will do
    dest: str = ""  # place: the very destination when the goal names one ("cabinet3")


_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def read_goal(goal: str) -> list[Subgoal]:
    """The goal text as subgoals, from a handful of phrasings (the offline model's only grammar).
    Clauses joined by ";" (goal literals as text, llm_state/thor_world.py) are read one by one."""
    text = goal.strip().lower().rstrip(".")
    clauses = [c for c in re.split(r"\s*;\s*", text) if c]
    if len(clauses) > 1:
        return [sub for clause in clauses for sub in read_goal(clause)]
    match = re.fullmatch(r"close (?:the )?(\w+)", text)
    if match:
        return [Subgoal("close", noun_class(match.group(1)), name=instance_named(match.group(1)))]
    match = re.search(r"switch off (all )?(?:the )?lights?(?: in (?:the )?(\w+))?", text)
    if match:
        room = "" if (match.group(2) or "house") == "house" else noun_class(match.group(2))
        return [Subgoal("switch_off", "lightswitch", room=room)]
    match = re.search(r"make (\w+ )?(?:slices? of )?toasts?(?: using (?:the )?toaster)?"
                      r"(?:,? and (?:place|put) them on (?:the )?([\w ]+))?", text)
    if match:
        number = (match.group(1) or "a").strip()
        count = int(number) if number.isdigit() else _NUMBERS.get(number, 1)
        if match.group(2):
            return [Subgoal("place", "breadslice", relation="ON", target=noun_class(match.group(2)),
                            attr="toasted", count=count)]
        return [Subgoal("attr", "breadslice", attr="toasted", count=count)]
    match = re.search(r"heat (?:the |some )?(\w+)", text)
    if match:
        return [Subgoal("attr", noun_class(match.group(1)), attr="hot")]
    match = re.search(r"use (?:the )?(\w+)", text)
    if match:
        return [Subgoal("switch_on", noun_class(match.group(1)))]
    match = re.search(r"empty the (?:surface of )?(?:the )?([\w ]+?),? and (?:place|put) them (?:in|into) "
                      r"(?:the )?([\w ]+)", text)
    if match:
        return [Subgoal("clear", target=noun_class(match.group(2)), cls=noun_class(match.group(1)), count=0)]
    match = re.search(r"take away (\w+) (?:objects|things|items) from (?:the )?([\w ]+)", text)
    if match:
        number = match.group(1)
        count = int(number) if number.isdigit() else _NUMBERS.get(number, 1)
        return [Subgoal("clear", cls=noun_class(match.group(2)), count=count)]
    match = re.search(r"(?:find|get|put|place|bring)\s+(.+?)\s*,?\s*(?:and )?(?:put|place)? ?(?:it |them )?"
                      r"(in|on|into|onto) (?:the |a )?([\w ]+)$", text)
    if match:
        items = re.split(r"\s*(?:,|\band\b)\s*", match.group(1))
        relation = "IN" if match.group(2) in ("in", "into") else "ON"
        target = noun_class(match.group(3))
        out = []
        for item in items:
            item = re.sub(r"^(?:find|get|put|place|bring)\s+", "", item.strip())
            if item and item not in ("it", "them", "put it", "put them", "place them"):
                out.append(Subgoal("place", noun_class(item), relation=relation, target=target,
                                   name=instance_named(item), dest=instance_named(match.group(3))))
        if out:
            return out
    match = re.search(r"open (?:the )?(\w+)", text)
    if match:
        return [Subgoal("open", noun_class(match.group(1)), name=instance_named(match.group(1)))]
    return []


def goal_classes(subgoals: Sequence[Subgoal]) -> set[str]:
    """Every class the goal needs, with the tools and usual places of its objects."""
    out: set[str] = set()
    for sub in subgoals:
        for cls in (sub.cls, sub.target):
            if cls:
                out.add(cls)
                out.update(USUAL_PLACES.get(cls, ()))
        if sub.attr == "toasted":
            out.add("toaster")
        if sub.attr == "hot":
            out.add("microwave")
    return out


# --------------------------------------------------------------------------- beliefs
@dataclass
class Beliefs:
    """What the model holds true about objects: attributes by name and notes on failures."""

    attrs: dict[str, set[str]] = field(default_factory=dict)
    contents: dict[str, list[str]] = field(default_factory=dict)  # appliance -> what was put in
    notes: list[str] = field(default_factory=list)
    narrative: list[str] = field(default_factory=list)

    def add(self, name: str, *values: str) -> None:
        current = self.attrs.setdefault(name, set())
        for value in values:
            for opposite in _OPPOSITES.get(value, ()):
                current.discard(opposite)
            current.add(value)

    def has(self, name: str, value: str) -> bool:
        return value in self.attrs.get(name, set())


_OPPOSITES: Mapping[str, tuple[str, ...]] = {
    "open": ("closed",), "closed": ("open",), "on": ("off",), "off": ("on",),
    "in_hand": ("placed",), "placed": ("in_hand",),
}


def track(history: Sequence[Sequence[Any]], *, explain: bool,
          where: Mapping[str, tuple[str, str]] | None = None, hands: int = HANDS) -> Beliefs:
    """Replay history entries [name, *args, success] with rules of thumb; with `explain`, guess
    why each failed action failed (the summary's reasoning). `where` (name -> (IN|ON, parent), as
    the observation last showed) tells what stands together: moving to a cabinet brings the robot
    close to what is in it."""
    beliefs = Beliefs()
    where = where or {}

    def top(name: str) -> str:
        seen: set[str] = set()
        while name in where and where[name][1] in where and name not in seen:
            seen.add(name)
            name = where[name][1]
        return name

    held: list[str] = []
    near: set[str] = set()
    located: dict[str, str] = {}  # object -> where the robot put it
    for step, entry in enumerate(history, 1):
        name, args, ok = str(entry[0]), [str(a) for a in entry[1:-1]], bool(entry[-1])
        target = args[0] if args else ""
        call = f"{name}({', '.join(args)})"
        if ok:
            beliefs.narrative.append(_narrate(name, args))
            if name == "move":
                group = top(target)
                near = {target, group} | {o for o in where if top(o) == group} \
                    | {o for o, spot in located.items() if spot == target or top(spot) == group}
                if class_of(target) in _ROOM_CLASSES:
                    near = set()
            elif name == "pickup":
                held.append(target)
                beliefs.add(target, "in_hand")
                beliefs.attrs[target].discard("not_graspable")
                located.pop(target, None)
                for kept in beliefs.contents.values():
                    if target in kept:
                        kept.remove(target)
            elif name in ("placein", "placeon") and len(args) == 2:
                obj, dest = args
                if obj in held:
                    held.remove(obj)
                beliefs.add(obj, "placed")
                beliefs.attrs[obj].discard("in_hand")
                beliefs.attrs[obj] = {a for a in beliefs.attrs[obj] if not a.startswith(("in_", "on_"))}
                beliefs.add(obj, ("in_" if name == "placein" else "on_") + dest)
                located[obj] = dest
                near.add(obj)
                if name == "placein":
                    beliefs.contents.setdefault(dest, []).append(obj)
            elif name == "open":
                beliefs.add(target, "open")
            elif name == "close":
                beliefs.add(target, "closed")
            elif name == "switchon":
                if class_of(target) in SINGLE_SLOT:
                    effect = "toasted" if class_of(target) == "toaster" else "hot"
                    for thing in beliefs.contents.get(target, []):
                        beliefs.add(thing, effect)
                else:
                    beliefs.add(target, "on")
            elif name == "switchoff":
                beliefs.add(target, "off")
            continue
        beliefs.narrative.append(f"{call} failed")
        if not explain:
            continue
        reason = _explain(name, args, held, near, beliefs, hands)
        beliefs.narrative[-1] += f": {reason}"
        if step == len(history):
            beliefs.notes.append(f"The last action, {call}, failed: {reason}.")
    return beliefs


_ROOM_CLASSES = ("bedroom", "bathroom", "kitchen", "livingroom", "office", "diningroom", "hallway")


def _narrate(name: str, args: Sequence[str]) -> str:
    verbs = {"move": "moved to {0}", "pickup": "picked up {0}", "placein": "put {0} in {1}",
             "placeon": "put {0} on {1}", "open": "opened {0}", "close": "closed {0}",
             "switchon": "switched on {0}", "switchoff": "switched off {0}", "wait": "waited"}
    return verbs.get(name, name).format(*args, "", "")


def _explain(name: str, args: Sequence[str], held: Sequence[str], near: set[str], beliefs: Beliefs,
             hands: int) -> str:
    """Why an action probably failed, recording what that implies in the beliefs."""
    target = args[0] if args else ""
    if name == "move":
        beliefs.add(target, "not_found")
        return f"{target} has not been seen, so it is probably not there"
    if name in ("pickup", "open", "close", "switchon", "switchoff") and len(held) >= hands:
        return "its hands are full"
    place_target = args[1] if name in ("placein", "placeon") and len(args) == 2 else target
    if place_target not in near and target not in held:
        return f"the robot is not close to {place_target}"
    if name == "pickup":
        beliefs.add(target, "not_graspable")
        return f"{target} cannot be grasped; use another one"
    if name == "placein" and len(args) == 2:
        obj, box = args
        if obj not in held:
            return f"{obj} is not in hand"
        if class_of(box) in OPENABLE and not beliefs.has(box, "open"):
            beliefs.add(box, "closed")
            return f"{box} is probably closed; open it first"
        if class_of(box) in SINGLE_SLOT:
            beliefs.add(box, "full")
            return f"{box} probably holds something already; take it out first"
        return f"{box} may not take {obj}"
    if name == "placeon" and len(args) == 2 and args[0] not in held:
        return f"{args[0]} is not in hand"
    if name == "open":
        beliefs.add(target, "open")
        return f"{target} is probably open already"
    if name == "close":
        beliefs.add(target, "closed")
        return f"{target} is probably closed already"
    if name == "switchon":
        if class_of(target) == "microwave" and beliefs.has(target, "open"):
            return f"{target} must be closed before switching it on"
        beliefs.add(target, "on")
        return f"{target} is probably on already"
    if name == "switchoff":
        beliefs.add(target, "off")
        return f"{target} is probably off already"
    return "unknown cause"


def _summary_text(beliefs: Beliefs, facts: Mapping[str, set[str]]) -> str:
    if not beliefs.narrative:
        return "Nothing has been done yet."
    text = "The robot " + "; then ".join(beliefs.narrative) + "."
    if beliefs.notes:
        text += " " + " ".join(beliefs.notes)
    noted = [f"{name} is {attr}" for name in sorted(facts) for attr in sorted(facts[name])]
    if noted:
        text += " Notes: " + "; ".join(noted) + "."
    return text


def read_summary(summary: str) -> dict[str, set[str]]:
    """The "Notes: a is x; b is y." facts of a summary this model wrote."""
    out: dict[str, set[str]] = {}
    match = re.search(r"Notes: (.*?)\.?$", summary or "")
    if not match:
        return out
    for part in match.group(1).split(";"):
        words = part.strip().split(" is ", 1)
        if len(words) == 2:
            out.setdefault(words[0].strip(), set()).add(words[1].strip())
    return out


# --------------------------------------------------------------------------- answers
def respond(request: LLMRequest) -> LLMResponse:
    ctx = request.context or {}
    kind = request.prompt_type
    if kind == "llm_state_attention":
        text = attention(ctx)
    elif kind == "llm_state_estimator":
        text = estimator(ctx)
    elif kind == "llm_state_policy":
        text = policy(ctx)
    else:
        raise ProviderError(f"offline model: unsupported prompt_type {kind!r}")
    return LLMResponse(text=text, prompt_tokens=count_tokens(request.prompt or ""),
                       completion_tokens=count_tokens(text), finish_reason="stop")


def _q(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def attention(ctx: Mapping[str, Any]) -> str:
    wanted = goal_classes(read_goal(str(ctx.get("goal", ""))))
    known = set(ctx.get("key_objects") or ())
    obs = ctx.get("observation") or {}
    lines = [f"add_related_objects({_q(name)})" for name, _rel, _parent in obs.get("objects", ())
             if class_of(name) in wanted and name not in known]
    return "\n".join(lines)


def estimator(ctx: Mapping[str, Any]) -> str:
    with_summary = bool(ctx.get("with_summary", True))
    with_objects = bool(ctx.get("with_objects", True))
    obs = ctx.get("observation") or {}
    where = {str(n): (str(r), str(p)) for n, r, p in obs.get("objects", ())}
    beliefs = track(ctx.get("history") or [], explain=with_summary, where=where, hands=_hands(ctx))
    previous = ctx.get("previous_state")
    if previous:  # windowed mode: what the earlier state said, then the recent actions on top
        seeded = Beliefs()
        for name, attrs in (previous.get("objects") or {}).items():
            for attr in attrs:
                seeded.add(str(name), str(attr))
        for name, attrs in read_summary(str(previous.get("summary") or "")).items():
            for attr in attrs:
                seeded.add(name, attr)
        for name, attrs in beliefs.attrs.items():
            for attr in attrs:
                seeded.add(name, attr)
        seeded.narrative, seeded.notes = beliefs.narrative, beliefs.notes
        beliefs = seeded
    keys = list(ctx.get("key_objects") or [])
    lines = []
    facts = {k: v for k, v in beliefs.attrs.items() if v}
    if with_summary:
        lines.append(f"update_reasoning({_q(_summary_text(beliefs, facts))})")
    if with_objects:
        for name in keys:
            attrs = sorted(beliefs.attrs.get(name, set()))
            if name == obs.get("room"):
                attrs.append("robot_inside")
            if attrs:
                lines.append(f"update_state({_q(name)}, {_q(' | '.join(attrs))})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the policy
@dataclass
class _World:
    """The policy's picture while planning: where things were seen, what it believes, what it holds."""

    where: dict[str, tuple[str, str]]  # name -> (IN|ON, parent)
    rooms: list[str]
    room: str
    held: list[str]
    near: set[str]
    beliefs: Beliefs
    visited: set[str]
    hands: int = HANDS

    def room_of(self, name: str) -> str:
        seen: set[str] = set()
        while name in self.where and name not in seen:
            seen.add(name)
            name = self.where[name][1]
        return name

    def top(self, name: str) -> str:
        seen: set[str] = set()
        while name in self.where and self.where[name][1] in self.where and name not in seen:
            seen.add(name)
            name = self.where[name][1]
        return name

    def is_open(self, name: str) -> bool:
        if class_of(name) not in OPENABLE:
            return True
        return self.beliefs.has(name, "open")

    def inside(self, box: str) -> list[str]:
        return [n for n, (rel, parent) in self.where.items() if rel == "IN" and parent == box]


class _Planner:
    def __init__(self, world: _World, banned: set[str]) -> None:
        self.w = world
        self.plan: list[str] = []
        self.banned = banned
        self.stop = False  # an exploration step ends the plan: new observations come first

    def emit(self, call: str) -> None:
        self.plan.append(call)

    def goto(self, name: str) -> None:
        if name in self.w.near or name in self.w.held:
            return
        self.emit(f"move({name})")
        self.w.room = self.w.room_of(name)
        top = self.w.top(name)
        self.w.near = {top} | {n for n in self.w.where if self.w.top(n) == top}

    def free_hand(self, keep: str = "") -> None:
        while len(self.w.held) >= self.w.hands:
            drop = next((h for h in self.w.held if h != keep), self.w.held[0])
            surface = next((n for n in sorted(self.w.near) if class_of(n) in _SURFACES), "")
            if not surface:
                surface = next((n for n in self.w.where if class_of(n) in _SURFACES
                                and self.w.room_of(n) == self.w.room), "")
                if not surface:
                    return
                self.goto(surface)
            self.emit(f"placeon({drop}, {surface})")
            self.w.held.remove(drop)
            self.w.where[drop] = ("ON", surface)

    def open(self, box: str) -> None:
        if self.w.is_open(box):
            return
        self.goto(box)
        self.free_hand()
        self.emit(f"open({box})")
        self.w.beliefs.add(box, "open")

    def fetch(self, obj: str) -> None:
        if obj in self.w.held:
            return
        rel, parent = self.w.where.get(obj, ("IN", ""))
        if rel == "IN" and parent in self.w.where and class_of(parent) in OPENABLE:
            self.open(parent)
        self.goto(obj)
        self.free_hand()
        self.emit(f"pickup({obj})")
        self.w.held.append(obj)
        self.w.where.pop(obj, None)

    def put(self, obj: str, relation: str, dest: str) -> None:
        self.fetch(obj)
        if relation == "IN":
            self.open(dest)
        self.goto(dest)
        self.emit(f"{'placein' if relation == 'IN' else 'placeon'}({obj}, {dest})")
        if obj in self.w.held:
            self.w.held.remove(obj)
        self.w.where[obj] = (relation, dest)
        self.w.beliefs.add(obj, "placed")

    # ------------------------------------------------------------------ choosing objects
    def usable(self, name: str) -> bool:
        b = self.w.beliefs
        return not b.has(name, "not_graspable") and f"pickup({name})" not in self.banned

    def known(self, cls: str) -> list[str]:
        names = [n for n in self.w.where if class_of(n) == cls] + [h for h in self.w.held if class_of(h) == cls]
        here = [n for n in names if self.w.room_of(n) == self.w.room]
        return sorted(set(here)) + sorted(set(names) - set(here))

    def known_as(self, cls: str, name: str) -> list[str]:
        """known(cls), or only the object the goal names when it names one."""
        return [n for n in self.known(cls) if not name or n == name]

    def approach(self, name: str) -> None:
        """The goal names an object the robot has not observed: go to it by name and look."""
        if f"move({name})" in self.banned:
            self.stop = True
            return
        self.emit(f"move({name})")
        self.stop = True

    def explore(self, cls: str) -> None:
        """Look where `cls` is usually kept: an unopened container, else an unvisited room."""
        places = USUAL_PLACES.get(cls, ())
        boxes = [n for n in self.w.where if class_of(n) in OPENABLE and not self.w.is_open(n)
                 and f"open({n})" not in self.banned and not self.w.inside(n)]
        ranked = sorted(boxes, key=lambda n: (class_of(n) not in places, self.w.room_of(n) != self.w.room,
                                              places.index(class_of(n)) if class_of(n) in places else 99, n))
        likely = [b for b in ranked if class_of(b) in places]
        unvisited = [r for r in self.w.rooms if r not in self.w.visited and r != self.w.room]
        usual = USUAL_ROOM.get(cls, "")
        unvisited.sort(key=lambda r: (class_of(r) != usual, self.w.rooms.index(r)))
        if likely:
            self.open(likely[0])
        elif unvisited:
            self.emit(f"move({unvisited[0]})")
        elif ranked:
            self.open(ranked[0])
        else:
            self.stop = True  # nowhere left to look: give up
            return
        self.stop = True

    # ------------------------------------------------------------------ subgoals
    def achieve(self, sub: Subgoal) -> bool:
        """Plan towards one subgoal; True when the model believes it holds already."""
        handler = getattr(self, "_" + sub.kind)
        return bool(handler(sub))

    def _switch_off(self, sub: Subgoal) -> bool:
        switches = [n for n in self.known("lightswitch") if not sub.room or class_of(self.w.room_of(n)) == sub.room]
        todo = [s for s in switches if not self.w.beliefs.has(s, "off") and f"switchoff({s})" not in self.banned]
        here = [s for s in todo if self.w.room_of(s) == self.w.room]
        for switch in here + [s for s in todo if s not in here]:
            self.goto(switch)
            self.free_hand()
            self.emit(f"switchoff({switch})")
            self.w.beliefs.add(switch, "off")
        rooms = [r for r in self.w.rooms if (not sub.room or class_of(r) == sub.room)]
        unseen = [r for r in rooms if r not in self.w.visited and r != self.w.room
                  and not any(self.w.room_of(s) == r for s in switches)]
        if unseen:
            self.emit(f"move({unseen[0]})")
            self.stop = True
            return False
        return not todo

    def _switch_on(self, sub: Subgoal) -> bool:
        things = self.known(sub.cls)
        if not things:
            self.explore(sub.cls)
            return False
        if any(self.w.beliefs.has(t, "on") for t in things):
            return True
        self.goto(things[0])
        self.free_hand()
        self.emit(f"switchon({things[0]})")
        self.w.beliefs.add(things[0], "on")
        return False

    def _open(self, sub: Subgoal) -> bool:
        things = self.known_as(sub.cls, sub.name)
        if not things:
            if sub.name:
                self.approach(sub.name)
            else:
                self.explore(sub.cls)
            return False
        if any(self.w.is_open(t) for t in things):
            return True
        self.open(things[0])
        return False

    def _close(self, sub: Subgoal) -> bool:
        todo = [t for t in self.known_as(sub.cls, sub.name) if self.w.beliefs.has(t, "open")
                and f"close({t})" not in self.banned]
        if not todo:
            return True
        self.goto(todo[0])
        self.emit(f"close({todo[0]})")
        self.w.beliefs.add(todo[0], "closed")
        return False

    def _appliance(self, attr: str) -> str:
        cls = "toaster" if attr == "toasted" else "microwave"
        found = self.known(cls)
        if not found:
            self.explore(cls)
            return ""
        return found[0]

    def _treat(self, obj: str, attr: str) -> bool:
        """Make obj toasted/hot with the appliance; False when the plan must stop first."""
        box = self._appliance(attr)
        if not box:
            return False
        for other in self.w.inside(box):
            if other != obj:  # take out what occupies the only slot
                self.goto(box)
                self.free_hand(keep=obj)
                self.emit(f"pickup({other})")
                self.w.held.append(other)
                self.w.where.pop(other, None)
        if self.w.beliefs.has(box, "full") and not self.w.inside(box):
            self.w.beliefs.attrs[box].discard("full")
        if self.w.where.get(obj) != ("IN", box):
            self.put(obj, "IN", box)
        if class_of(box) == "microwave" and not self.w.beliefs.has(box, "closed"):
            self.emit(f"close({box})")
            self.w.beliefs.add(box, "closed")
        self.free_hand()
        self.emit(f"switchon({box})")
        self.w.beliefs.add(obj, attr)
        return True

    def _candidates(self, cls: str, attr: str = "") -> list[str]:
        return [n for n in self.known(cls) if self.usable(n) or n in self.w.held
                or (attr and self.w.beliefs.has(n, attr))]

    def _attr(self, sub: Subgoal) -> bool:
        done = [n for n in self.known(sub.cls) if self.w.beliefs.has(n, sub.attr)]
        if len(done) >= sub.count:
            return True
        todo = [n for n in self._candidates(sub.cls) if n not in done]
        todo.sort(key=lambda n: n not in self.w.held)
        if not todo:
            self.explore(sub.cls)
            return False
        self._treat(todo[0], sub.attr)
        return False

    def _place(self, sub: Subgoal) -> bool:
        dests = self.known_as(sub.target, sub.dest)
        done = [n for n in self.known_as(sub.cls, sub.name) if self.w.where.get(n, ("", ""))[0] == sub.relation
                and class_of(self.w.where[n][1]) == sub.target
                and (not sub.dest or self.w.where[n][1] == sub.dest)
                and (not sub.attr or self.w.beliefs.has(n, sub.attr))]
        if len(done) >= sub.count:
            return True
        if not dests:
            if sub.dest:
                self.approach(sub.dest)
            else:
                self.explore(sub.target)
            return False
        todo = [n for n in self._candidates(sub.cls, sub.attr) if n not in done and (not sub.name or n == sub.name)]
        # toast-like goals: a treated item first, then the one in hand, then any
        todo.sort(key=lambda n: (not (sub.attr and self.w.beliefs.has(n, sub.attr)), n not in self.w.held))
        if not todo:
            self.explore(sub.cls)
            return False
        obj = todo[0]
        if sub.attr and not self.w.beliefs.has(obj, sub.attr):
            if not self._treat(obj, sub.attr):
                return False
            self.fetch_back(obj)
        self.put(obj, sub.relation, dests[0])
        return False

    def fetch_back(self, obj: str) -> None:
        """Take a treated item out of its appliance."""
        self.free_hand()
        self.emit(f"pickup({obj})")
        self.w.held.append(obj)
        self.w.where.pop(obj, None)

    def _clear(self, sub: Subgoal) -> bool:
        tables = self.known(sub.cls)
        if not tables:
            self.explore(sub.cls)
            return False
        on_table = [n for n, (rel, parent) in self.w.where.items() if rel == "ON" and class_of(parent) == sub.cls
                    and class_of(n) not in FIXED]
        moved = [n for n in self.w.beliefs.attrs if self.w.beliefs.has(n, "placed")
                 and not (self.w.where.get(n, ("", ""))[0] == "ON" and class_of(self.w.where[n][1]) == sub.cls)]
        movable = [h for h in self.w.held if class_of(h) not in FIXED] + [n for n in sorted(on_table) if self.usable(n)]
        if sub.count and len(moved) >= sub.count:
            return True
        if not sub.count and not movable:
            return True
        if not movable:
            return True  # nothing it can move is left: it believes it is done
        if sub.target:
            dests = self.known(sub.target)
            if not dests:
                self.explore(sub.target)
                return False
            fill = {d: len(self.w.inside(d)) for d in dests}
            dest, relation = min(dests, key=lambda d: (fill[d], d)), "IN"
        else:
            others = [n for n in self.w.where if class_of(n) in _SURFACES and class_of(n) != sub.cls
                      and self.w.room_of(n) == self.w.room_of(tables[0])]
            if not others:
                return True
            dest, relation = sorted(others)[0], "ON"
        self.put(movable[0], relation, dest)
        self.w.beliefs.add(movable[0], "placed")
        return False


_SURFACES = ("kitchencounter", "kitchentable", "desk", "coffeetable", "bathroomcounter", "bed", "sofa",
             "bookshelf", "tvstand", "nightstand")


def _beliefs_for_policy(ctx: Mapping[str, Any], where: Mapping[str, tuple[str, str]]) -> Beliefs:
    history = list(ctx.get("history") or [])
    beliefs = Beliefs()
    state = ctx.get("state") or {}
    for name, attrs in (state.get("objects") or {}).items():
        for attr in attrs:
            beliefs.add(str(name), str(attr))
    for name, attrs in read_summary(str(state.get("summary") or "")).items():
        for attr in attrs:
            beliefs.add(name, attr)
    recent = track(history[-IMPLICIT_SPAN:], explain=False, where=where, hands=_hands(ctx))
    for name, attrs in recent.attrs.items():
        for attr in attrs:
            beliefs.add(name, attr)
    return beliefs


def _banned(history: Sequence[Sequence[Any]]) -> set[str]:
    """Actions that failed twice within the span the model tracks: it does not try them again."""
    failures: dict[str, int] = {}
    for entry in history[-IMPLICIT_SPAN:]:
        if not entry[-1]:
            call = f"{entry[0]}({', '.join(str(a) for a in entry[1:-1])})"
            failures[call] = failures.get(call, 0) + 1
    return {c for c, n in failures.items() if n >= 2}


def plan_for(ctx: Mapping[str, Any]) -> list[str]:
    history = list(ctx.get("history") or [])
    banned = _banned(history)
    plan = _plan(ctx, banned)
    if history and plan and not history[-1][-1]:
        last = f"{history[-1][0]}({', '.join(str(a) for a in history[-1][1:-1])})"
        if plan[0] == last:
            # it does not start with the action that just failed: it plans again without it
            plan = _plan(ctx, banned | {last})
    return plan[:PLAN_LIMIT]


def _plan(ctx: Mapping[str, Any], banned: set[str]) -> list[str]:
    obs = ctx.get("observation") or {}
    where = {str(n): (str(rel), str(parent)) for n, rel, parent in obs.get("objects", ())}
    held = [str(h) for h in obs.get("holding", ())]
    for h in held:
        where.pop(h, None)
    beliefs = _beliefs_for_policy(ctx, dict(where))
    for name, attrs in beliefs.attrs.items():  # what it put in an appliance, as it remembers it
        for attr in attrs:
            if attr.startswith("in_") and name not in where and name not in held:
                where[name] = ("IN", attr[3:])
    world = _World(where=where, rooms=[str(r) for r in obs.get("rooms", ())], room=str(obs.get("room", "")),
                   held=held, near=set(obs.get("close_to", ())), beliefs=beliefs, visited=set(),
                   hands=_hands(ctx))
    world.visited = {world.room_of(n) for n in where} | {world.room}
    for call in banned:  # failures it remembers teach what a summary would say
        name, _, rest = call.partition("(")
        target = rest.rstrip(")").split(", ")[0]
        if name == "open":
            beliefs.add(target, "open")
        elif name in ("switchoff", "switchon"):
            beliefs.add(target, "off" if name == "switchoff" else "on")
        elif name == "pickup":
            beliefs.add(target, "not_graspable")
    planner = _Planner(world, banned)
    for sub in read_goal(str(ctx.get("goal", ""))):
        # keep planning towards a subgoal while it adds steps (e.g. the next toast)
        for _ in range(PLAN_LIMIT):
            before = len(planner.plan)
            if planner.achieve(sub) or planner.stop or len(planner.plan) == before \
                    or len(planner.plan) >= PLAN_LIMIT:
                break
        if planner.stop or len(planner.plan) >= PLAN_LIMIT:
            break
    return planner.plan


def policy(ctx: Mapping[str, Any]) -> str:
    plan = plan_for(ctx)
    if ctx.get("single_step"):
        plan = plan[:1]
    if ctx.get("progprompt"):
        return "\n".join(f"    {_as_code(step)}" for step in plan)
    return "Low-level Action Plan:\n" + "\n".join(f"{i}. {step}" for i, step in enumerate(plan, 1))


def _as_code(step: str) -> str:
    name, _, rest = step.partition("(")
    args = [a.strip() for a in rest.rstrip(")").split(",") if a.strip()]
    return f"{name}({', '.join(repr(a) for a in args)})"


def _hands(ctx: Mapping[str, Any]) -> int:
    try:
        return max(1, int(ctx.get("hands", HANDS)))
    except (TypeError, ValueError):
        return HANDS
