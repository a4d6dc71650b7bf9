"""The prompts of the bootstrapped-productions paper (our own wording, the paper's sections) and the parsing of answers.

Every answer is read as text: the suggested option from its [Option Suggestion] section, the
generalized English rule from [Generalized Rule], the structured rule from a ```json block (parsed
with json.loads and validated by productions.language, never executed), the critic's end
condition and verdicts. Each request also carries `context`: the structured facts its prompt was
built from, which real endpoints never see and the offline model reads instead of parsing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from task_learning.productions.knowledge import GRIPPER, EnvKnowledge
from task_learning.productions.language import describe_language, normalize_effect

SELECTION = "production_selection"
ENGLISH = "production_english"
RULE = "production_rule"
REVISION = "production_revision"
CRITIC = "production_critic"
STATEMENT = "world_statement"
PROMPT_TYPES = (SELECTION, ENGLISH, RULE, REVISION, CRITIC, STATEMENT)
SELECTION_END = "[End]"  # the selection answer's last section (the paper's appendix)

SELECTION_SYSTEM = """You choose the next step of a one-armed household robot in a kitchen.
The robot can hold one object at a time. Its built-in motor actions are: move to <receptacle>,
open <receptacle>, close <receptacle>, pick up <object>, put <object> in/on <receptacle> (it walks
there first), slice <object> (it must hold a knife). It can also attend to a subtask (pushed on its
task stack), or end the current task with special action: done (the task is complete) or special
action: quit (the task is impossible here). Avoid done and quit unless you are absolutely certain.
You will see: [Current Task], [Current Location], [Spatial Knowledge] (receptacles, distance,
whether explored and what they hold), [Object Knowledge], [Previous Tasks] (task: True if done,
False if quit), [Action History] (with the purpose of each step), [Possible Options] (subtasks
marked with their end condition; <parameters> may be filled in), [Blacklisted Options] (never
choose these).
Answer with these sections, in order: [Current Task], [Common Strategies for "<task>"], [Goal
Conditions], [Current Situation Analysis], [Task Analysis], [Plan], [Option Evaluation], [Option
Suggestion] (exactly one option, in double quotes), [Purpose], [End]."""

ENGLISH_INSTRUCTIONS = """Now turn the choice you made into a production rule the robot can reuse
in every similar situation, in four steps:
1. [Relevant Information]: the facts that led to the choice.
2. [Specific Rule]: IF ... AND ... THEN choose <the option>, for this situation.
3. [Generalizable Constants]: which names in it could be other objects or places, and what.
4. [Generalized Rule]: the rule with those constants replaced by <variables>, in the form
   IF the current task is ... AND ... THEN choose ...
