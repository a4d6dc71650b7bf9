"""The prompts of LLM-State and of its baselines, in the appendix's layout, in our own words.

Every block is framed by banner lines like the appendix's ("******** current state start
********"); answers are function calls (calls.py parses them). Each builder returns the prompt
text and the structured context it was built from: a real endpoint sees only the text; the
offline stand-in reads the context instead of parsing the text, and the context holds exactly
what the text shows (nothing from the world that the prompt does not print).

One departure from the appendix: its estimator example prints only the rooms, holding, close-to
and current-room lines, while the main text gives the estimator O_t (C(ŝ_t, A_h, O_t)); we show
the whole observation block, object lists included.

`wording="paper"` (`--prompts paper`) sends the appendix's own words instead (paper_prompts.py,
config/llm_state/paper_prompts.yaml) for the three prompts of ours, the ablations and w/o States;
InnerMonologue-W and ProgPrompt, whose prompts the paper does not print, keep this wording.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from task_learning.llm.prompt_templates import check_wording
from task_learning.llm_state import paper_prompts
from task_learning.llm_state.calls import Call, format_action
from task_learning.llm_state.household import Observation
from task_learning.llm_state.state import OpenState

PLAN_LIMIT = 20  # "Make the plan concise and short, less than 20 steps."
# The prompt types of the three calls (config/llm.yaml routes them: openai.selection_prompt_types).
ATTENTION = "llm_state_attention"
ESTIMATOR = "llm_state_estimator"
POLICY = "llm_state_policy"
PROMPT_TYPES = (ATTENTION, ESTIMATOR, POLICY)

def rules(hands: int = 2) -> str:
    """The "Important!" block; the hand rule follows the robot's number of hands."""
    count = {1: "one hand", 2: "two hands"}.get(hands, f"{hands} hands")
    return ("Important!\n"
            "Places and closed containers may hide what you need: look in them.\n"
            "You can only act on (pick up, open, switch on...) an object you are close to.\n"
            f"You have {count}: while {'it holds' if hands == 1 else 'all hold'} something you cannot pick up, "
            "open or switch anything.")


@dataclass(frozen=True)
class HistoryEntry:
    """One executed action and its binary result (A_h of Algorithm 1)."""

    call: Call
    success: bool

    def render(self) -> str:
        return f"{format_action(self.call)}({'Success' if self.success else 'Fail'})"

    def to_list(self) -> list[Any]:
        return [self.call.name, *self.call.args, self.success]


def block(title: str, body: str) -> str:
    return f"******** {title} start ********\n{body}\n******** {title} end ********"


def render_history(history: Sequence[HistoryEntry]) -> str:
    return "[" + ", ".join('"' + h.render() + '"' for h in history) + "]"


def attention_prompt(state: OpenState, obs: Observation, goal: str, *,
                     wording: str = "own") -> tuple[str, dict[str, Any]]:
    context = {"goal": goal, "key_objects": list(state.key_objects), "observation": obs.to_dict()}
    if check_wording(wording) == "paper":
        return paper_prompts.attention(state, obs, goal), context
    text = "\n\n".join([
        block("current state", state.render(with_summary=False) + "\n"),
        block("current observation", obs.render()),
        f"Task goal: {goal}",
        "From the observation, list every object that matters for the task goal, one call per "
        "line:\nadd_related_objects(object)\n\nexample:\nTask goal: slice a tomato\n"
        'add_related_objects("tomato1")\nadd_related_objects("cuttingboard1")\n'
        'add_related_objects("knife2")',
    ])
    return text, context


def estimator_prompt(state: OpenState, history: Sequence[HistoryEntry], obs: Observation, goal: str, *,
                     with_summary: bool = True, with_objects: bool = True,
                     previous: OpenState | None = None, hands: int = 2,
                     wording: str = "own") -> tuple[str, dict[str, Any]]:
    """C(ŝ_t, A_h, O_t). Paper mode (previous None): the whole history and the key objects with
    empty entries. Windowed mode (this project's extension, for long runs): `previous` is the last
    state, shown whole, and `history` only the actions since the window's start (own wording
    only: the paper's estimator reads the whole history)."""
    context = {"goal": goal, "key_objects": list(state.key_objects),
               "history": [h.to_list() for h in history],
               "observation": obs.to_dict(),
               "with_summary": with_summary, "with_objects": with_objects, "hands": hands}
    if check_wording(wording) == "paper":
        if previous is not None:
            raise ValueError("the paper's estimator prompt reads the whole history: no history window with it")
        text, context["observation"] = paper_prompts.estimator(state, render_history(history), obs,
                                                               with_summary=with_summary,
                                                               with_objects=with_objects, hands=hands)
        return text, context
    functions, examples = [], []
    if with_objects:
        functions.append("update_state(object, updated_status)")
        examples += ['update_state("mug1", "on_counter | in_hand")',
                     'update_state("counter1", "in_kitchen | not_movable")']
    if with_summary:
        functions.append('update_reasoning("reasoning process")')
        examples.insert(0, 'update_reasoning("what happened step by step, and why any action failed")')
    skeleton = OpenState(key_objects=list(state.key_objects), entries={k: [] for k in state.key_objects})
    shown = skeleton.render(with_summary=False, with_objects=with_objects)
    if previous is not None:
        shown = previous.render(with_summary=with_summary, with_objects=with_objects)
        for name in state.key_objects:
            if name not in previous.entries and with_objects:
                shown = f"{name}: []\n" + shown
    text = "\n\n".join([
        block("current state", shown + "\n"),
        block("robot actions" if previous is None else "latest robot actions (the state above covers the "
              "earlier ones)", render_history(history)),
        block("current observation", obs.render()),
        rules(hands),
        "Read the robot actions from the first to the last and write the state they leave, with "
        "these functions:\n" + "\n".join(functions) + "\n\nexample:\n" + "\n".join(examples),
    ])
    if previous is not None:
        context["previous_state"] = previous.to_dict()
    return text, context


