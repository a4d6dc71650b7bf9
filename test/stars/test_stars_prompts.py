"""Prompt templates: the paper's structure, the agreed request context, validation errors."""
from __future__ import annotations

import shutil

import pytest

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.types import MismatchKind

CTX = GoalContext("tidy kitchen", "kitchen", "mug", "in", "dish rack")


def test_goal_prompt_structure_and_context():
    t = load_templates()
    req = t.goal_request(CTX, "recurse", " The goal is that the mug is in the cup", scope="Mug|2")
    assert req.prompt.startswith("(EXAMPLES) (TASK) Task name: put away laundry.")
    assert "mug" not in req.prompt.split("(END EXAMPLES)")[0]  # the examples are other tasks
    assert req.prompt.endswith("(TASK) Task name: tidy kitchen. Task context: I am in kitchen.\n"
                               "Aware of mug in dish rack.\n(RESULT) The goal is that the mug is in the cup")
    assert (req.temperature, req.max_tokens, req.logprobs) == (0.0, 50, 5)
    assert set(req.stop) == {"(END RESULT)", ".", "Steps:", "\n"}
    assert dict(req.context) == {
        "task": "tidy kitchen", "location": "kitchen", "object": "mug", "object_place": "dish rack",
        "object_relation": "in", "prefix": " The goal is that the mug is in the cup", "repair_of": "",
        "feedback": "", "system_context": []}
    assert req.scope == "Mug|2"


def test_each_repair_kind_has_its_own_example():
    t = load_templates()
    prompts = {kind: t.goal_prompt(CTX, "", repair_of="the goal is x", feedback="No. Y.", repair_kind=kind)
               for kind in MismatchKind}
    assert len({p.split("(END EXAMPLES)")[0] for p in prompts.values()}) == len(MismatchKind)
    assert "Response: No. Cannot see a toolbox." in prompts[MismatchKind.UNGROUNDED_OBJECT]
    assert "Response: No. Unknown word hamper." in prompts[MismatchKind.UNKNOWN_WORD]
    assert "Response: No. Workbench is not grabbable." in prompts[MismatchKind.AFFORDANCE_MISMATCH]
    for p in prompts.values():
        assert p.endswith("(RESULT) the goal is x (END RESULT)\nResponse: No. Y.\n(RESULT)")
    assert t.feedback_for(MismatchKind.AFFORDANCE_MISMATCH, "", "rack") == "No. Rack is not grabbable."
    assert t.feedback_for(MismatchKind.UNGROUNDED_OBJECT, "No. Cannot see a cabinet.", "x") == "No. Cannot see a cabinet."


def test_selection_prompt_one_shot_and_context():
    t = load_templates()
    ctx = GoalContext("tidy kitchen", "kitchen", "mug", "in", "dish rack", ("Dishware in the dish rack is clean.",))
    req = t.selection_request(ctx, ["the goal is that the mug is in the cupboard", "the goal is that the mug is in the sink"])
    assert req.prompt_type == "selection" and req.prompt.startswith("(CONTEXT) Dishware in the dish rack is clean.")
    assert req.prompt.count("Answer:") == 2 and "Answer: 2." in req.prompt  # the one-shot example
    assert req.prompt.endswith("1. The goal is that the mug is in the cupboard.\n"
                               "2. The goal is that the mug is in the sink.\nAnswer:")
    assert set(req.context) == {"task", "object", "object_place", "options", "system_context"}


@pytest.mark.parametrize("file,old,new,key", [
    ("goal.yaml", "Aware of $object", "Aware of $objekt", "task"),
    ("goal.yaml", "(RESULT)$prefix", "(RESULT)", "task"),
    ("goal.yaml", "logprobs: 5", "logprobs: 0", "request.logprobs"),
    ("repair.yaml", "repair_kinds: [ungrounded_object,", "repair_kinds: [ungrounded,", "repair_kinds[0]"),
    ("repair.yaml", "  uninterpretable:\n    examples:", "  uninterpretible:\n    examples:", "templates.uninterpretible"),
    ("selection.yaml", "style: completion", "style: telepathy", "style"),
])
def test_bad_templates_name_file_and_key(tmp_path, file, old, new, key):
    for name in ("goal.yaml", "repair.yaml", "selection.yaml"):
        shutil.copy(config_path("prompts", name), tmp_path / name)
    text = (tmp_path / file).read_text()
    assert old in text
    (tmp_path / file).write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        load_templates(tmp_path)
    assert file in str(info.value) and key in str(info.value)


def test_the_grounded_framing_is_for_grounded_decoding_only():
    """goal.yaml `grounded_task` / `grounded_examples`: under --decoding grounded the goal prompt
    asks where the object is kept; the papers' prompt (free decoding) is unchanged."""
    from task_learning.stars.prompts import GoalContext, load_templates

    templates = load_templates()
    ctx = GoalContext("store groceries", "kitchen", "yogurt", "in", "bag")
    paper, grounded = templates.goal_prompt(ctx), templates.for_grounded().goal_prompt(ctx)
    assert "kept?" not in paper and paper.endswith("Aware of yogurt in bag.\n(RESULT)")
    assert grounded.endswith("Aware of yogurt in bag.\nWhere is the yogurt kept?\n(RESULT)")
    assert grounded.count("kept?") == 4  # the three examples and the task
