"""Task anticipation (the task-anticipation paper): the golden traces (Examples 01 and 02) and bad answers.

The LLM's answers are the traces' own texts, served by a scripted completer: these tests check the
parser, the validator against the seeded experience and the merge, not any model."""
from __future__ import annotations

import logging

import pytest

from task_learning.anticipation.anticipator import Anticipator
from task_learning.anticipation.config import load_anticipation_config
from task_learning.anticipation.context import parse_context
from task_learning.anticipation.experience import Experience, record_day, seed_experience
from task_learning.anticipation.parser import parse_answer
from task_learning.anticipation.validator import merge
from task_learning.errors import ConfigError
from task_learning.kb.store import KnowledgeBase
from task_learning.llm.base import LLMRequest, LLMResponse

EXAMPLE_01_ANSWER = (
    "Prepare breakfast weekday, Prepare home work-station, Serve snacks, Clean kitchen\n"
    "Since the human is working from home, the first task is to prepare breakfast to fuel their day. "
    "Next, setting up the home work-station is essential for a productive work environment.\n\n"
    "As they need a snack, serving snacks follows to keep them energized. Finally, cleaning the "
    "kitchen ensures the space remains tidy and conducive to work.")
EXAMPLE_02_AGENT_1 = "Prepare breakfast weekend, Prepare table for guests, Prepare lunch, Serve snacks"
EXAMPLE_02_AGENT_2 = ("Prepare breakfast weekend, Prepare table for guests, Prepare lunch, Serve snacks, "
                      "Clean dishes")


