"""The +O dialogue (the STARS paper §4.4, B.7) and its appendix C counts, with simulated and scripted users."""
from __future__ import annotations

import io

import pytest

from task_learning.oversight.flow import OversightLimits, OversightStatus, OversightSubject, run_oversight
from task_learning.oversight.operator import ScriptedOperator
from task_learning.oversight.phrasing import count_words, goal_sentence, proposal_question
from task_learning.oversight.simulated import SimulatedOperator
from task_learning.oversight.terminal import TerminalOperator
from task_learning.types import AnswerKind, CandidateSource, GoalCandidate, GoalLiteral, Truth

from ..oversight_fixtures import (
    CUPBOARD_CLOSED,
    MUG_PLACE,
    OPENABLE,
    by_score,
    fake_analyze,
    mug_candidates,
    mug_preferences,
)


def mug_user() -> SimulatedOperator:
    return SimulatedOperator(mug_preferences(), closable=OPENABLE)


def test_question_is_phrased_as_in_the_paper():
    assert proposal_question(MUG_PLACE, CUPBOARD_CLOSED) == (
        "For a mug in the dish rack is the goal that the mug is in the cupboard and the cupboard "
        "is closed?")


def test_appendix_c_word_count_examples():
    assert count_words("the goal is that the steak knife is in the dishwasher") == 11
    assert count_words("No.") == 1
    assert count_words("  ") == 0


def test_stars_o_mug_accepts_cupboard_and_closed_with_a_single_yes():
    ranked = mug_candidates()
    assert len(ranked) == 6
    selected = next(c for c in ranked if c.text == CUPBOARD_CLOSED)  # Selection's answer: 5
    user = mug_user()
    outcome = run_oversight(ranked=ranked, reselect=by_score, operator=user, analyze=fake_analyze,
                            selected=selected,
                            subject=OversightSubject(MUG_PLACE, object_id="Mug|1"))
    assert outcome.status is OversightStatus.CONFIRMED
    assert outcome.chosen is selected
    assert outcome.counts.to_dict() == {"instructions": 1, "yes_no": 1, "words": 1, "proposed": 1,
                                        "sourced": 1, "accepted": 1, "descriptions": 0}
    assert [t.text for t in outcome.transcript][:2] == [
        "For a mug in the dish rack is the goal that the mug is in the cupboard and the cupboard "
        "is closed?", "yes"]
    assert len(user.asked) == 1


def test_rejected_option_is_removed_before_reselection():
    """Without Selection's pick, the best-scored option (dish rack) is proposed first, rejected,
    and reselection runs over the remaining five."""
    seen: list[list[str]] = []

    def reselect(options):
        seen.append([c.text for c in options])
        return by_score(options)

    outcome = run_oversight(ranked=mug_candidates(), reselect=reselect, operator=mug_user(),
                            analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE, object_id="Mug|1"))
    assert outcome.chosen is not None and outcome.chosen.text == CUPBOARD_CLOSED
    assert outcome.counts.proposed == 2 and outcome.counts.yes_no == 2 and outcome.counts.words == 2
    assert len(seen[0]) == 6 and len(seen[1]) == 5
    assert "the goal is that the mug is in the dish rack" not in seen[1]
    assert [c.text for c in outcome.rejected] == ["the goal is that the mug is in the dish rack"]


def test_simulated_user_refuses_cupboard_left_open_and_other_places():
    user = mug_user()
    assert user.accepts("Mug|1", [GoalLiteral("inside", ("Mug|1", "Cupboard|1")),
                                  GoalLiteral("open", ("Cupboard|1",), Truth.FALSE)])
    assert not user.accepts("Mug|1", [GoalLiteral("inside", ("Mug|1", "Cupboard|1"))])
    assert not user.accepts("Mug|1", [GoalLiteral("inside", ("Mug|1", "Drawer|1")),
                                      GoalLiteral("open", ("Drawer|1",), Truth.FALSE)])
    assert not user.accepts("Mug|1", [])
    assert user.describe("Mug|1") == CUPBOARD_CLOSED


def test_five_proposals_then_description_counts_per_appendix_c():
    """Scripted: five "no", an unusable description (feedback says why), then a usable one."""
    user = ScriptedOperator(["no", "no", "no", "no", "no",
                             "the mug is in the cabinet",
                             "The goal is that the mug is in the sink."])
    outcome = run_oversight(ranked=mug_candidates(), reselect=by_score, operator=user, analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE, object_id="Mug|1"))
    assert outcome.status is OversightStatus.DESCRIBED
    assert outcome.chosen.source is CandidateSource.USER
    assert outcome.chosen.text == "the goal is that the mug is in the sink"
    assert outcome.chosen.literals == [GoalLiteral("inside", ("Mug|1", "Sink|1"))]
    # 5 yes/no (1 word each) + 6 words + 10 words; 7 instructions; nothing sourced from the LLM.
    assert outcome.counts.to_dict() == {"instructions": 7, "yes_no": 5, "words": 21, "proposed": 5,
                                        "sourced": 0, "accepted": 0, "descriptions": 2}
    asked = user.asked
    assert sum(not r.wants_description for r in asked) == 5
    assert asked[5].wants_description and asked[6].wants_description
    assert "Cannot see a cabinet" in asked[6].question


