"""Operators answer as people do (issue 32): one reading of replies for every front end.

`task_learning.oversight.answers` is what the terminal prompt, `operator --answer` (through the
oversight queue), the Qt panel and the rqt plugin call; these tests hold it to the issue's cases,
then check the front ends that run in-process (terminal prompt, queue, panel, flow) use it.
"""
from __future__ import annotations

import io

import pytest

from task_learning.grounding import analyze_goal
from task_learning.grounding.scene_state import scene_world_state
from task_learning.oversight.answers import (
    goal_sentence_from_words,
    interpret_reply,
    object_noun,
    remaining_s,
    remaining_text,
)
from task_learning.oversight.flow import OversightStatus, OversightSubject, run_oversight
from task_learning.oversight.operator import ScriptedOperator
from task_learning.oversight.pending import QueueOperator
from task_learning.oversight.terminal import format_request, prompt_answer
from task_learning.types import AnswerKind, CandidateSource, ConfirmationRequest, GoalCandidate


def _cand(cid: int, text: str) -> GoalCandidate:
    return GoalCandidate(text=text, score=-0.5, source=CandidateSource.INITIAL, candidate_id=cid)


CANDS = [_cand(3, "the goal is that the mug is in the sink"), _cand(17, "the goal is that the mug is in the cupboard")]
PROPOSAL = ConfirmationRequest("q1", "For a mug in the dish rack is the goal that the mug is in the sink?",
                               object_id="Mug|1", object_description="mug in the dish rack",
                               candidate=CANDS[0], candidates=CANDS)
WORDS = ConfirmationRequest("q2", "For a mug in the dish rack, what is the goal?", object_id="Mug|1",
                            object_description="mug in the dish rack", candidates=CANDS, wants_description=True)


# -- the reading -------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["yes", "Yes.", "y", "yeah", "sure", "ok", "correct", "yes please"])
def test_yes_in_everyday_words(text):
    assert interpret_reply(PROPOSAL, text).answer is AnswerKind.YES


@pytest.mark.parametrize("text", ["no", "No!", "n", "nope", "no thanks", "skip"])
def test_no_in_everyday_words(text):
    assert interpret_reply(PROPOSAL, text).answer is AnswerKind.NO
    assert interpret_reply(WORDS, text).answer is AnswerKind.NO


def test_a_listed_candidate_by_its_number():
    asked = interpret_reply(PROPOSAL, "3")  # the candidate the question is about: a yes
    assert asked.answer is AnswerKind.YES and asked.candidate_id == 3
    other = interpret_reply(PROPOSAL, "#17")  # another one: its sentence, analysed like words
    assert other.answer is AnswerKind.DESCRIPTION and other.description == CANDS[1].text
    assert interpret_reply(WORDS, "number 3").description == CANDS[0].text


def test_a_number_no_candidate_has_is_asked_again_naming_the_listed_ones():
    reply = interpret_reply(PROPOSAL, "5")
    assert reply.answer is None and "#3, #17" in reply.hint and "Unknown word" not in reply.hint


@pytest.mark.parametrize("text", ["maybe", "Maybe?", "I don't know", "dunno", "not sure", "?", "", "   "])
def test_no_answer_is_asked_again_with_what_is_expected(text):
    for request in (PROPOSAL, WORDS):
        reply = interpret_reply(request, text)
        assert reply.answer is None and reply.description == ""
        assert "please" in reply.hint and ("yes or no" in reply.hint or "in words" in reply.hint)


@pytest.mark.parametrize("text", ["yes no", "no yes", "Yes, no.", "yeah nope"])
def test_yes_and_no_at_once_is_asked_again_not_taken_as_a_goal(text):
    """Issue 40: "yes no" was taken as a goal description."""
    for request in (PROPOSAL, WORDS):
        reply = interpret_reply(request, text)
        assert reply.answer is None and "says both yes and no" in reply.hint, reply


def test_a_yes_to_a_question_asking_for_words_is_asked_again():
    reply = interpret_reply(WORDS, "yes")
    assert reply.answer is None and "in words" in reply.hint


def test_plain_words_are_a_description():
    reply = interpret_reply(PROPOSAL, "put it in the recycling bin")
    assert reply.answer is AnswerKind.DESCRIPTION and reply.description == "put it in the recycling bin"
    correction = interpret_reply(PROPOSAL, "no, in the fridge")
    assert correction.answer is AnswerKind.DESCRIPTION and correction.description == "in the fridge"


@pytest.mark.parametrize("words, sentence", [
    ("put it in the recycling bin", "the goal is that the mug is in the recycling bin"),
    ("in the fridge, closed", "the goal is that the mug is in the fridge and the fridge is closed"),
    ("in the fridge and close it", "the goal is that the mug is in the fridge and the fridge is closed"),
    ("it goes in the cupboard", "the goal is that the mug is in the cupboard"),
    ("it is in the cupboard", "the goal is that the mug is in the cupboard"),
    ("it should be on the shelf", "the goal is that the mug is on the shelf"),
    ("move it to the sink", "the goal is that the mug is in the sink"),
    ("on the counter", "the goal is that the mug is on the counter"),
    ("the cupboard", "the goal is that the mug is in the cupboard"),
    ("the mug is in the fridge, closed", "the goal is that the mug is in the fridge and the fridge is closed"),
    ("the goal is that the mug is in the cupboard.", "the goal is that the mug is in the cupboard"),
    ("the fork and the knife are in the drawer", "the goal is that the fork and the knife are in the drawer"),
])
def test_plain_words_become_a_goal_sentence_about_the_object(words, sentence):
    assert goal_sentence_from_words(words, object_noun("mug in the dish rack")) == sentence


