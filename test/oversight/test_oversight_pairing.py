"""Issue 34 point 2 / issue 31 point 6, the ROS-free core: operators paired in the knowledge base
(only verifiers stored), one-time pairing codes with rate limits, signed answers, the stack key and
its replay guard, and confirmations issued only for a verified yes, used up once and withdrawn
with their question."""
from __future__ import annotations

import os
import stat
import threading

import pytest

from task_learning.kb import KnowledgeBase
from task_learning.oversight import pairing
from task_learning.oversight.confirmations import ConfirmationLedger
from task_learning.oversight.memory import RememberingOperator
from task_learning.oversight.pending import QueueOperator
from task_learning.types import AnswerKind, ConfirmationRequest, GoalCandidate, GoalLiteral


@pytest.fixture
def kb(tmp_path):
    with KnowledgeBase(tmp_path / "kb.sqlite") as base:
        yield base


def test_a_local_pairing_stores_only_a_verifier_and_signs_answers(kb, tmp_path):
    registry = pairing.OperatorRegistry(kb)
    token = registry.pair_locally("alice")
    secret = token.split(":")[2]
    dump = "\n".join(kb.database.conn.iterdump())  # the file's whole content
    assert secret not in dump and token not in dump
    creds = pairing.OperatorCredentials.from_token(token)
    sig = creds.sign_answer("q1", "yes", "", "/terminal")
    assert registry.verify_answer(sig, "q1", "yes", "", "alice", "/terminal")
    # The signature fits that answer only: another question, answer, operator or client fails.
    assert not registry.verify_answer(sig, "q2", "yes", "", "alice", "/terminal")
    assert not registry.verify_answer(sig, "q1", "no", "", "alice", "/terminal")
    assert not registry.verify_answer(sig, "q1", "yes", "", "bob", "/terminal")
    assert not registry.verify_answer(sig, "q1", "yes", "", "alice", "/panel")
    assert not registry.verify_answer("0" * 64, "q1", "yes", "", "alice", "/terminal")
    assert registry.verify_token(token) == "alice" and registry.verify_token(token + "x") is None
    # Re-pairing replaces the secret: the old token stops working; a revoked operator signs nothing.
    registry.pair_locally("alice")
    assert not registry.verify_answer(sig, "q1", "yes", "", "alice", "/terminal")
    new = pairing.OperatorCredentials.from_token(registry.pair_locally("alice"))
    assert registry.revoke("alice")
    assert not registry.verify_answer(new.sign_answer("q", "yes", "", "c"), "q", "yes", "", "alice", "c")


def test_a_pairing_code_is_one_time_expires_and_attempts_are_rate_limited(kb):
    clock = [1000.0]
    registry = pairing.OperatorRegistry(kb, attempts_per_client=3, attempts_total=5,
                                        clock=lambda: clock[0])
    code = registry.create_pairing_code("phone")
    token = registry.redeem(code, client="c1")
    assert registry.verify_token(token) == "phone"
    with pytest.raises(pairing.PairingError, match="already used"):
        registry.redeem(code, client="c1")
    wrong = registry.create_pairing_code("phone2").split("-")[0] + "-0000000000000000"
    for _ in range(3):  # every attempt counts, per client
        with pytest.raises(pairing.PairingError, match="unknown"):
            registry.redeem(wrong, client="guesser")
    with pytest.raises(pairing.PairingError, match="too many"):
        registry.redeem(wrong, client="guesser")
    other = registry.create_pairing_code("tablet")
    clock[0] += pairing.CODE_TTL_S + 1
    with pytest.raises(pairing.PairingError, match="expired"):
        registry.redeem(other, client="c2")


def test_a_flood_of_wrong_codes_from_one_address_does_not_lock_the_real_code_out(kb):
    """Issue 40: five wrong codes from any local process locked every loopback client out. The
    limits count attempts per code id: the flood does not know the real code's id."""
    registry = pairing.OperatorRegistry(kb)
    code = registry.create_pairing_code("phone")
    code_id = code.split("-")[0]
    for i in range(60):  # another process on 127.0.0.1, guessing whole codes
        guess = f"{(int(code_id, 16) + 1 + i) % 65536:04X}-{i:016X}"
        with pytest.raises(pairing.PairingError):
            registry.redeem(guess, client="127.0.0.1")
    assert registry.verify_token(registry.redeem(code, client="127.0.0.1")) == "phone"
    with pytest.raises(pairing.PairingError, match="not a pairing code"):
        registry.redeem("no code at all", client="127.0.0.1")


