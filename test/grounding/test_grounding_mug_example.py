"""The STARS paper appendix B.4: the 13 responses of the mug example get exactly the paper's verdicts, in
tidy_kitchen with the mug in the dish rack in context (core, in process)."""
from __future__ import annotations

import pytest
import yaml

from task_learning.grounding import GroundingKnowledge, analyze_goal
from task_learning.grounding.scene_state import resolve_object, scene_metadata
from task_learning.types import MismatchKind
from task_learning.world.state import world_state_from_metadata
from test.shared_paths import MUG_REFERENCE

REFERENCE = MUG_REFERENCE


def expected_verdicts() -> list[tuple[str, str, str]]:
    """(sentence, kind or 'viable', subject/detail) from the transcribed appendix B.4."""
    data = yaml.safe_load(REFERENCE.read_text())["analysis"]
    rows = [(text, "viable", "") for text in data["viable"]]
    rows += [(text, "uninterpretable", "") for text in data["uninterpretable"]]
    rows += [(d["text"], "unknown_word", d["word"]) for d in data["unknown_word"]]
    rows += [(d["text"], "ungrounded_object", d["object"]) for d in data["ungrounded_object"]]
    rows += [(d["text"], "affordance_mismatch", d["detail"]) for d in data["affordance_mismatch"]]
    return rows


@pytest.fixture(scope="module")
def kitchen():
    metadata = scene_metadata("tidy_kitchen")
    mug = resolve_object(metadata, "mug in dish rack")
    return world_state_from_metadata(metadata), mug


def test_reference_has_the_13_responses():
    rows = expected_verdicts()
    assert len(rows) == 13
    assert sorted(r[1] for r in rows).count("viable") == 4


@pytest.mark.parametrize("sentence,kind,what", expected_verdicts())
def test_mug_example_classification(kitchen, sentence, kind, what):
    state, mug = kitchen
    analysis = analyze_goal(sentence, state, mug)
    if kind == "viable":
        assert analysis.viable, analysis.mismatches
        assert analysis.mismatches == []
        assert analysis.literals
        assert all(mug in lit.args for lit in analysis.literals if lit.predicate == "inside")
        return
    assert not analysis.viable
    assert analysis.literals == []
    assert {m.kind for m in analysis.mismatches} == {MismatchKind(kind)}
    first = analysis.mismatches[0]
    if kind == "unknown_word":
        assert first.subject == what
        assert first.feedback == f"No. Unknown word {what}."
    elif kind == "ungrounded_object":
        assert first.subject == what
        assert first.feedback == f"No. Cannot see a {what}."
    elif kind == "affordance_mismatch":
        assert first.detail == what


def test_paper_feedback_sentences(kitchen):
    """B.5: the three repair feedback lines, word for word."""
    state, mug = kitchen
    base = "the goal is that the mug is in the "
    assert analyze_goal(base + "cabinet and the cabinet is closed", state, mug).feedback \
        == "No. Cannot see a cabinet."
    assert analyze_goal(base + "dishwasher and the dishwasher is started", state, mug).feedback \
        == "No. Unknown word started."
    assert analyze_goal(base + "dish rack and the dish rack is in the cupboard", state, mug).feedback \
        == "No. Rack is not grabbable."


def test_viable_literals_use_the_mug_in_context(kitchen):
    state, mug = kitchen
    by_id = state.by_id()
    assert by_id[mug].parent_receptacles == ["DishRack|1"]
    analysis = analyze_goal("the goal is that the mug is in the cupboard and the cupboard is closed",
                            state, mug)
    cupboard = next(o.object_id for o in state.objects if o.object_type == "Cupboard")
    assert [str(lit) for lit in analysis.literals] == [f"inside({mug}, {cupboard})",
                                                       f"false:open({cupboard})"]


def test_knowledge_is_loaded_once():
    assert GroundingKnowledge.load() is GroundingKnowledge.load()