Then [Correspondence]: each <variable> and what it is here. If no general rule should be made
from this choice, write "none" as the generalized rule."""

RULE_SYSTEM = """You translate an English production rule into the robot's rule language. A rule
is a JSON object with exactly the fields "name" (short identifier), "task" (the task pattern with
<variables>, e.g. "slice a/an <object>"), "conditions" (a list) and "effect" (one string).
A condition is a string "[not] predicate(arg, ...)" or {"none": [conditions]}. Arguments are
<variables>, bare words (types such as CounterTop) or "quoted text". Positive conditions bind
variables, tried nearest first; a negated one holds when no binding satisfies it. Predicates:
{predicates}
The effect is "motor action: <action>", "attend to subtask: <task>", "special action: done" or
"special action: quit", with <variables> bound by the task or the conditions. World knowledge
(knows) is only about kinds of things, never about one particular object or place."""

RULE_INSTRUCTIONS = """Write the rule in four steps:
1. [Variable Bindings]: the variables needed and how each gets its value.
2. [Precondition Relation]: which variables each part of the IF relates to.
3. [Precondition Test]: which predicate tests each part.
4. [Rule Implementation]: the rule as one JSON object in a ```json block."""

REVISION_INSTRUCTIONS = """The rule was replayed on the state it was made for. Answer with
[Error Interpretation], [Error Attribution], [Things to Change] and [Rule Implementation] (the whole
corrected rule as one JSON object in a ```json block)."""

CRITIC_SYSTEM = """You review the production rules a robot learned for one family of tasks."""


@dataclass
class SelectionAnswer:
    option: str
    purpose: str
    text: str


def format_spatial(env: EnvKnowledge) -> list[str]:
    lines = []
    held = env.held
    lines.append(f"* (0.0 meters away) {GRIPPER}(Gripper) has "
                 + (", ".join(f"{h}({env.type_of(h)})" for h in held) + ", and nothing else" if held else "nothing"))
    for name in env.receptacle_names():
        r = env.receptacles[name]
        where = f"* ({r.distance:.1f} meters away) {name}({r.type})"
        if not r.explored:
            lines.append(f"{where} has not been explored" + (" (closed)" if r.openable and not r.is_open else ""))
            continue
        contents = env.contents(name)
        state = "fully explored" if not r.openable or r.is_open else "explored"
        lines.append(f"{where} has been {state}: " + (
            "it has " + ", ".join(f"{c}({env.type_of(c)})" for c in contents) + ", and nothing else"
            if contents else "it is empty"))
    return lines


def format_objects(env: EnvKnowledge) -> list[str]:
    lines = []
    for name in sorted(env.receptacles):
        r = env.receptacles[name]
        if r.openable:
            lines.append(f"* {name}({r.type}): {'opened' if r.is_open else 'closed'}")
    for name in sorted(env.objects):
        t = env.objects[name]
        state = ", sliced" if t.sliced else ""
        lines.append(f"* {name}({t.type}) at {t.location or 'unknown'}{state}")
    return lines


def selection_user_prompt(task: str, env: EnvKnowledge, history: Sequence[Any], options: Sequence[str],
                          subtasks: Sequence[tuple[str, str]], blacklist: Sequence[str]) -> str:
    """The action-selection user prompt (the bootstrapped-productions paper appendix layout)."""
    out = [f"[Current Task] {task}", "", f"[Current Location] in front of {env.location or 'the room'}", "",
           "[Spatial Knowledge]", *format_spatial(env), "", "[Object Knowledge]", *format_objects(env), "",
           "[Previous Tasks]"]
    out += [f"* {t}: {ok}" for t, ok in env.previous_tasks.items()] or ["* none"]
    out += ["", "[Action History]"]
    out += [f"* (time {h.time}) {h.effect} (purpose: {h.purpose})" + (f" [failed: {h.error}]" if h.error else "")
            for h in list(history)[-25:]] or ["* none"]
    out += ["", "[Possible Options]"]
    out += [f"* attend to subtask: {pattern} (Apply anytime. End condition: {end})" for pattern, end in subtasks]
    out += [f"* {o}" for o in options]
    out += ["* special action: 'done'", "* special action: 'quit'", "", "[Blacklisted Options]"]
    out += [f"* {b}" for b in blacklist] or ["* none"]
    return "\n".join(out)


def section(text: str, name: str) -> str:
    """The body of `[name]` up to the next `[...]` heading ('' when absent)."""
    found = re.search(r"\[" + re.escape(name) + r"\]\s*(.*?)(?=\n\s*\[[A-Z][^\]]*\]|\Z)", text, re.DOTALL)
    return found.group(1).strip() if found else ""


def parse_selection(text: str) -> SelectionAnswer | None:
    body = section(text, "Option Suggestion")
    quoted = re.search(r'"([^"\n]+)"', body) or re.search(r"“([^”\n]+)”", body)
    option = quoted.group(1) if quoted else body.splitlines()[0] if body else ""
    option = re.sub(r"^[*-]\s+", "", option.strip())  # an option written as [Possible Options] lists it
    if not option.strip():
        return None
    return SelectionAnswer(normalize_effect(option), section(text, "Purpose"), text)


# What the instructions ask a generalized rule to be: "IF the current task is ... THEN choose ...",
# with its dots filled in. A sentence without IF ... THEN, or one that keeps the instructions' dots
# or their "<variables>" wording, was copied from the prompt (measured with the 270M base model),
# not written as a rule.
_RULE_FORM = re.compile(r"\bIF\b.+\bTHEN\b.+", re.IGNORECASE)
_COPIED = ("...", "\u2026", "replaced by <variables>")


def parse_generalized_rule(text: str) -> str:
    """The [Generalized Rule] sentence; '' when the answer says none or gives no rule in the asked
    form (see _RULE_FORM)."""
    body = " ".join(section(text, "Generalized Rule").split())
    if body.strip(" .\"'").lower() in ("", "none"):
        return ""
    return body if _RULE_FORM.search(body) and not any(c in body for c in _COPIED) else ""


def rule_system_prompt() -> str:
    return RULE_SYSTEM.replace("{predicates}", describe_language())


def critic_prompt(family: str, rules: Sequence[tuple[str, str, str]]) -> str:
    lines = [f"[Task Family] {family}", "", "[Production Rules]"]
    lines += [f"* {name}: {english} (effect: {effect})" for name, english, effect in rules]
    lines += ["", "First read the rules whose effect is special action: done and summarise the end condition "
              "of this task family in one sentence under [End Condition]. Then under [Rule Review] give "
              "one line per rule: '<name>: keep', '<name>: remove', or '<name>: modify: <new English rule>'."]
    return "\n".join(lines)


@dataclass
class CriticAnswer:
    end_condition: str
    verdicts: dict[str, tuple[str, str]]  # name -> (keep|remove|modify, new English)


def parse_critic(text: str) -> CriticAnswer:
    end = " ".join(section(text, "End Condition").split())
    verdicts: dict[str, tuple[str, str]] = {}
    for line in section(text, "Rule Review").splitlines():
        found = re.match(r"^\s*[*\-]?\s*([A-Za-z0-9_.\-]+)\s*:\s*(keep|remove|modify)\s*(?::\s*(.*))?$", line.strip(),
                         re.IGNORECASE)
        if found:
            verdicts[found.group(1)] = (found.group(2).lower(), (found.group(3) or "").strip())
    return CriticAnswer(end, verdicts)


def parse_truth(text: str) -> bool | None:
    word = text.strip().strip(".").split()[0].lower() if text.strip() else ""
    return {"true": True, "yes": True, "false": False, "no": False}.get(word)