def test_guessing_one_code_is_held_to_the_limit_in_all_whatever_the_client(kb):
    registry = pairing.OperatorRegistry(kb, attempts_per_client=5, attempts_total=8)
    code = registry.create_pairing_code("phone")
    code_id = code.split("-")[0]
    refused = []
    for i in range(12):  # a new client address each time
        try:
            registry.redeem(f"{code_id}-{i:016X}", client=f"10.0.0.{i}")
        except pairing.PairingRateLimited:
            refused.append(i)
        except pairing.PairingError:
            pass
    assert refused == [8, 9, 10, 11]


def test_token_files_and_the_stack_key_are_private(tmp_path, monkeypatch):
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros"))
    key = pairing.StackKey.load_or_create()
    path = tmp_path / "ros" / "task_learning" / "stack.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert pairing.StackKey.load_or_create().key == key.key  # read, not made again
    os.chmod(path, 0o644)
    with pytest.raises(pairing.PairingError, match="readable by others"):
        pairing.StackKey.load_or_create()
    with KnowledgeBase(tmp_path / "kb.sqlite"):
        pass
    creds, line = pairing.operator_credentials("alice", db=tmp_path / "kb.sqlite")
    assert creds is not None and "paired operator 'alice'" in line
    token_file = pairing.default_token_file("alice")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    again, line = pairing.operator_credentials("alice")  # no db needed once paired
    assert again == creds and "token" in line
    none, line = pairing.operator_credentials("bob")
    assert none is None and "not paired" in line


def test_a_token_meets_a_fresh_knowledge_base_but_no_revocation_is_undone(tmp_path, monkeypatch):
    """The demo starts each run from a new knowledge base while the simulated operator's token file
    stays: the client given that --db pairs there anew. A knowledge base that paired the name with
    another token, or revoked it, keeps it so (the client's answers are then refused)."""
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros"))
    first, fresh = tmp_path / "first.sqlite", tmp_path / "fresh.sqlite"
    for db in (first, fresh):
        with KnowledgeBase(db):
            pass
    creds, _ = pairing.operator_credentials("sim", db=first)
    again, line = pairing.operator_credentials("sim", db=fresh)
    assert again is not None and again != creds and "paired operator 'sim' in" in line
    with KnowledgeBase(fresh) as kb:
        assert pairing.OperatorRegistry(kb).key_of("sim") == again.key
    with KnowledgeBase(first) as kb:  # the old base still has the old token's verifier, not this one
        assert pairing.OperatorRegistry(kb).key_of("sim") == creds.key
    kept, line = pairing.operator_credentials("sim", db=first)
    assert kept == again and "answers will be refused" in line
    with KnowledgeBase(first) as kb:
        assert pairing.OperatorRegistry(kb).key_of("sim") == creds.key
    with KnowledgeBase(fresh) as kb:
        pairing.OperatorRegistry(kb).revoke("sim")
    revoked, line = pairing.operator_credentials("sim", db=fresh)
    assert revoked == again and "revoked" in line
    with KnowledgeBase(fresh) as kb:
        assert pairing.OperatorRegistry(kb).key_of("sim") is None  # still revoked


def test_the_stack_keys_signatures_and_replay_guard():
    key = pairing.StackKey(b"k" * 32)
    request = ConfirmationRequest("r1", "Shall I?", "Mug|1", candidate=GoalCandidate("the goal is that x", 1.0))
    fields = pairing.confirm_fields("planner", "n1", 100.0, request)
    sig = key.sign(*fields)
    assert key.verify(sig, *fields)
    request.candidate.literals = [GoalLiteral("inside", ("Mug|1", "Garbage|1"))]  # tampered on the way
    assert not key.verify(sig, *pairing.confirm_fields("planner", "n1", 100.0, request))
    guard = pairing.NonceGuard(window_s=60, clock=lambda: 100.0)
    assert guard.check("n1", 100.0) == ""
    assert "replayed" in guard.check("n1", 100.0)
    assert "from ours" in guard.check("n2", 10.0)
    assert "from ours" in guard.check("n3", float("nan"))