def test_plain_words_are_understood_by_the_grammar_in_a_kitchen():
    state = scene_world_state("tidy_kitchen")
    fridge = analyze_goal(goal_sentence_from_words("in the fridge, closed", "milk"), state)
    assert fridge.viable, fridge.mismatches
    assert {str(lit) for lit in fridge.literals} == {"inside(Milk|1, Fridge|1)", "false:open(Fridge|1)"}
    garbage = analyze_goal(goal_sentence_from_words("throw it in the garbage", "apple core"), state)
    assert garbage.viable, garbage.mismatches


def test_every_question_shows_its_remaining_time():
    request = ConfirmationRequest("q3", "?", timeout_s=120.0, deadline=1000.0 + 45.0)
    assert remaining_s(request, now=1000.0) == pytest.approx(45.0)
    assert remaining_text(request, now=1000.0).startswith("45 s left")
    assert remaining_text(ConfirmationRequest("q4", "?", deadline=1000.0 + 150), now=1000.0).startswith("2 min 30 s")
    assert "45 s left" in format_request(request, now=1000.0)


# -- the front ends use it -----------------------------------------------------------------------

def test_the_terminal_asks_again_with_a_hint_and_never_sends_maybe():
    out = io.StringIO()
    got = prompt_answer(WORDS, io.StringIO("maybe\n\nyes\n17\n"), out)
    assert got == (AnswerKind.DESCRIPTION, CANDS[1].text)
    text = out.getvalue()
    assert text.count("please") >= 3 and "not an answer" in text and "An empty answer" in text
    assert prompt_answer(PROPOSAL, io.StringIO("maybe\n"), io.StringIO()) is None  # end of input: no answer


def test_the_queue_refuses_what_is_no_answer_and_resolves_numbers():
    queue = QueueOperator(timeout_s=30.0)
    import threading

    answers = []
    asker = threading.Thread(target=lambda: answers.append(queue.ask(PROPOSAL)))
    asker.start()
    try:
        import time

        deadline = time.monotonic() + 10
        while not queue.pending() and time.monotonic() < deadline:
            time.sleep(0.01)
        listed = queue.pending()[0]
        assert 0 < remaining_s(listed) <= 30.0  # the queue says when it times out
        refused = queue.submit("q1", "description", "maybe", "terminal")
        assert not refused.accepted and "not an answer" in refused.message and queue.pending()
        assert queue.submit("q1", "description", "17", "terminal").accepted
    finally:
        asker.join(10)
    assert answers[0].answer is AnswerKind.DESCRIPTION and answers[0].description == CANDS[1].text


def test_the_flow_turns_plain_words_into_a_goal():
    state = scene_world_state("tidy_kitchen")
    outcome = run_oversight(ranked=[_cand(1, "the goal is that the milk is in the sink")],
                            reselect=lambda _r: None,
                            operator=ScriptedOperator(["no", "in the fridge, closed"]),
                            analyze=lambda s: analyze_goal(s, state),
                            subject=OversightSubject("milk on table", object_id="Milk|1"))
    assert outcome.status is OversightStatus.DESCRIBED and outcome.confirmed_by == "scripted"
    assert outcome.chosen.text == "the goal is that the milk is in the fridge and the fridge is closed"
    assert outcome.counts.words == 1 + 4  # "no", then the operator's own four words


@pytest.mark.slow  # Qt
def test_the_panel_text_box_reads_replies_like_every_front_end(qapp_offscreen):
    from task_learning.oversight.panel import OperatorPanel
    from task_learning.oversight.qt_compat import delete_widget

    class Backend:
        def __init__(self) -> None:
            self.sent: list[tuple[str, str, str]] = []

        def pending(self) -> list[ConfirmationRequest]:
            return [] if self.sent else [WORDS]

        def submit(self, request_id, answer, description="", operator="panel"):
            self.sent.append((request_id, answer, description))
            return type("R", (), {"accepted": True, "message": "ok"})()

    backend = Backend()
    panel = OperatorPanel(backend, poll_ms=0)
    panel.description_edit.setPlainText("maybe")
    panel.send_button.click()
    assert backend.sent == [] and "Not sent" in panel.status_label.text()
    assert "please" in panel.status_label.text()
    panel.description_edit.setPlainText("put it in the recycling bin")
    panel.send_button.click()
    assert backend.sent == [("q2", "description", "put it in the recycling bin")]
    panel.stop()
    delete_widget(panel)


@pytest.fixture
def qapp_offscreen():
    from task_learning.oversight.qt_compat import QApplication

    return QApplication.instance() or QApplication([])


def test_questions_use_the_right_article_and_agreement():
    """Issue 40: "For a plastic cups", "For a eggs", "the paper plates is"."""
    from task_learning.oversight.phrasing import description_question, proposal_question

    goal = "the goal is that the eggs are in the fridge"
    assert proposal_question("eggs on the counter", goal).startswith("For eggs on the counter is the goal that")
    assert proposal_question("plastic cups in the bag", goal).startswith("For plastic cups in the bag is")
    assert proposal_question("apple on the counter", goal).startswith("For an apple on the counter is")
    assert proposal_question("mug in the dish rack", goal).startswith("For a mug in the dish rack is")
    asked = description_question("paper plates in the bag")
    assert asked.startswith("For paper plates in the bag, what is the goal?")
    assert "the paper plates are in the ..." in asked
    assert "the mug is in the ..." in description_question("mug in the dish rack")
    assert goal_sentence_from_words("the cupboard", "paper plates") == \
        "the goal is that the paper plates are in the cupboard"
    assert goal_sentence_from_words("put them in the cupboard", "paper plates") == \
        "the goal is that the paper plates are in the cupboard"
