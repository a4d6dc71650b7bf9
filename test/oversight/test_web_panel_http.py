"""The web panel over HTTP (a real uvicorn on loopback, the in-process queue behind it): who may
see and answer, CSRF, replay and stale pages, rate limits, fail-closed endings."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

import httpx
import pytest

from task_learning.oversight.pairing import OperatorRegistry
from task_learning.types import AnswerKind
from test.ros_testing import wait_until
from test.web_panel_helpers import PageClient, ServedPanel, mug_request, paired_client, serve_panel


@pytest.fixture
def served(tmp_path) -> Iterator[ServedPanel]:
    served = serve_panel(tmp_path)
    try:
        yield served
    finally:
        served.close()


def first_state_with(client: PageClient, request_id: str) -> dict:
    states = client.states()
    try:
        for state in states:
            if any(q["id"] == request_id for q in state["pending"]):
                return state
        raise AssertionError("stream ended")
    finally:
        states.close()


@contextmanager
def live_state(client: PageClient, request_id: str) -> Iterator[dict]:
    """The first state showing `request_id`, while the page's stream stays open (an answer needs
    a live page)."""
    states = client.states()
    try:
        yield next(s for s in states if any(q["id"] == request_id for q in s["pending"]))
    finally:
        states.close()


def question_of(state: dict, request_id: str) -> dict:
    return next(q for q in state["pending"] if q["id"] == request_id)


def test_without_pairing_nothing_is_shown_or_answered(served) -> None:
    served.ask(mug_request("q1"))
    wait_until(lambda: served.queue.pending(), 5, "question waiting")
    stranger = PageClient(served.url)
    assert stranger.session().status_code == 401
    assert stranger.http.get("/api/events").status_code == 401
    assert stranger.http.get("/api/questions/q1/image").status_code == 401
    refused = stranger.answer("q1", "x" * 32, "yes")
    assert refused.status_code == 401
    assert "mug" not in refused.text and "mug" not in stranger.http.get("/api/events").text
    # a made-up token, or a real one's name with another secret
    for token in ("tlop1:alice:not-the-secret", "garbage"):
        stranger.http.cookies.set("tl_operator", token)
        assert stranger.session().status_code == 401
        assert stranger.answer("q1", "x" * 32, "yes").status_code == 401
    assert [r.request_id for r in served.queue.pending()] == ["q1"]  # nothing was answered


def test_paired_operator_answers_and_the_answer_names_them(served) -> None:
    served.ask(mug_request("q1"))
    alice = paired_client(served, "alice")
    with live_state(alice, "q1") as state:
        q = question_of(state, "q1")
        assert q["object"] == "mug" and q["where"] == "in the dish rack"
        assert q["candidate"].startswith("the goal is that the mug is in the cupboard")
        assert any("ranked it 1 of 2" in line for line in q["reasons"])
        reply = alice.answer("q1", q["nonce"], "yes")
        assert reply.status_code == 200, reply.text
    wait_until(lambda: "q1" in served.answers, 5, "the asker got its answer")
    answer = served.answers["q1"]
    assert answer.answer is AnswerKind.YES and answer.operator == "alice"
    assert answer.client.startswith("web 127.0.0.1")


def test_words_are_read_by_answers_py_and_a_non_answer_gets_its_hint(served) -> None:
    served.ask(mug_request("q1"))
    alice = paired_client(served, "alice")
    with live_state(alice, "q1") as state:
        q = question_of(state, "q1")
        maybe = alice.answer("q1", q["nonce"], "words", "maybe")
        assert maybe.status_code == 422 and "please answer yes or no" in maybe.json()["message"]
        assert served.queue.pending()  # nothing changed; the nonce still holds
        said = alice.answer("q1", q["nonce"], "words", "put it in the fridge")
        assert said.status_code == 200, said.text
    wait_until(lambda: "q1" in served.answers, 5, "answered")
    assert served.answers["q1"].answer is AnswerKind.DESCRIPTION
    assert served.answers["q1"].description == "put it in the fridge"


def test_csrf_origin_and_host_are_checked(served) -> None:
    served.ask(mug_request("q1"))
    alice = paired_client(served, "alice")
    with live_state(alice, "q1") as state:
        q = question_of(state, "q1")
        assert alice.answer("q1", q["nonce"], "yes", **{"X-CSRF-Token": ""}).status_code == 403
        assert alice.answer("q1", q["nonce"], "yes", **{"X-CSRF-Token": "0" * 64}).status_code == 403
        assert alice.answer("q1", q["nonce"], "yes", Origin="http://evil.example").status_code == 403
        assert alice.answer("q1", q["nonce"], "yes", **{"Sec-Fetch-Site": "cross-site"}).status_code == 403
    rebound = alice.http.get("/api/session", headers={"Host": "evil.example"})
    assert rebound.status_code == 400  # DNS rebinding: a host this panel does not answer for
    assert served.queue.pending()  # none of these answered


def test_a_replayed_or_stale_nonce_answers_nothing(served) -> None:
    served.ask(mug_request("q1"))
    served.ask(mug_request("q2"))
    alice = paired_client(served, "alice")
    state = first_state_with(alice, "q2")  # the stream (and so its nonces) closes on leaving
    nonce = question_of(state, "q1")["nonce"]
    stale = alice.answer("q1", nonce, "yes")
    assert stale.status_code == 409 and "stale" in stale.json()["message"]
    # a live page: its nonce works once
    states = alice.states()
    try:
        live = next(s for s in states if any(q["id"] == "q1" for q in s["pending"]))
        first = question_of(live, "q1")["nonce"]
        assert alice.answer("q1", first, "no").status_code == 200
        again = alice.answer("q2", first, "yes")  # another question's nonce
        assert again.status_code == 409
    finally:
        states.close()
    wait_until(lambda: "q1" in served.answers, 5, "q1 answered")
    assert served.answers["q1"].answer is AnswerKind.NO
    assert [r.request_id for r in served.queue.pending()] == ["q2"]


def test_expired_withdrawn_and_answered_elsewhere_cannot_be_confirmed(served) -> None:
    served.ask(mug_request("short", timeout_s=1.0))
    served.ask(mug_request("gone"))
    served.ask(mug_request("taken"))
    alice = paired_client(served, "alice")
    states = alice.states()
    try:
        state = next(s for s in states if len(s["pending"]) == 3)
        nonces = {q["id"]: q["nonce"] for q in state["pending"]}
        served.queue.withdraw("gone", reason="goal cancelled")
        assert served.queue.submit("taken", "no", operator="bob", client="terminal").accepted
        wait_until(lambda: "short" in served.answers, 10, "the short question timed out")
        for rid in ("short", "gone", "taken"):
            refused = alice.answer(rid, nonces[rid], "yes")
            assert refused.status_code == 409, (rid, refused.text)
            assert "your answer was not used" in refused.json()["message"]
    finally:
        states.close()
    wait_until(lambda: len(served.answers) == 3, 5, "every asker answered")
    assert served.answers["short"].answer is not AnswerKind.YES
    assert served.answers["short"].operator == "timeout"
    assert served.answers["gone"].answer is not AnswerKind.YES
    assert served.answers["taken"].operator == "bob" and served.answers["taken"].answer is AnswerKind.NO


def test_two_operators_on_one_question_the_first_wins(served) -> None:
    served.ask(mug_request("q1"))
    alice, bob = paired_client(served, "alice"), paired_client(served, "bob")
    a_states, b_states = alice.states(), bob.states()
    try:
        a = question_of(next(s for s in a_states if s["pending"]), "q1")
        b = question_of(next(s for s in b_states if s["pending"]), "q1")
        assert alice.answer("q1", a["nonce"], "yes").status_code == 200
        second = bob.answer("q1", b["nonce"], "no")
        assert second.status_code == 409
        assert "already answered by alice" in second.json()["message"]
    finally:
        a_states.close()
        b_states.close()
    wait_until(lambda: "q1" in served.answers, 5, "answered")
    assert served.answers["q1"].operator == "alice" and served.answers["q1"].answer is AnswerKind.YES


def test_pairing_attempts_beyond_the_limit_are_refused(served) -> None:
    client = PageClient(served.url)
    good = served.code("alice")
    code_id = good.split("-")[0]
    codes = [client.pair(f"{code_id}-{i:016X}").status_code for i in range(5)]
    assert codes == [403] * 5
    assert client.pair(good).status_code == 429  # even the right code, once its id is over the limit
    assert client.session().status_code == 401
    assert client.pair("ABCD-0").status_code == 403  # no code at all: refused, not counted


def test_a_code_pairs_once_and_revocation_ends_the_stream(served) -> None:
    code = served.code("alice")
    alice = PageClient(served.url)
    assert alice.pair(code).status_code == 200
    other = PageClient(served.url)
    assert other.pair(code).status_code == 403  # used
    assert alice.session().status_code == 200
    OperatorRegistry(served.kb).revoke("alice")
    assert alice.session().status_code == 401
    assert alice.http.get("/api/events").status_code == 401


def test_answers_are_rate_limited(tmp_path) -> None:
    limited = serve_panel(tmp_path, answers_per_minute=3)
    try:
        for i in range(5):
            limited.ask(mug_request(f"q{i}"))
        alice = paired_client(limited, "alice")
        states = alice.states()
        try:
            state = next(s for s in states if len(s["pending"]) == 5)
            codes = [alice.answer(q["id"], q["nonce"], "words", "maybe").status_code for q in state["pending"]]
        finally:
            states.close()
        assert codes == [422, 422, 422, 429, 429]
    finally:
        limited.close()


def test_only_loopback_without_tls_and_security_headers(tmp_path, served) -> None:
    from task_learning.oversight.web.server import WebPanelError, WebSettings

    with pytest.raises(WebPanelError, match="needs TLS"):
        WebSettings(host="0.0.0.0").check()
    with pytest.raises(WebPanelError, match="go together"):
        WebSettings(tls_certfile=str(tmp_path / "c.pem")).check()
    page = httpx.get(served.url)
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert "<script src=\"/static/panel.js\"" in page.text and "<script>" not in page.text


def test_the_history_comes_from_the_knowledge_base(served) -> None:
    from task_learning.types import ConfirmationAnswer

    request = mug_request("old")
    served.kb.record_question(request, task="t")
    served.kb.record_answer(ConfirmationAnswer("old", AnswerKind.NO, "", "alice", time.time() - 60, client="terminal"),
                            client="terminal")
    served.kb.record_question(mug_request("bobs"), task="t")
    served.kb.record_answer(ConfirmationAnswer("bobs", AnswerKind.YES, "", "bob", time.time()), client="x")
    served.ask(mug_request("q1"))
    alice = paired_client(served, "alice")
    history = first_state_with(alice, "q1")["history"]
    assert [h["request_id"] for h in history] == ["old"]
    assert history[0]["answer"] == "no" and history[0]["client"] == "terminal"


def test_behind_tls_the_cookie_is_secure_and_plain_http_is_not_served(tmp_path) -> None:
    import shutil
    import ssl
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("no openssl to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    secure = serve_panel(tmp_path, tls_certfile=str(cert), tls_keyfile=str(key))
    try:
        assert secure.url.startswith("https://127.0.0.1:")
        client = PageClient(secure.url)
        client.http = httpx.Client(base_url=secure.url.rstrip("/"), verify=ssl.create_default_context(cafile=cert),
                                   timeout=10.0, headers={"Origin": secure.url.rstrip("/")})
        reply = client.pair(secure.code("alice"))
        assert reply.status_code == 200, reply.text
        cookie = reply.headers["set-cookie"]
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert reply.headers["strict-transport-security"]
        with pytest.raises(httpx.HTTPError):
            httpx.get(secure.url.replace("https://", "http://"), timeout=5.0)
    finally:
        secure.close()