def _question(request_id: str = "q1") -> ConfirmationRequest:
    cand = GoalCandidate("the goal is that the mug is in the cupboard", 1.0,
                         literals=[GoalLiteral("inside", ("Mug|1", "Cupboard|1"))])
    return ConfirmationRequest(request_id, "For a mug is the goal that the mug is in the cupboard?",
                               "Mug|1", "mug", candidate=cand, timeout_s=30)


def _ask_in_thread(queue, request, **asked):
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("answer", queue.ask(request, **asked)))
    thread.start()
    return thread, box


def _wait_pending(queue, count=1):
    import time

    deadline = time.monotonic() + 10
    while len(queue.pending()) < count:
        assert time.monotonic() < deadline, "question not pending"
        time.sleep(0.01)


def test_a_verified_yes_gets_a_confirmation_used_up_once_and_withdrawn_with_its_question(kb):
    ledger = ConfirmationLedger(ttl_s=60)
    queue = QueueOperator(kb=kb, ledger=ledger, max_pending=4, max_pending_per_asker=2)
    thread, box = _ask_in_thread(queue, _question(), asker="planner", asker_request_id="mine")
    _wait_pending(queue)
    assert queue.submit("q1", "yes", operator="alice", client="/terminal").accepted
    thread.join(10)
    answer = box["answer"]
    assert answer.answer is AnswerKind.YES and answer.confirmation_id
    issued, why = ledger.check(answer.confirmation_id, consume=True)
    assert issued is not None and issued.operator == "alice" and issued.client == "/terminal"
    assert issued.candidate.literals == [GoalLiteral("inside", ("Mug|1", "Cupboard|1"))]
    again, why = ledger.check(answer.confirmation_id, consume=True)
    assert again is None and "already used" in why
    row = {r["request_id"]: r for r in kb.question_log()}["q1"]
    assert (row["operator"], row["client"], row["verified"], row["asked_by"]) == ("alice", "/terminal", 1, "planner")
    assert row["confirmation_id"] == answer.confirmation_id

    # Withdrawn: off the list at once, the caller gets no consent, a late yes is refused.
    thread, box = _ask_in_thread(queue, _question("q2"), asker="planner", asker_request_id="again")
    _wait_pending(queue)
    assert queue.withdraw(asker="planner", asker_request_id="again", reason="goal cancelled")
    assert queue.pending() == []
    thread.join(10)
    assert box["answer"].answer is not AnswerKind.YES and not box["answer"].confirmation_id
    assert not queue.submit("q2", "yes", operator="alice").accepted
    assert kb.previous_answer(task="", question=_question().question, asked_by="planner",
                              object_id="Mug|1", candidate_text=_question().candidate.text).request_id == "q1"


def test_one_askers_flood_leaves_room_for_another(kb):
    queue = QueueOperator(kb=kb, max_pending=4, max_pending_per_asker=2)
    threads = [_ask_in_thread(queue, _question(f"f{i}"), asker="flooder")[0] for i in range(2)]
    _wait_pending(queue, 2)
    refused = queue.ask(_question("f3"), asker="flooder")
    assert "per asker" in refused.description and refused.answer is not AnswerKind.YES
    thread, box = _ask_in_thread(queue, _question("p1"), asker="planner")
    _wait_pending(queue, 3)
    queue.close()
    for t in threads + [thread]:
        t.join(10)


