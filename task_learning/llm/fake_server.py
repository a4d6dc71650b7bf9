"""A scripted OpenAI-compatible HTTP server on loopback, for tests, benches and offline demos of
the `openai` provider: the real `openai` client talks to it exactly as to a remote endpoint.

Replies are queued per path (`/v1/completions`, `/v1/chat/completions`) and served in order;
when a queue is empty the path's default reply (if any) is served, else 404. A reply can delay
(to provoke client timeouts), return any status (429, 500...) or a raw body (malformed JSON).
Every request received is kept (path, headers, JSON body) so tests can check what was sent.
It binds 127.0.0.1 on an ephemeral port and stops promptly: delays wait on the stop event.
"""
from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Sequence

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"

# A scripted token: (token, logprob, {alternative: logprob}).
ScriptedToken = tuple[str, float, Mapping[str, float]]


@dataclass
class ScriptedReply:
    status: int = 200
    body: Any = None  # dict/list: sent as JSON; str/bytes: sent as is
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: Any


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up mid-reply (a timeout test) is expected here, not an error."""


class FakeOpenAIServer:
    """Usage: `with FakeOpenAIServer() as server: OpenAIProvider(base_url=server.base_url, ...)`."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[ScriptedReply]] = defaultdict(deque)
        self._defaults: dict[str, ScriptedReply] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.received: list[ReceivedRequest] = []
        self.in_flight = 0  # requests being answered now
        self.max_in_flight = 0  # the most answered at once (shows whether a client is concurrent)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def queue(self, path: str, *replies: ScriptedReply) -> None:
        with self._lock:
            self._queues[_path(path)].extend(replies)

    def set_default(self, path: str, reply: ScriptedReply | None) -> None:
        with self._lock:
            if reply is None:
                self._defaults.pop(_path(path), None)
            else:
                self._defaults[_path(path)] = reply

    def _count_in_flight(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def requests_to(self, path: str) -> list[ReceivedRequest]:
        with self._lock:
            return [r for r in self.received if r.path == _path(path)]

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                reply = server._next(self.path, dict(self.headers.items()), body)
                server._count_in_flight(+1)
                try:
                    if reply.delay_s:
                        server._stop.wait(reply.delay_s)
                finally:
                    server._count_in_flight(-1)
                payload = reply.body
                data = payload.encode() if isinstance(payload, str) else payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): expected

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, path: str, headers: dict[str, str], body: Any) -> ScriptedReply:
        path = _path(path)
        with self._lock:
            self.received.append(ReceivedRequest(path, headers, body))
            if self._queues[path]:
                return self._queues[path].popleft()
            if path in self._defaults:
                return self._defaults[path]
        return ScriptedReply(status=404, body={"error": {"message": f"no scripted reply for {path}", "type": "not_found"}})


def _path(path: str) -> str:
    path = path.split("?", 1)[0]
    return path if path.startswith("/v1/") else "/v1/" + path.lstrip("/")


def _usage(prompt_tokens: int | None, completion_tokens: int | None) -> dict[str, int] | None:
    if prompt_tokens is None or completion_tokens is None:
        return None
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}


def completion_body(
    tokens: Sequence[ScriptedToken],
    *,
    model: str = "fake-instruct",
    finish_reason: str = "stop",
    prompt_tokens: int | None = 10,
    with_logprobs: bool = True,
) -> dict[str, Any]:
    """A /v1/completions answer in the legacy logprobs format."""
    text = "".join(t[0] for t in tokens)
    offsets, at = [], 0
    for token, _lp, _alts in tokens:
        offsets.append(at)
        at += len(token)
    logprobs = {
        "tokens": [t[0] for t in tokens],
        "token_logprobs": [t[1] for t in tokens],
        "top_logprobs": [dict(t[2]) for t in tokens],
        "text_offset": offsets,
    }
    body: dict[str, Any] = {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [{"text": text, "index": 0, "logprobs": logprobs if with_logprobs else None, "finish_reason": finish_reason}],
    }
    usage = _usage(prompt_tokens, len(tokens) if prompt_tokens is not None else None)
    if usage:
        body["usage"] = usage
    return body


def chat_body(
    text: str,
    *,
    model: str = "fake-chat",
    tokens: Sequence[ScriptedToken] | None = None,
    finish_reason: str = "stop",
    prompt_tokens: int | None = 20,
    completion_tokens: int | None = None,
) -> dict[str, Any]:
    """A /v1/chat/completions answer, with chat-format logprobs when `tokens` are given."""
    logprobs = None
    if tokens is not None:
        logprobs = {
            "content": [
                {
                    "token": token,
                    "logprob": lp,
                    "bytes": None,
                    "top_logprobs": [{"token": a, "logprob": alp, "bytes": None} for a, alp in alts.items()],
                }
                for token, lp, alts in tokens
            ]
        }
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": logprobs, "finish_reason": finish_reason}],
    }
    if completion_tokens is None:
        completion_tokens = len(tokens) if tokens is not None else max(1, len(text) // 4)
    usage = _usage(prompt_tokens, completion_tokens)
    if usage:
        body["usage"] = usage
    return body


def error_body(message: str, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}