def test_options_exhausted_before_five_goes_to_description():
    two = mug_candidates()[:2]
    user = ScriptedOperator(["no", "no", "the goal is that the mug is in the drawer and the drawer is closed"])
    outcome = run_oversight(ranked=two, reselect=by_score, operator=user, analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE))
    assert outcome.counts.proposed == 2
    assert outcome.status is OversightStatus.DESCRIBED
    assert outcome.counts.words == 2 + 15  # 15 words in the description


def test_descriptions_are_bounded():
    user = ScriptedOperator(["the mug is in the cabinet"] * 10)
    outcome = run_oversight(ranked=[], reselect=by_score, operator=user, analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE),
                            limits=OversightLimits(max_descriptions=3))
    assert outcome.status is OversightStatus.GAVE_UP and outcome.chosen is None
    assert len(user.asked) == 3


@pytest.mark.parametrize("script", [["timeout"], ["no", "timeout"], ["no"] * 5 + ["timeout"], []])
def test_timeout_never_confirms(script):
    outcome = run_oversight(ranked=mug_candidates(), reselect=by_score, operator=ScriptedOperator(script),
                            analyze=fake_analyze, subject=OversightSubject(MUG_PLACE))
    assert outcome.chosen is None
    assert outcome.status is OversightStatus.TIMEOUT
    assert outcome.counts.sourced == 0


def test_dead_operator_never_confirms():
    class Dead:
        name = "dead"

        def ask(self, request):
            raise ConnectionError("operator node is gone")

    outcome = run_oversight(ranked=mug_candidates(), reselect=by_score, operator=Dead(), analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE))
    assert outcome.chosen is None and outcome.status is OversightStatus.OPERATOR_FAILED
    assert outcome.counts.instructions == 0


def test_yes_to_an_unviable_goal_is_not_used():
    bad = GoalCandidate("the goal is that the mug is in the cabinet", 0.99, candidate_id=9,
                        viable=False, mismatches=fake_analyze(
                            "the goal is that the mug is in the cabinet").mismatches)
    user = ScriptedOperator(["yes", "yes"])
    outcome = run_oversight(ranked=[bad] + mug_candidates(), reselect=by_score, operator=user,
                            analyze=fake_analyze, subject=OversightSubject(MUG_PLACE))
    assert outcome.chosen is not None and outcome.chosen is not bad
    assert any("Cannot see a cabinet" in t.text for t in outcome.transcript)


def test_empty_and_huge_descriptions_are_refused_with_a_reason():
    user = ScriptedOperator(["   ", "x " * 5000, "the goal is that the mug is in the sink"])
    outcome = run_oversight(ranked=[], reselect=by_score, operator=user, analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE))
    assert outcome.status is OversightStatus.DESCRIBED
    assert "empty" in user.asked[1].question
    assert "too long" in user.asked[2].question


def test_duplicate_options_are_proposed_once():
    ranked = mug_candidates()
    dup = GoalCandidate("The goal is that the mug is in the dish rack.", 0.99, candidate_id=20,
                        viable=True)
    outcome = run_oversight(ranked=ranked + [dup], reselect=by_score, operator=ScriptedOperator(["no"] * 7),
                            analyze=fake_analyze, subject=OversightSubject(MUG_PLACE))
    questions = [t.text for t in outcome.transcript if t.speaker == "robot" and "is the goal that" in t.text]
    assert len(questions) == len(set(questions)) == 5


def test_terminal_operator_reads_answers_and_treats_eof_as_no_consent():
    out = io.StringIO()
    user = TerminalOperator(io.StringIO("\nmaybe later\n"), out)
    # "maybe later" is taken as a description; the analyser finds it unusable; then EOF.
    outcome = run_oversight(ranked=[], reselect=by_score, operator=user, analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE))
    assert outcome.chosen is None and outcome.status is OversightStatus.OPERATOR_GONE
    printed = out.getvalue()
    again = run_oversight(ranked=mug_candidates(), reselect=by_score, operator=user, analyze=fake_analyze,
                          subject=OversightSubject(MUG_PLACE))  # the next object: nobody is asked
    assert again.chosen is None and again.status is OversightStatus.OPERATOR_GONE
    assert out.getvalue() == printed
    yes_user = TerminalOperator(io.StringIO("y\n"), io.StringIO())
    outcome = run_oversight(ranked=mug_candidates(), reselect=by_score, operator=yes_user,
                            analyze=fake_analyze, subject=OversightSubject(MUG_PLACE))
    assert outcome.status is OversightStatus.CONFIRMED and outcome.counts.words == 1


