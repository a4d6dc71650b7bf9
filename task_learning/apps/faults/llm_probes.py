"""LLM endpoint faults against the local fake OpenAI-compatible server (task_learning.testing.fake_server),
through the real `openai` client and `make_client`, as a run would meet them."""
from __future__ import annotations

import math
import shutil
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from task_learning.apps.faults.base import (
    Probe,
    ProbeContext,
    ProbeResult,
    expect_one_line_error,
    run_command,
)
from task_learning.inputs.config import config_dir
from task_learning.llm.base import LLMRequest, LLMResponse

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient
from task_learning.testing.fake_server import (
    CHAT,
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    chat_body,
    completion_body,
    error_body,
)

CATEGORY = "llm"
CALL_DEADLINE_S = 120.0  # a call still running after this is a hang
SECRET = "sk-faults-NOT-A-REAL-KEY-4242"
TOKENS = [(" the", math.log(0.9), {" the": math.log(0.9), " a": math.log(0.05)}),
          (" mug", math.log(0.6), {" mug": math.log(0.6), " cup": math.log(0.3)})]


def _request(prefix: str = "") -> LLMRequest:
    return LLMRequest(prompt_type="initial", prompt="Task: tidy kitchen\n(RESULT)" + prefix, logprobs=5,
                      stop=("\n",), context={"object": "mug", "prefix": prefix}, scope="Mug|1")


def _client(base_url: str, **options: Any) -> LLMClient:
    from task_learning.llm.client import make_client

    options.setdefault("cache", False)
    options.setdefault("backoff_s", 0.01)
    options.setdefault("max_backoff_s", 0.05)
    return make_client("openai", env={"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": SECRET}, **options)


def _call(client: LLMClient, request: LLMRequest) -> LLMResponse | None:
    """The call in a thread; None if it is still running at the deadline (a hang)."""
    box: dict[str, LLMResponse] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", client.complete(request)), daemon=True)
    worker.start()
    worker.join(CALL_DEADLINE_S)
    return box.get("r")


def _served(name: str, reply: ScriptedReply | list[ScriptedReply], judge: Callable[[LLMResponse, Any, FakeOpenAIServer], tuple[bool, str]],
            **options: Any) -> Callable[[ProbeContext], ProbeResult]:
    def probe(ctx: ProbeContext) -> ProbeResult:
        with FakeOpenAIServer() as server:
            if isinstance(reply, list):
                server.queue(COMPLETIONS, *reply)
                server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(TOKENS)))
            else:
                server.set_default(COMPLETIONS, reply)
            client = _client(server.base_url, **options)
            try:
                response = _call(client, _request())
                if response is None:
                    return ProbeResult(CATEGORY, name, False, f"call still running after {CALL_DEADLINE_S:g} s (hang)")
                handled, detail = judge(response, client, server)
            finally:
                client.close()
        if SECRET in detail:
            return ProbeResult(CATEGORY, name, False, "the API key appears in the error")
        return ProbeResult(CATEGORY, name, handled, detail)

    return probe


def _error_naming(*needles: str) -> Callable[[LLMResponse, Any, FakeOpenAIServer], tuple[bool, str]]:
    def judge(response: LLMResponse, _client: LLMClient, _server: FakeOpenAIServer) -> tuple[bool, str]:
        if response.ok:
            return False, "accepted as a valid answer"
        missing = [n for n in needles if n not in response.error]
        return (not missing), response.error if not missing else f"error lacks {missing}: {response.error}"

    return judge


def _recovered(retries: int) -> Callable[[LLMResponse, Any, FakeOpenAIServer], tuple[bool, str]]:
    def judge(response: LLMResponse, client: LLMClient, _server: FakeOpenAIServer) -> tuple[bool, str]:
        ok = response.ok and client.retries == retries and not client.unavailable
        return ok, f"answered after {client.retries} retries" if ok else f"not recovered: {response.error or client.unavailable}"

    return judge


def _huge(response: LLMResponse, _client: LLMClient, server: FakeOpenAIServer) -> tuple[bool, str]:
    ok = not response.ok and "larger than the cap" in response.error and server.huge_bytes_sent < 40_000_000
    return ok, f"{response.error} (server pushed {server.huge_bytes_sent / 1e6:.1f} MB of 150 MB)"


def _unauthorized(response: LLMResponse, client: LLMClient, server: FakeOpenAIServer) -> tuple[bool, str]:
    second = _call(client, _request(" again"))
    calls = len(server.requests_to(COMPLETIONS))
    ok = "401" in response.error and bool(client.unavailable) and second is not None and not second.ok and calls == 1
    return ok, f"{response.error}; later calls refused without a request ({calls} request sent)"


