"""The LLM-State paper's prompts in the paper's own words (`--prompts paper`): Appendix VI-A, Listings 3-5.

The fixed text lives in config/llm_state/paper_prompts.yaml, quoted exactly; this module fills its
slots with the same renderings the project's prompts use (the state block's body, the
observation, the action history) and returns the text and the structured context, like
prompts.py. Where the paper's prompt shows less, the context holds less too: Listing 4 gives the
estimator only the rooms, what is held, what is close and the current room, so its context's
object, container and surface lists are empty (the offline stand-in reads the context and must
not see what the prompt does not show).

Methods: ours as printed; the ablations drop the part they ablate (w/o Summary: the reasoning
function, its example and the state's "Reasoning:"; w/o Objects: the update_state lines and the
object entries); w/o States gets Listing 5 without its current-state block (the paper: "we
directly prompt the observations and action history to the LLM"). The paper prints no prompt for
InnerMonologue-W or ProgPrompt: those keep the project's wording under either choice.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path
from task_learning.inputs.schema import Schema, invalid, load_model
from task_learning.llm.prompt_templates import drop_block, fill, slots
from task_learning.llm_state.household import Observation
from task_learning.llm_state.state import OpenState

# The estimator's observation as Listing 4 prints it: these lines of the observation only.
ESTIMATOR_OBSERVATION = ("Room List:", "Current Holding:", "You are closed to:", "Current Room:")


@dataclass(frozen=True)
class TaggedLine:
    part: str  # objects | summary: the state part it writes
    text: str


@dataclass(frozen=True)
class PaperPrompts:
    source: str
    attention: str
    estimator: str
    estimator_functions: tuple[TaggedLine, ...]
    estimator_examples: tuple[TaggedLine, ...]
    policy: str
    rules: str
    hands_rule: dict[int, str]

    def rules_for(self, hands: int) -> str:
        if hands not in self.hands_rule:
            raise ConfigError(self.source, "hands_rule", f"no sentence for {hands} hand(s) "
                                                         f"(known: {', '.join(map(str, sorted(self.hands_rule)))})")
        return fill(self.rules, {"hands_rule": self.hands_rule[hands]})


def default_path() -> Path:
    return config_path("llm_state", "paper_prompts.yaml")


def _hands(count: Any) -> Any:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise invalid("expected a number of hands (1, 2, ...)")
    return count


class TaggedLineDoc(Schema):
    part: Literal["objects", "summary"]
    text: str


class PaperPromptsDoc(Schema):
    """paper_prompts.yaml: the templates with the slots each may use."""

    attention: Annotated[str, slots(("state", "observation", "goal"))]
    estimator: Annotated[str, slots(("state", "history", "observation", "rules", "functions", "examples"))]
    estimator_functions: list[TaggedLineDoc]
    estimator_examples: list[TaggedLineDoc]
    policy: Annotated[str, slots(("history", "observation", "state", "rules", "goal"))]
    rules: Annotated[str, slots(("hands_rule",))]
    hands_rule: dict[Annotated[int, BeforeValidator(_hands)], str]  # hands -> the sentence


@functools.lru_cache(maxsize=4)
def load_paper_prompts(path: str | None = None) -> PaperPrompts:
    """Read and check the file (cached: it is read once per process)."""
    file = Path(path) if path else default_path()
    doc = load_model(PaperPromptsDoc, file)
    return PaperPrompts(
        source=str(file),
        attention=doc.attention,
        estimator=doc.estimator,
        estimator_functions=tuple(TaggedLine(t.part, t.text) for t in doc.estimator_functions),
        estimator_examples=tuple(TaggedLine(t.part, t.text) for t in doc.estimator_examples),
        policy=doc.policy,
        rules=doc.rules,
        hands_rule=dict(doc.hands_rule),
    )


def _parts(with_summary: bool, with_objects: bool) -> set[str]:
    return {p for p, on in (("summary", with_summary), ("objects", with_objects)) if on}


def estimator_observation(obs: Observation) -> tuple[str, dict[str, Any]]:
    """Listing 4's observation lines and the context that holds exactly them."""
    lines = [ln for ln in obs.render().split("\n") if ln.startswith(ESTIMATOR_OBSERVATION)]
    shown = obs.to_dict() | {"objects": [], "containers": [], "surfaces": []}
    return "\n".join(lines), shown


def attention(state: OpenState, obs: Observation, goal: str) -> str:
    prompts = load_paper_prompts()
    return fill(prompts.attention, {"state": state.render(with_summary=False), "observation": obs.render(),
                                    "goal": goal})


def estimator(state: OpenState, history_text: str, obs: Observation, *, with_summary: bool, with_objects: bool,
              hands: int) -> tuple[str, dict[str, Any]]:
    """The text (the state shown as the key objects with empty entries, as Listing 4) and the
    observation the context may hold."""
    prompts = load_paper_prompts()
    parts = _parts(with_summary, with_objects)
    skeleton = OpenState(key_objects=list(state.key_objects), entries={k: [] for k in state.key_objects})
    observation, shown = estimator_observation(obs)
    text = fill(prompts.estimator, {
        "state": skeleton.render(with_summary=False, with_objects=with_objects),
        "history": history_text,
        "observation": observation,
        "rules": prompts.rules_for(hands),
        "functions": "\n".join(f.text for f in prompts.estimator_functions if f.part in parts),
        "examples": "\n".join(e.text for e in prompts.estimator_examples if e.part in parts),
    })
    return text, shown


def policy(goal: str, obs: Observation, history_text: str, state: OpenState | None, *, with_summary: bool,
           with_objects: bool, hands: int) -> str:
    prompts = load_paper_prompts()
    text = fill(prompts.policy, {
        "history": history_text,
        "observation": obs.render(),
        "state": "" if state is None else state.render(with_summary=with_summary, with_objects=with_objects),
        "rules": prompts.rules_for(hands),
        "goal": goal,
    })
    return drop_block(text, "current state") if state is None else text

