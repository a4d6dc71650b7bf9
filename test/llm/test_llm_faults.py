"""A hostile or broken endpoint against the REAL `openai` client through LLMClient (issue 10):
a dripping server, a huge body, bad logprobs, error bodies with status 200, a dead endpoint and
refused credentials (circuit breaker), credentials in the base URL. No timed assertions: calls
run in a thread joined with a generous deadline, so a hang fails the test instead of blocking."""
from __future__ import annotations

import base64
import logging
import math
import socket
import sys
import threading

import pytest

from task_learning.errors import LLMUnavailableError
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm.http_guard import split_credentials
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.testing.fake_server import (
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    completion_body,
    error_body,
)

SECRET = "sk-fault-KEY-0123456789"
URL_PASSWORD = "pw-in-url-98765"
TOKENS = [(" the", math.log(0.9), {" the": math.log(0.9), " a": math.log(0.05)}),
          (" mug", math.log(0.6), {" mug": math.log(0.6), " cup": math.log(0.3)})]


def request(prefix: str = "") -> LLMRequest:
    return LLMRequest(prompt_type="initial", prompt="Task: tidy\n(RESULT)" + prefix, logprobs=5,
                      stop=("\n",), context={"object": "mug", "prefix": prefix}, scope="Mug|1")


@pytest.fixture()
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def client_for(base_url: str, **kw) -> LLMClient:
    provider = OpenAIProvider(base_url=base_url, api_key=SECRET, completion_model="fake-instruct",
                              max_response_bytes=kw.pop("max_response_bytes", 1_000_000))
    kw.setdefault("max_retries", 0)
    kw.setdefault("sleep", lambda _s: None)
    return LLMClient(provider, **kw)


def complete_within(client: LLMClient, req: LLMRequest, deadline_s: float = 60.0) -> LLMResponse:
    """The call in a thread; a call still running after `deadline_s` fails the test (a hang)."""
    box: dict[str, LLMResponse] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", client.complete(req)), daemon=True)
    worker.start()
    worker.join(deadline_s)
    assert not worker.is_alive(), "the call is still running: no wall-clock deadline"
    return box["r"]


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on exit: connecting is refused


def test_a_dripping_server_cannot_hang_a_call(server):
    # Before: the timeout bounded each read, so one byte a second (headers included) never
    # tripped it and the call hung for the whole answer (hundreds of seconds).
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(TOKENS), drip_s=0.2))
    client = client_for(server.base_url, timeout_s=1.0)
    response = complete_within(client, request())
    assert not response.ok
    assert "timed out after 1 s" in response.error and "no complete answer" in response.error


def test_a_huge_body_is_refused_without_reading_it_all(server):
    server.set_default(COMPLETIONS, ScriptedReply(huge_bytes=150_000_000))
    client = client_for(server.base_url, timeout_s=60.0, max_response_bytes=1_000_000)
    response = complete_within(client, request())
    assert not response.ok and "larger than the cap of 1000000 bytes" in response.error
    # Reading stopped at the cap: the server could not push more than the cap plus socket buffers.
    assert server.huge_bytes_sent < 30_000_000
    assert client.stats()["retries"] == 0  # a refused answer is not worth retrying


@pytest.mark.parametrize("bad", [5.0, float("nan"), float("inf"), 0.5])
def test_logprobs_that_are_not_log_probabilities_are_an_error(server, bad):
    # Before: +5 became probability e^5 = 148 and ranked first.
    tokens = [(" the", bad, {" the": bad, " a": math.log(0.05)})] + TOKENS[1:]
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(tokens)))
    response = complete_within(client_for(server.base_url), request())
    assert not response.ok and "malformed logprobs" in response.error
    assert "finite and <= 0" in response.error or "not a number" in response.error


def test_valid_logprobs_and_minus_infinity_are_accepted(server):
    tokens = [(" the", 0.0, {" the": 0.0, " a": float("-inf")})] + TOKENS[1:]
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(tokens)))
    response = complete_within(client_for(server.base_url), request())
    assert response.ok, response.error
    assert response.tokens[0].prob == 1.0 and response.tokens[0].top[1][1] < -1000
    assert all(t.prob <= 1.0 for t in response.tokens)


def test_an_error_body_with_status_200_is_an_error_not_missing_choices(server):
    server.set_default(COMPLETIONS, ScriptedReply(body=error_body(f"model overloaded (key {SECRET})")))
    response = complete_within(client_for(server.base_url), request())
    assert not response.ok
    assert "model overloaded" in response.error and "status 200" in response.error
    assert "no choices" not in response.error and SECRET not in response.error


def test_an_html_page_with_status_200_is_an_error_naming_it(server):
    page = f"<!DOCTYPE html><html><body><h1>Gateway</h1><p>login {URL_PASSWORD}\x1b[31m</p></body></html>"
    server.set_default(COMPLETIONS, ScriptedReply(body=page, content_type="text/html"))
    client = client_for(f"http://user:{URL_PASSWORD}@" + server.base_url.split("://", 1)[1])
    response = complete_within(client, request())
    assert not response.ok and "HTML page" in response.error and "Gateway" in response.error
    assert URL_PASSWORD not in response.error and "\x1b" not in response.error