def test_memory_replays_only_its_own_askers_verified_answers(kb):
    """A stranger's question with the planner's words, or an answer nobody verified, never answers
    the planner's question (the planted answer of issue 34)."""
    ledger = ConfirmationLedger()
    queue = QueueOperator(kb=kb, ledger=ledger)
    memory = RememberingOperator(queue, kb, ledger=ledger)
    # Planted: the same words asked by another asker and answered yes by a paired operator.
    thread, box = _ask_in_thread(memory, _question("planted"), asker="stranger", asker_request_id="x")
    _wait_pending(queue)
    queue.submit("planted", "yes", operator="alice")
    thread.join(10)
    # An unverified yes to the planner's own earlier question is not remembered either.
    thread, box = _ask_in_thread(memory, _question("old"), asker="planner", asker_request_id="y")
    _wait_pending(queue)
    queue.submit("old", "yes", operator="alice", verified=False)
    thread.join(10)
    assert not box["answer"].confirmation_id  # nobody verified: no confirmation either
    thread, box = _ask_in_thread(memory, _question("new"), asker="planner", asker_request_id="z")
    _wait_pending(queue)  # put to the operator, not answered from memory
    assert [r.request_id for r in queue.pending()] == ["new"]
    queue.submit("new", "no", operator="alice")
    thread.join(10)
    assert memory.remembered == 0
    # A verified answer of the planner's own is remembered (the "no" just given: no confirmation),
    # and a remembered yes gets a fresh confirmation naming the question it came from.
    no_again = memory.ask(_question("no-again"), asker="planner", asker_request_id="u")
    assert no_again.answer is AnswerKind.NO and not no_again.confirmation_id and memory.remembered == 1
    other = _question("first")
    other.question = other.question.replace("cupboard?", "cupboard and the cupboard is closed?")
    thread, box = _ask_in_thread(memory, other, asker="planner", asker_request_id="w")
    _wait_pending(queue)
    queue.submit("first", "yes", operator="alice")
    thread.join(10)
    other.request_id = "second"
    again = memory.ask(other, asker="planner", asker_request_id="v")
    assert again.answer is AnswerKind.YES and memory.remembered == 2 and again.confirmation_id
    issued, _ = ledger.check(again.confirmation_id, consume=False)
    assert issued.remembered_from == "first"


def test_a_confirmation_covers_exactly_the_goal_it_was_given_for():
    """What the planner checks of a confirmation (planning.confirmation): a yes covers the candidate
    the operator saw, a description what its words mean; ReachGoal only literals of the candidate."""
    from task_learning.planning.confirmation import confirmation_mismatch, literals_confirmed

    fridge = GoalCandidate("the goal is that the eggs are in the fridge", 1.0,
                           literals=[GoalLiteral("inside", ("Egg|1", "Fridge|1"))])
    garbage = GoalCandidate("the goal is that the eggs are in the fridge", 1.0,  # same words, other literals
                            literals=[GoalLiteral("inside", ("Egg|1", "GarbageCan|1"))])
    assert confirmation_mismatch(answer="yes", description="", candidate=fridge, chosen=fridge) == ""
    assert "literals" in confirmation_mismatch(answer="yes", description="", candidate=fridge, chosen=garbage)
    other = GoalCandidate("the goal is that the eggs are on the table", 1.0, literals=fridge.literals)
    assert "another goal" in confirmation_mismatch(answer="yes", description="", candidate=other, chosen=fridge)
    assert "confirms nothing" in confirmation_mismatch(answer="no", description="", candidate=fridge, chosen=fridge)

    class Reading:  # the planner's own grounding of the operator's words
        viable = True
        literals = fridge.literals

    said = "the eggs are in the fridge"
    assert confirmation_mismatch(answer="description", description=said, candidate=None, chosen=fridge,
                                 analyze=lambda _s: Reading()) == ""
    assert "means here" in confirmation_mismatch(answer="description", description=said, candidate=None,
                                                 chosen=garbage, analyze=lambda _s: Reading())
    assert "described" in confirmation_mismatch(answer="description", description="the eggs are in the sink",
                                                candidate=None, chosen=fridge, analyze=lambda _s: Reading())
    assert literals_confirmed(fridge.literals, fridge) == ""
    assert "not confirmed" in literals_confirmed(garbage.literals, fridge)
    assert "no goal literals" in literals_confirmed(fridge.literals, None)