def test_goal_sentence_normalises_user_words():
    assert goal_sentence("The mug is in the sink.") == "the goal is that the mug is in the sink"
    assert goal_sentence("the goal is that the mug is in the sink") == \
        "the goal is that the mug is in the sink"
    assert goal_sentence("  ") == ""


def test_questions_and_answers_are_persisted(tmp_path):
    from task_learning.kb.store import KnowledgeBase

    kb = KnowledgeBase(tmp_path / "kb.sqlite")
    run_oversight(ranked=mug_candidates(), reselect=by_score, operator=mug_user(), analyze=fake_analyze, kb=kb,
                  subject=OversightSubject(MUG_PLACE, object_id="Mug|1", task="tidy kitchen"))
    log = kb.question_log()
    assert [row["answer"] for row in log] == [AnswerKind.NO.value, AnswerKind.YES.value]
    first = log[0]
    assert first["object_id"] == "Mug|1" and first["task"] == "tidy kitchen"
    assert first["candidate_text"] == "the goal is that the mug is in the dish rack"
    assert first["operator"] == "simulated" and first["answered_at"] >= first["asked_at"]
    assert first["question"].startswith("For a mug in the dish rack is the goal that")


def test_mug_example_with_real_grounding_and_scene_preferences():
    """The same dialogue on the tidy_kitchen scene: options analysed by the grounding component,
    the simulated user built from the scene's preferred destinations."""
    from task_learning.grounding import analyze_goal
    from task_learning.grounding.scene_state import resolve_object, scene_metadata
    from task_learning.world.scene import load_scene
    from task_learning.world.state import world_state_from_metadata

    from ..oversight_fixtures import MUG_OPTIONS

    scene = load_scene("tidy_kitchen")
    metadata = scene_metadata("tidy_kitchen")
    mug = resolve_object(metadata, "mug in dish rack")
    state = world_state_from_metadata(metadata)
    analyze = lambda sentence: analyze_goal(sentence, state, mug)  # noqa: E731
    ranked = []
    for number, (text, score) in enumerate(MUG_OPTIONS, start=1):
        analysis = analyze(text)
        assert analysis.viable, (text, analysis.mismatches)
        ranked.append(GoalCandidate(text, score, candidate_id=number, viable=True,
                                    literals=list(analysis.literals)))
    ranked.sort(key=lambda c: -c.score)
    user = SimulatedOperator.from_scene(scene)
    selected = next(c for c in ranked if c.text == CUPBOARD_CLOSED)
    outcome = run_oversight(ranked=ranked, reselect=by_score, operator=user, selected=selected,
                            analyze=analyze, subject=OversightSubject(MUG_PLACE, object_id=mug))
    assert outcome.status is OversightStatus.CONFIRMED and outcome.chosen is selected
    assert (outcome.counts.yes_no, outcome.counts.words, outcome.counts.proposed) == (1, 1, 1)
    # Asked to describe it, the simulated user's words ground to the same goal.
    described = analyze(user.describe(mug))
    assert described.viable and set(described.literals) == set(selected.literals)


def test_tbp_o_unanalysed_options_are_analysed_before_the_user_judges_them():
    raw = [GoalCandidate("the goal is that the mug is in the cabinet", 0.95, candidate_id=1),
           GoalCandidate("the goal is that the mug is in the cupboard and the cupboard is closed",
                         0.9, candidate_id=2)]
    outcome = run_oversight(ranked=raw, reselect=by_score, operator=mug_user(), analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE, object_id="Mug|1"))
    assert raw[0].viable is False and raw[0].mismatches  # shown with its mismatch, rejected
    assert outcome.chosen is raw[1] and outcome.counts.proposed == 2 and outcome.counts.sourced == 1


def test_stars_o_replayed_mug_example_simulated_user_single_yes(tmp_path):
    """STARS+O through the stars pipeline on the paper's replayed LLM responses (appendix B), with
    the simulated user preferring the cupboard, closed: one proposal, one yes, one word."""
    from task_learning.llm.client import make_client
    from task_learning.stars import ElicitationSetup, elicit_goal
    from task_learning.testing import mug_example as mug

    cassette = mug.build_mug_cassette(tmp_path / "mug.jsonl")
    user = SimulatedOperator({mug.OBJECT_ID: ["Cupboard|1"]},
                             closable={"Cupboard|1", "Dishwasher|1", "Drawer|1"})
    result = elicit_goal(mug.TASK, mug.OBJECT_ID, mug.mug_metadata(), None, "STARS+O",
                         make_client(f"replay:{cassette}"),
                         setup=ElicitationSetup(analyzer=mug.paper_analysis, operator=user))
    assert result.chosen.text == CUPBOARD_CLOSED
    assert len(user.asked) == 1 and user.asked[0].question == (
        "For a mug in the dish rack is the goal that the mug is in the cupboard and the cupboard "
        "is closed?")
    counts = result.oversight.counts
    assert (counts.proposed, counts.yes_no, counts.words, counts.instructions, counts.sourced) == \
        (1, 1, 1, 1, 1)
    assert len(user.asked[0].candidates) == 6  # the six viable options of B.6 behind the question
