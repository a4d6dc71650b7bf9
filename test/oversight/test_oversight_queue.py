"""The pending-question queue behind the oversight node: answers, refusals, timeouts, persistence."""
from __future__ import annotations

import threading
import time

import pytest

from task_learning.errors import ConfigError
from task_learning.oversight.flow import OversightStatus, OversightSubject, run_oversight
from task_learning.oversight.operator import TIMEOUT_OPERATOR
from task_learning.oversight.pending import QueueOperator
from task_learning.types import AnswerKind, ConfirmationRequest

from ..oversight_fixtures import MUG_PLACE, by_score, fake_analyze, mug_candidates
from ..ros_testing import wait_until


def _request(request_id: str, *, wants_description: bool = False, timeout_s: float = 0.0) -> ConfirmationRequest:
    cands = mug_candidates()
    return ConfirmationRequest(request_id, f"question {request_id}?", "Mug|1", MUG_PLACE,
                               None if wants_description else cands[0], cands,
                               wants_description, timeout_s)


def _ask_in_thread(queue: QueueOperator, request: ConfirmationRequest) -> tuple[threading.Thread, dict]:
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("answer", queue.ask(request)))
    thread.start()
    wait_until(lambda: request.request_id in [r.request_id for r in queue.pending()], 10,
               "the question pending", interval=0.005)
    return thread, box


def test_answer_reaches_the_waiting_asker():
    queue = QueueOperator(timeout_s=5)
    thread, box = _ask_in_thread(queue, _request("r1"))
    result = queue.submit("r1", "yes", operator="panel")
    thread.join(5)
    assert result.accepted
    assert box["answer"].answer is AnswerKind.YES and box["answer"].operator == "panel"
    assert queue.pending() == []


def test_bad_answers_get_a_clear_refusal_and_leave_the_queue_intact():
    queue = QueueOperator(timeout_s=5, max_description_chars=2000)
    thread, box = _ask_in_thread(queue, _request("r1"))
    described_thread, described = _ask_in_thread(queue, _request("r2", wants_description=True))

    unknown = queue.submit("no-such-id", "yes")
    assert not unknown.accepted and "no pending question" in unknown.message
    empty = queue.submit("r2", "description", "   ")
    assert not empty.accepted and "empty description" in empty.message
    huge = queue.submit("r2", "description", "word " * 2048)  # 10 kB
    assert not huge.accepted and "too long" in huge.message and "10240" in huge.message
    gibberish = queue.submit("r1", "perhaps")
    assert not gibberish.accepted and "unknown answer" in gibberish.message
    yes_to_words = queue.submit("r2", "yes")
    assert not yes_to_words.accepted and "description" in yes_to_words.message
    spoofed_timeout = queue.submit("r1", "timeout")
    assert not spoofed_timeout.accepted
    assert [r.request_id for r in queue.pending()] == ["r1", "r2"]  # intact, in asking order

    assert queue.submit("r2", "description", "the goal is that the mug is in the sink").accepted
    assert queue.submit("r1", "no").accepted
    thread.join(5)
    described_thread.join(5)
    assert box["answer"].answer is AnswerKind.NO
    assert described["answer"].description == "the goal is that the mug is in the sink"
    again = queue.submit("r1", "yes")  # answered already: expired
    assert not again.accepted and "no pending question" in again.message


def test_timeout_resolves_to_the_safe_default_and_is_never_consent():
    queue = QueueOperator(timeout_s=0.2, safe_default="no")
    start = time.monotonic()
    answer = queue.ask(_request("r1"))
    assert 0.15 <= time.monotonic() - start < 30  # waited the timeout, and did not hang
    assert answer.answer is AnswerKind.NO and answer.operator == TIMEOUT_OPERATOR
    late = queue.submit("r1", "yes")
    assert not late.accepted
    per_request = QueueOperator(timeout_s=60, safe_default="timeout").ask(_request("r2", timeout_s=0.1))
    assert per_request.answer is AnswerKind.TIMEOUT


@pytest.mark.parametrize("default", ["no", "timeout"])
def test_flow_with_an_absent_operator_confirms_nothing(default):
    queue = QueueOperator(timeout_s=0.1, safe_default=default)
    outcome = run_oversight(ranked=mug_candidates(), reselect=by_score, operator=queue, analyze=fake_analyze,
                            subject=OversightSubject(MUG_PLACE))
    assert outcome.chosen is None and outcome.status is OversightStatus.TIMEOUT
    assert outcome.counts.instructions == 0 and outcome.counts.words == 0
    assert outcome.counts.proposed == 1  # it stopped at the first unanswered question


def test_shutdown_releases_waiting_askers_without_consent():
    queue = QueueOperator(timeout_s=30)
    thread, box = _ask_in_thread(queue, _request("r1"))
    queue.close()
    thread.join(5)
    assert not thread.is_alive()
    assert box["answer"].answer is AnswerKind.NO and box["answer"].operator == TIMEOUT_OPERATOR


@pytest.mark.parametrize("bad", ["yes", "YES", "maybe", ""])
def test_safe_default_yes_or_nonsense_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="safe_default"):
        QueueOperator(safe_default=bad)


def test_queue_persists_questions_and_resolutions(tmp_path):
    from task_learning.kb.store import KnowledgeBase

    kb = KnowledgeBase(tmp_path / "kb.sqlite")
    queue = QueueOperator(timeout_s=5, kb=kb, task="tidy kitchen")
    thread, _ = _ask_in_thread(queue, _request("r1"))
    queue.submit("r1", "yes", operator="panel")
    thread.join(5)
    QueueOperator(timeout_s=0.05, kb=kb).ask(_request("r2"))
    log = {row["request_id"]: row for row in kb.question_log()}
    assert log["r1"]["answer"] == "yes" and log["r1"]["operator"] == "panel"
    assert log["r1"]["object_id"] == "Mug|1" and log["r1"]["task"] == "tidy kitchen"
    assert log["r2"]["answer"] == "timeout" and log["r2"]["operator"] == TIMEOUT_OPERATOR


def test_listener_is_told_when_the_queue_changes():
    changes: list[int] = []
    queue = QueueOperator(timeout_s=5)
    queue.on_change = lambda: changes.append(len(queue.pending()))
    thread, _ = _ask_in_thread(queue, _request("r1"))
    queue.submit("r1", "no")
    thread.join(5)
    assert changes[0] == 1 and changes[-1] == 0