class Scripted:
    """A completer answering from a list, recording each request."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(text=self.answers.pop(0), prompt_tokens=100, completion_tokens=20)


@pytest.fixture(scope="module")
def cfg():
    return load_anticipation_config()


@pytest.fixture()
def experience(cfg, tmp_path):
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb:
        assert seed_experience(kb, cfg) == len(cfg.experience)
        assert seed_experience(kb, cfg) == 0  # once
        return Experience.from_kb(kb)


def test_example_01_drops_clean_kitchen(cfg, experience, caplog):
    llm = Scripted(EXAMPLE_01_ANSWER)
    agent = Anticipator(llm, cfg, experience, agent="agent1")
    ctx = parse_context("a weekday the human is working from home and need a snack", cfg)
    with caplog.at_level(logging.INFO, logger="task_learning.anticipation.validator"):
        result = agent.anticipate(ctx)
    assert result.proposed == ["Prepare breakfast weekday", "Prepare home work-station", "Serve snacks",
                               "Clean kitchen"]
    assert result.kept == ["Prepare breakfast weekday", "Prepare home work-station", "Serve snacks"]
    assert [d["task"] for d in result.dropped] == ["Clean kitchen"]
    assert result.dropped[0]["reason"].startswith("rarely done in such a routine: Clean kitchen followed "
                                                  "Serve snacks in 1 of 5 past routines")
    assert "dropped 'Clean kitchen'" in caplog.text
    assert result.issues == {"unknown_names": 0, "duplicates": 0, "already_done": 0, "empty_answer": 0,
                             "unseen_context": 0, "llm_error": 0}
    # the prompt has the paper's parts in order
    (_, system), (_, user) = llm.requests[0].messages
    assert "only tasks from the task list" in system
    assert user.startswith("Task List: [Prepare breakfast weekday, Prepare coffee, Prepare home work-station,")
    assert user.index("Example1: Complete the following routine on a ") < user.index("Example2: ")
    assert user.endswith("Complete the following routine on a weekday the human is working from home and "
                         "need a snack: []")


def test_example_02_two_agents_different_answers_different_lists(cfg, experience):
    ctx = parse_context("weekend, having guests for lunch", cfg)
    first = Anticipator(Scripted(EXAMPLE_02_AGENT_1), cfg, experience, agent="agent1").anticipate(ctx)
    second = Anticipator(Scripted(EXAMPLE_02_AGENT_2), cfg, experience, agent="agent2").anticipate(ctx)
    assert first.kept == ["Prepare breakfast weekend", "Prepare table for guests", "Prepare lunch"]
    assert second.kept == ["Prepare breakfast weekend", "Prepare table for guests", "Prepare lunch", "Clean dishes"]
    for result in (first, second):
        assert [d["task"] for d in result.dropped] == ["Serve snacks"]
        assert result.dropped[0]["reason"].startswith("never done after Prepare lunch in such a routine")


def test_merge_puts_assigned_first(cfg):
    assert merge(["Prepare coffee"], ["Prepare breakfast weekday", "Prepare coffee", "Serve snacks"],
                 done=["Prepare breakfast weekday"]) == ["Prepare coffee", "Serve snacks"]


def test_trace_spellings_and_brackets_parse(cfg):
    parsed = parse_answer("Here is the routine:\n['Prepare Breakfast for a Weekday', \"Make Coffee\", "
                          "Prepare Workstation]\nbecause", cfg)
    assert parsed.tasks == ["Prepare breakfast weekday", "Prepare coffee", "Prepare home work-station"]


def test_bad_answers_are_handled_and_counted(cfg, experience):
    ctx = parse_context("weekday, working from home", cfg)
    answer = ("Prepare breakfast weekday, Water the plants, Prepare coffee, prepare COFFEE, "
              "Prepare breakfast weekday, Walk the dog")
    agent = Anticipator(Scripted(answer, "", "\n  \n"), cfg, experience)
    result = agent.anticipate(ctx, done=["Prepare breakfast weekday"])
    assert result.proposed == ["Prepare coffee"]
    assert result.parsed.unknown == ["Water the plants", "Walk the dog"]
    assert result.issues["unknown_names"] == 2
    assert result.issues["duplicates"] == 1
    assert result.issues["already_done"] == 2
    for _ in range(2):
        empty = agent.anticipate(ctx)
        assert empty.proposed == [] and empty.kept == [] and empty.issues["empty_answer"] == 1


def test_unseen_context_falls_back_and_is_counted(cfg, experience):
    ctx = parse_context("weekend, working from home", cfg)  # never seen: same-day routines used
    result = Anticipator(Scripted("Prepare breakfast weekend, Prepare home work-station"), cfg,
                         experience).anticipate(ctx)
    assert result.issues["unseen_context"] == 1
    assert result.kept == ["Prepare breakfast weekend"]
    assert "weekend (any context)" in result.dropped[0]["reason"]


def test_llm_error_anticipates_nothing(cfg, experience):
    class Dead:
        def complete(self, request):
            return LLMResponse(text="", error="the endpoint is down")

    result = Anticipator(Dead(), cfg, experience).anticipate(parse_context("weekday", cfg), assigned=["Pack bag"])
    assert result.kept == [] and result.merged == ["Pack bag"] and result.issues["llm_error"] == 1


def test_context_parsing(cfg):
    ctx = parse_context("Saturday, the human is not having guests", cfg)
    assert ctx.day == "weekend" and ctx.facts == {"no_guests"}
    assert parse_context("monday leaving for the office, wants a snack", cfg).facts == {"leaving_for_office", "needs_snack"}
    assert parse_context("weekday juggling", cfg).unknown_words == ("juggling",)
    with pytest.raises(ConfigError, match="names no day"):
        parse_context("working from home", cfg)


def test_routines_persist_in_the_knowledge_base(cfg, tmp_path):
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path) as kb:
        seed_experience(kb, cfg)
        record_day(kb, parse_context("weekend, no guests", cfg), ["Prepare breakfast weekend", "Pack bag"])
    with KnowledgeBase(path) as kb:
        routines = kb.routines()
    assert len(routines) == len(cfg.experience) + 1
    assert routines[-1].tasks == ("Prepare breakfast weekend", "Pack bag") and routines[-1].source == "observed"


def test_config_errors_name_file_and_key(tmp_path):
    import yaml

    from task_learning.anticipation.config import default_path

    data = yaml.safe_load(default_path().read_text())
    data["experience"][0]["tasks"].append("Walk the dog")
    bad = tmp_path / "anticipation.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"experience\[0\]\.tasks\[4\]: 'Walk the dog' is not a task"):
        load_anticipation_config(bad)
    data = yaml.safe_load(default_path().read_text())
    data["validator"]["threshold"] = 1.5
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"validator\.threshold"):
        load_anticipation_config(bad)