def test_a_dead_endpoint_opens_the_breaker_and_later_calls_fail_at_once():
    port = dead_port()
    calls = []
    client = client_for(f"http://127.0.0.1:{port}/v1", max_retries=10, breaker_failures=3,
                        sleep=calls.append)
    first = complete_within(client, request())
    assert not first.ok and "Connection refused" in first.error and "unavailable" in first.error
    assert len(calls) == 2  # three attempts, two backoffs, then the breaker opened
    assert "3 attempts in a row" in client.unavailable
    second = complete_within(client, request(" x"))
    assert "not called, the endpoint is unavailable" in second.error
    assert len(calls) == 2  # no attempt, no backoff
    with pytest.raises(LLMUnavailableError, match="run stopped"):
        client.raise_if_unavailable()


def test_refused_credentials_open_the_breaker_at_once(server):
    server.set_default(COMPLETIONS, ScriptedReply(status=401, body=error_body("bad key", "invalid_api_key")))
    client = client_for(server.base_url, max_retries=4)
    assert "401" in complete_within(client, request()).error
    assert "credentials refused" in client.unavailable
    assert "not called" in complete_within(client, request(" x")).error
    assert len(server.requests_to(COMPLETIONS)) == 1


def test_429_and_500_bursts_do_not_open_the_breaker(server):
    server.queue(COMPLETIONS, *[ScriptedReply(status=429, body=error_body("slow down"))] * 3,
                 *[ScriptedReply(status=500, body=error_body("boom"))] * 3)
    server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(TOKENS)))
    client = client_for(server.base_url, max_retries=10, breaker_failures=2)
    response = complete_within(client, request())
    assert response.ok and client.unavailable == "" and client.retries == 6


def test_credentials_in_the_url_are_sent_as_basic_auth_and_shown_nowhere(server, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    host = server.base_url.split("://", 1)[1]
    url = f"http://robot:{URL_PASSWORD}@{host}"
    server.queue(COMPLETIONS, ScriptedReply(status=500, body=error_body(f"echo {url}")),
                 ScriptedReply(status=400, body=error_body(f"bad request for {URL_PASSWORD}")))
    cassette = tmp_path / "calls.jsonl"
    client = make_client(f"record:{cassette}", env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": ""},
                         max_retries=1, backoff_s=0.0, max_backoff_s=0.0, cache=False)
    failed = client.complete(request())
    dead = make_client("openai", env={"OPENAI_BASE_URL": f"http://robot:{URL_PASSWORD}@127.0.0.1:{dead_port()}/v1"},
                       max_retries=0, cache=False)
    unreachable = dead.complete(request())
    sent = {k.lower(): v for k, v in server.requests_to(COMPLETIONS)[0].headers.items()}
    assert sent.get("authorization") == "Basic " + base64.b64encode(f"robot:{URL_PASSWORD}".encode()).decode()
    client.close()
    seen = [failed.error, unreachable.error, caplog.text, repr(client.provider), repr(dead.provider),
            str(client.stats()), dead.unavailable, cassette.read_text()]
    for text in seen:
        assert URL_PASSWORD not in text
    assert "***@" in failed.error and "***@" in unreachable.error


def test_split_credentials_keeps_urls_without_user_info():
    plain = split_credentials("http://127.0.0.1:8000/v1")
    assert plain.url == plain.shown == "http://127.0.0.1:8000/v1" and plain.auth is None
    full = split_credentials("https://me:p%40ss@example.org/v1")
    assert full.url == "https://example.org/v1" and full.shown == "https://***@example.org/v1"
    assert full.auth == ("me", "p@ss")


CLOSE_WAIT_S = 30.0


class _SilentServer:
    """Reads one request and never answers; records when the client closes the connection (what
    llama-server watches for to cancel a request's decoding, issue 43)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        self.request_read = threading.Event()
        self.closed_by_client = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.settimeout(60.0)
            received = b""
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            self.request_read.set()
            try:
                while connection.recv(65536):  # b"": the client closed its end
                    pass
                self.closed_by_client.set()
            except OSError:  # a reset is a close too; a timeout (60 s) is not
                if not isinstance(sys.exc_info()[1], TimeoutError):
                    self.closed_by_client.set()

    def close(self) -> None:
        self._listener.close()


def test_a_call_cut_at_its_deadline_closes_its_connection():
    # llama-server cancels a request whose connection closed (it polls the socket each second);
    # a client that gave up but kept the socket open would leave the model decoding an answer
    # nobody reads. Measured against the real server: test_llm_local_model.py.
    server = _SilentServer()
    try:
        client = client_for(server.base_url, timeout_s=0.5)
        response = complete_within(client, request())
        assert not response.ok and "timed out after 0.5 s" in response.error
        assert server.request_read.is_set()
        assert server.closed_by_client.wait(CLOSE_WAIT_S), "the client gave up but kept the connection open"
    finally:
        server.close()
