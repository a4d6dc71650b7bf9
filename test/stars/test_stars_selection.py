"""Selection (ordering, bad answers) and Repair limits, with scripted models."""
from __future__ import annotations

import itertools
import threading

import pytest

from task_learning.errors import TaskLearningError
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.stars import ElicitationSetup, elicit_goal
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.stars.selection import parse_answer, presentation_order, select_goal
from task_learning.testing.mug_example import PaperAnalysis, _response, _t, mug_metadata
from task_learning.types import CandidateSource, GoalCandidate, Mismatch, MismatchKind

TEMPLATES = load_templates()
CTX = GoalContext("tidy kitchen", "kitchen", "mug", "in", "dish rack")


class Answers:
    """Selection model answering from a list (an Exception item: a failed request)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    def complete(self, request):
        self.requests.append(request)
        item = self.answers.pop(0)
        if isinstance(item, Exception):
            return LLMResponse(text="", error=str(item))
        return LLMResponse(text=item, completion_tokens=1)


def cands(*scores):
    return [GoalCandidate(text=f"the goal is that the mug is in place {i}", score=s, candidate_id=i + 1)
            for i, s in enumerate(scores)]


def test_presentation_order_lowest_score_first_ties_by_discovery():
    options = presentation_order(cands(0.9, 0.8, 0.95, 0.8))
    assert [c.candidate_id for c in options] == [2, 4, 1, 3]


@pytest.mark.parametrize("text,count,expected", [
    ("5", 6, 5), (" 5.", 6, 5), ("Answer: 3", 6, 3), ("2. The goal is that ...", 6, 2), ("(4)", 6, 4),
    ("", 6, None), ("   ", 6, None), ("The best goal is number 3", 6, None), ("nine", 6, None),
    ("9", 6, None), ("0", 6, None), ("3.5", 6, None),
])
def test_parse_answer(text, count, expected):
    number, problem = parse_answer(text, count)
    assert number == expected
    assert (problem == "") == (expected is not None)


def test_valid_answer_picks_that_option():
    client = Answers(["2"])
    out = select_goal(client, TEMPLATES, CTX, cands(0.9, 0.8, 0.95))
    assert out.method == "llm" and out.chosen.candidate_id == 1  # option 2 = second lowest
    prompt = client.requests[0].prompt
    assert prompt.index("1. The goal is that the mug is in place 1.") < prompt.index("3. The goal is that the mug is in place 2.")
    assert prompt.rstrip().endswith("Answer:") and client.requests[0].context["options"][0].endswith("place 1")


def test_prose_then_valid_answer_is_asked_once_more():
    client = Answers(["I think the cupboard is best", "3"])
    out = select_goal(client, TEMPLATES, CTX, cands(0.9, 0.8, 0.95))
    assert out.method == "llm_retry" and out.chosen.candidate_id == 3
    assert len(client.requests) == 2
    assert "from 1 to 3, and nothing else" in client.requests[1].prompt
    assert client.requests[0].prompt != client.requests[1].prompt  # a cache cannot replay the bad one


@pytest.mark.parametrize("answers,problem", [
    (["", ""], "empty answer"),
    (["7", "42"], "does not exist"),
    (["maybe", "no idea"], "not an option number"),
    ([RuntimeError("connection refused"), RuntimeError("connection refused")], "request failed"),
])
def test_bad_answers_twice_fall_back_to_highest_score(answers, problem):
    client = Answers(answers)
    out = select_goal(client, TEMPLATES, CTX, cands(0.9, 0.8, 0.95))
    assert out.method == "fallback_highest_score" and out.chosen.candidate_id == 3
    assert len(client.requests) == 2 and len(out.problems) == 2 and problem in out.problems[0]


def test_single_or_no_option_needs_no_call():
    client = Answers([])
    assert select_goal(client, TEMPLATES, CTX, cands(0.7)).method == "single_option"
    assert select_goal(client, TEMPLATES, CTX, []).chosen is None
    assert client.requests == []


class EndlessRepairs:
    """Every goal request gets a brand-new sentence (no branch points); selection answers '1'."""

    def __init__(self):
        self.counter = itertools.count()
        self.requests: list[LLMRequest] = []
        self._lock = threading.Lock()

    def complete(self, request):
        with self._lock:
            self.requests.append(request)
            n = next(self.counter)
        if request.prompt_type == "selection":
            return LLMResponse(text="1")
        return _response([_t(" The", 0.99), _t(" goal", 0.99), _t(f" w{n}", 0.99)])


def test_repair_runs_twice_never_thrice():
    client = EndlessRepairs()

    def unknown(sentence):
        word = sentence.split()[-1]
        return PaperAnalysis(False, [Mismatch(MismatchKind.UNKNOWN_WORD, "unknown", f"No. Unknown word {word}.", word)])

    result = elicit_goal("tidy kitchen", "Mug|1", mug_metadata(), None, "STARS", client,
                         setup=ElicitationSetup(analyzer=unknown))
    types = [r.prompt_type for r in client.requests]
    assert types == ["initial", "repair", "repair"]
    sources = [c.source for c in result.candidates]
    assert sources == [CandidateSource.INITIAL, CandidateSource.REPAIR, CandidateSource.REPAIR]
    assert [c.parent_id for c in result.candidates] == [-1, 1, 2]
    assert client.requests[2].context["feedback"] == "No. Unknown word w1."
    assert result.outcome == "no_viable_goal" and result.chosen is None
    assert result.counts["repairs"] == 2 and result.selection.method == "no_options"


def test_repair_kinds_follow_config_and_unrepairable_are_left():
    client = EndlessRepairs()
    result = elicit_goal("tidy kitchen", "Mug|1", mug_metadata(), None, "STAR", client,
                         setup=ElicitationSetup(analyzer=lambda s: PaperAnalysis(False, [])))  # unviable, no mismatch given
    assert [r.prompt_type for r in client.requests] == ["initial"]
    assert result.outcome == "no_viable_goal"


def test_bad_condition_and_missing_operator_are_clear_errors():
    with pytest.raises(TaskLearningError, match="unknown condition"):
        elicit_goal("t", "Mug|1", mug_metadata(), None, "STARZ", EndlessRepairs())
    with pytest.raises(TaskLearningError, match="needs an operator"):
        elicit_goal("t", "Mug|1", mug_metadata(), None, "STARS+O", EndlessRepairs(),
                    setup=ElicitationSetup(analyzer=lambda s: PaperAnalysis(True)))


def test_dead_endpoint_is_an_outcome_not_a_crash():
    class Dead:
        def complete(self, request):
            return LLMResponse(text="", error="connection refused")

    result = elicit_goal("tidy kitchen", "Mug|1", mug_metadata(), None, "STARS", Dead(),
                         setup=ElicitationSetup(analyzer=lambda s: PaperAnalysis(True)))
    assert result.outcome == "llm_failed" and result.chosen is None
    assert result.counts["failed_requests"] == 1 and "connection refused" in result.errors[0]


def test_empty_model_output_is_no_response():
    class Empty:
        def complete(self, request):
            return LLMResponse(text="", completion_tokens=0)

    result = elicit_goal("tidy kitchen", "Mug|1", mug_metadata(), None, "STARS", Empty(),
                         setup=ElicitationSetup(analyzer=lambda s: PaperAnalysis(True)))
    assert result.outcome == "no_response" and result.candidates == [] and result.chosen is None
    assert result.counts["requests"] == 1 and result.counts["failed_requests"] == 0


def test_grounded_selection_by_sentence_names_the_goal_not_its_position():
    """selection.yaml `grounded_answer: sentence`: the constraint is the options' sentences (the
    server stops at the word that leaves one), the example answers that way, and an answer that
    begins only one option's sentence chooses that option."""
    from dataclasses import replace

    templates = replace(TEMPLATES, selection_grounded_answer="sentence",
                        selection_grounded_example="Question: which?\n1. The goal is that a is b.\nAnswer: The goal is that a is b.")
    options = cands(0.2, 0.5, 0.3)
    texts = [c.text for c in sorted(options, key=lambda c: c.score)]
    model = Answers([" The goal is that the mug is in place 1"])
    outcome = select_goal(model, templates, CTX, options, constrained=True)
    request = model.requests[0]
    assert request.constraint is not None and request.constraint.stop_when_unique
    assert request.constraint.choices == tuple(f" {t[0].upper()}{t[1:]}." for t in texts)
    assert "Answer: The goal is that a is b." in request.prompt and request.max_tokens >= 40
    assert outcome.method == "llm" and outcome.chosen is options[1] and outcome.index == 3
    numbered = Answers([" 2"])
    by_number = replace(TEMPLATES, selection_grounded_answer="number")
    assert select_goal(numbered, by_number, CTX, options, constrained=True).chosen is options[2]
    assert numbered.requests[0].constraint.choices == (" 1", " 2", " 3")