def policy_prompt(goal: str, obs: Observation, history: Sequence[HistoryEntry], state: OpenState | None, *,
                  with_summary: bool = True, with_objects: bool = True,
                  single_step: bool = False, hands: int = 2, wording: str = "own") -> tuple[str, dict[str, Any]]:
    """The policy G(s_t, O_t, I); state None: the w/o States baseline (observation and history
    only); single_step: InnerMonologue-W's one action per call over a history window (own
    wording under either choice: the paper prints no InnerMonologue prompt)."""
    context: dict[str, Any] = {"goal": goal, "observation": obs.to_dict(),
                               "history": [h.to_list() for h in history], "single_step": single_step,
                               "hands": hands}
    if state is not None:
        shown = state.to_dict()
        if not with_objects:
            shown["objects"] = {}
        if not with_summary:
            shown["summary"] = ""
        context["state"] = shown
    if check_wording(wording) == "paper" and not single_step:
        return paper_prompts.policy(goal, obs, render_history(history), state, with_summary=with_summary,
                                    with_objects=with_objects, hands=hands), context
    parts = [
        block("instruction", "\nThe only functions you may call:\n move(a), pickup(a), placein(a,b), "
              "placeon(a,b), open(a), close(a), switchon(a), switchoff(a), wait()\n"),
        block("response template", "Low-level Action Plan:\n1. move(sink1) (example only)\n"
              "2. pickup(sponge1) (example only)\n3. move(counter2) (example only)\n"
              "4. placeon(sponge1, counter2) (example only)"),
        block("history actions", render_history(history)),
        block("current observation", obs.render()),
    ]
    if state is not None:
        parts.append(block("current state", state.render(with_summary=with_summary, with_objects=with_objects)))
    parts.append(rules(hands))
    bullets = ["- Plan from the current state and observation." if state is not None
               else "- Plan from the observation and the history of actions.",
               "- Give only the next action." if single_step
               else f"- Keep the plan short: fewer than {PLAN_LIMIT} steps.",
               "- Heed the notes in the state." if state is not None else "- Learn from failed actions.",
               "- Search rooms and containers for what you have not found yet.",
               "- When the goal is reached, answer with an empty plan."]
    parts.append(f"Task goal: {goal}\n" + "\n".join(bullets))
    return "\n\n".join(parts), context


def progprompt_prompt(goal: str, obs: Observation, program_steps: Sequence[HistoryEntry],
                      hands: int = 2) -> tuple[str, dict[str, Any]]:
    """ProgPrompt-style: the task as a Python-like program over the primitives and the objects
    seen, continued from the steps run so far (each marked ok or FAILED) after a failure."""
    objects = [o[0] for o in obs.objects]
    header = ("from actions import move, pickup, placein, placeon, open, close, switchon, switchoff, wait\n\n"
              f"objects = {objects!r}\nrooms = {list(obs.rooms)!r}\nholding = {list(obs.holding)!r}\n"
              f"close_to = {list(obs.close_to)!r}\ncurrent_room = {obs.room!r}\n")
    example = ("def put_the_sponge_on_counter():\n    # 1: find the sponge\n    move('sponge1')\n"
               "    # 2: take it to the counter\n    pickup('sponge1')\n    move('counter2')\n"
               "    placeon('sponge1', 'counter2')\n    # done\n")
    done = "\n".join(f"    {h.call.name}({', '.join(repr(a) for a in h.call.args)})  # "
                     f"{'ok' if h.success else 'FAILED'}" for h in program_steps)
    name = "".join(c if c.isalnum() else "_" for c in goal.lower()).strip("_")[:60]
    text = "\n".join([header, "# " + rules(hands).replace("\n", "\n# "), "", example, f"def {name}():", done,
                      "    # continue the program (one call per line, at most "
                      f"{PLAN_LIMIT}); if a step FAILED, work around it"])
    return text, {"goal": goal, "observation": obs.to_dict(),
                  "history": [h.to_list() for h in program_steps], "progprompt": True, "hands": hands}