def _dead_endpoint(ctx: ProbeContext) -> ProbeResult:
    """A whole `run --llm openai` against a closed port: the breaker must end it, exit non-zero."""
    cfg = ctx.path("config_dead_endpoint")
    if not cfg.exists():
        shutil.copytree(config_dir(), cfg)
    llm = cfg / "llm.yaml"
    llm.write_text(llm.read_text().replace("backoff_s: 1.0", "backoff_s: 0.05"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = ctx.path("dead_endpoint.sqlite")
    outcome = run_command(ctx, ["run", "--scene", "tidy_kitchen", "--condition", "STARS", "--llm", "openai",
                                "--db", str(db)],
                          env={"TASK_LEARNING_CONFIG": str(cfg),
                               "OPENAI_BASE_URL": f"http://robot:pw-{SECRET}@127.0.0.1:{port}/v1"})
    result = expect_one_line_error(CATEGORY, "dead endpoint (whole run)", outcome, "unavailable", "***@")
    if SECRET in outcome.stdout + outcome.stderr:
        return ProbeResult(CATEGORY, result.name, False, "the URL's password reached the terminal")
    result.detail = f"{result.detail} ({outcome.seconds:.1f} s)"
    return result


def _dead_endpoint_client(ctx: ProbeContext) -> ProbeResult:
    """The client alone against a closed port: the breaker opens, later calls are not made."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = _client(f"http://127.0.0.1:{port}/v1", max_retries=10, breaker_failures=3)
    try:
        first = _call(client, _request())
        second = _call(client, _request(" again"))
    finally:
        client.close()
    if first is None or second is None:
        return ProbeResult(CATEGORY, "dead endpoint (client)", False, f"call still running after {CALL_DEADLINE_S:g} s")
    ok = bool(client.unavailable) and "not called" in second.error
    return ProbeResult(CATEGORY, "dead endpoint (client)", ok, client.unavailable or first.error)


def _wrong_object(ctx: ProbeContext) -> ProbeResult:
    """The model answers about the cheese whatever it is asked: the goal for the plastic cups
    must not become "the cheese is in the fridge"."""
    from task_learning.stars.conditions import parse_condition
    from task_learning.stars.elicit import elicit_goal
    from task_learning.world.scene import load_scene

    text = " the goal is that the cheese is in the fridge"
    words = [" the", " goal", " is", " that", " the", " cheese", " is", " in", " the", " fridge"]
    tokens = [(w, math.log(0.95), {w: math.log(0.95)}) for w in words]
    assert "".join(words) == text
    scene = load_scene("store_groceries")
    metadata = {"sceneName": scene.name, "objects": scene.objects}
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(tokens)))
        server.set_default(CHAT, ScriptedReply(body=chat_body("1")))
        client = _client(server.base_url)
        try:
            result = elicit_goal(scene.task, "PlasticCups|1", metadata, scene, parse_condition("STARS"), client)
        finally:
            client.close()
    chosen = result.chosen
    if chosen is None:
        return ProbeResult(CATEGORY, "wrong object in the answer", True,
                           f"no goal chosen for the plastic cups ({result.outcome})")
    about = [lit for lit in chosen.literals if "PlasticCups|1" in str(lit)]
    if not about:
        return ProbeResult(CATEGORY, "wrong object in the answer", False,
                           f"chose {chosen.text.strip()!r} as the plastic cups' goal (viable={chosen.viable})")
    return ProbeResult(CATEGORY, "wrong object in the answer", True, f"chose a goal about the cups: {chosen.text.strip()!r}")


def _bad(value: float) -> list[tuple[str, float, dict[str, float]]]:
    """The scripted answer with its first token's logprob (and alternative) set to `value`."""
    return [(" the", value, {" the": value, " a": math.log(0.05)})] + list(TOKENS[1:])


def probes() -> list[Probe]:
    bad = _bad
    return [
        Probe(CATEGORY, "429 burst", _served("429 burst", [ScriptedReply(status=429, body=error_body("slow down"))] * 3,
                                             _recovered(3), max_retries=5)),
        Probe(CATEGORY, "500 burst", _served("500 burst", [ScriptedReply(status=500, body=error_body("boom"))] * 3,
                                             _recovered(3), max_retries=5)),
        Probe(CATEGORY, "hang (no answer)", _served(
            "hang (no answer)", ScriptedReply(body=completion_body(TOKENS), delay_s=600.0),
            _error_naming("timed out after 1 s"), timeout_s=1.0, max_retries=0)),
        Probe(CATEGORY, "drip (1 byte per 0.5 s)", _served(
            "drip (1 byte per 0.5 s)", ScriptedReply(body=completion_body(TOKENS), drip_s=0.5),
            _error_naming("timed out after 2 s", "no complete answer"), timeout_s=2.0, max_retries=0)),
        Probe(CATEGORY, "huge body (150 MB)", _served(
            "huge body (150 MB)", ScriptedReply(huge_bytes=150_000_000), _huge, max_retries=0,
            max_response_bytes=2_000_000)),
        Probe(CATEGORY, "logprob +5", _served("logprob +5", ScriptedReply(body=completion_body(bad(5.0))),
                                              _error_naming("malformed logprobs"), max_retries=0)),
        Probe(CATEGORY, "logprob NaN", _served("logprob NaN", ScriptedReply(body=completion_body(bad(float("nan")))),
                                               _error_naming("malformed logprobs"), max_retries=0)),
        Probe(CATEGORY, "error body with status 200", _served(
            "error body with status 200", ScriptedReply(body=error_body(f"overloaded, key {SECRET}")),
            _error_naming("overloaded", "status 200"), max_retries=0)),
        Probe(CATEGORY, "HTML page with status 200", _served(
            "HTML page with status 200",
            ScriptedReply(body="<html><body><h1>Bad gateway</h1></body></html>", content_type="text/html"),
            _error_naming("HTML page", "Bad gateway"), max_retries=0)),
        Probe(CATEGORY, "401 unauthorized", _served(
            "401 unauthorized", ScriptedReply(status=401, body=error_body("invalid key", "invalid_api_key")),
            _unauthorized, max_retries=3)),
        Probe(CATEGORY, "wrong object in the answer", _wrong_object),
        Probe(CATEGORY, "dead endpoint (client)", _dead_endpoint_client),
        Probe(CATEGORY, "dead endpoint (whole run)", _dead_endpoint, fast=False),
    ]
