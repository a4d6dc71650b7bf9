"""A scripted OpenAI-compatible HTTP server on loopback, for tests, benches and offline demos of
the `openai` provider: the real `openai` client talks to it exactly as to a remote endpoint.

Replies are queued per path (`/v1/completions`, `/v1/chat/completions`) and served in order;
when a queue is empty the path's default reply (if any) is served, else 404. A reply can delay
(to provoke client timeouts), return any status (429, 500...) or a raw body (malformed JSON).
Fault modes for the client's limits: `drip_s` sends the whole answer (status line and headers
included) one byte at a time with that pause between bytes; `huge_bytes` streams a body of that
many bytes in chunks (never held in memory, so a test can send 150 MB cheaply); `content_type`
sends any media type (an HTML error page with status 200).
Every request received is kept (path, headers, JSON body) so tests can check what was sent.
It binds 127.0.0.1 on an ephemeral port and stops promptly: delays wait on the stop event.
"""
from __future__ import annotations

import json
import socket
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
    body: Any = None  # dict/list: sent as JSON; str/bytes: sent as is; callable: body(request JSON)
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)
    drip_s: float = 0.0  # > 0: send the answer one byte at a time, this long between bytes
    huge_bytes: int = 0  # > 0: the body is this many filler bytes, streamed in chunks
    content_type: str = "application/json"


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: Any


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: tuple[str, int]) -> None:
        """A client that gave up mid-reply (a timeout test) is expected here, not an error."""


class FakeOpenAIServer:
    """Usage: `with FakeOpenAIServer() as server: OpenAIProvider(base_url=server.base_url, ...)`."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[ScriptedReply]] = defaultdict(deque)
        self._defaults: dict[str, ScriptedReply] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.received: list[ReceivedRequest] = []
        self.huge_bytes_sent = 0  # bytes of `huge_bytes` bodies written before the client hung up
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
            def do_POST(self) -> None:
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
                payload = reply.body(body) if callable(reply.body) else reply.body
                content_type = reply.content_type
                if isinstance(body, dict) and body.get("stream") and reply.status == 200 and isinstance(payload, dict):
                    payload, content_type = as_event_stream(payload), "text/event-stream"
                data = payload.encode() if isinstance(payload, str) else payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                length = reply.huge_bytes or len(data)
                head = [f"HTTP/1.0 {reply.status} {_reason(reply.status)}",
                        f"Content-Type: {content_type}", f"Content-Length: {length}"]
                head += [f"{name}: {value}" for name, value in reply.headers.items()]
                head_bytes = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
                try:
                    if reply.drip_s > 0:
                        for byte in head_bytes + data:
                            if server._stop.wait(reply.drip_s):
                                return
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                    elif reply.huge_bytes:
                        self.wfile.write(head_bytes)
                        chunk = b" " * 65536
                        sent = 0
                        while sent < reply.huge_bytes and not server._stop.is_set():
                            part = chunk[: reply.huge_bytes - sent]
                            self.wfile.write(part)
                            sent += len(part)
                            server.huge_bytes_sent += len(part)
                    else:
                        self.wfile.write(head_bytes + data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout, size cap): expected

            def log_message(self, format: str, *args: Any) -> None:
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


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


def _path(path: str) -> str:
    path = path.split("?", 1)[0]
    return path if path.startswith("/v1/") else "/v1/" + path.lstrip("/")


def _usage(prompt_tokens: int | None, completion_tokens: int | None,
           cached_tokens: int | None = None) -> dict[str, Any] | None:
    if prompt_tokens is None or completion_tokens is None:
        return None
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return usage


def _logprobs(tokens: Sequence[ScriptedToken], layout: str = "legacy") -> dict[str, Any]:
    """Logprobs in OpenAI's legacy completions layout, or (layout "llamacpp") in the chat layout
    llama.cpp's server sends for /v1/completions: `content[i]` with token, bytes, logprob and
    top_logprobs ("llamacpp-bytes": the token strings left empty, only `bytes` carry them)."""
    if layout.startswith("llamacpp"):
        def entry(token: str, lp: float) -> dict[str, Any]:
            return {"id": abs(hash(token)) % 262144, "token": "" if layout == "llamacpp-bytes" else token,
                    "bytes": list(token.encode("utf-8")), "logprob": lp}
        return {"content": [{**entry(token, lp), "top_logprobs": [entry(a, alp) for a, alp in alts.items()]}
                            for token, lp, alts in tokens]}
    offsets, at = [], 0
    for token, _lp, _alts in tokens:
        offsets.append(at)
        at += len(token)
    return {
        "tokens": [t[0] for t in tokens],
        "token_logprobs": [t[1] for t in tokens],
        "top_logprobs": [dict(t[2]) for t in tokens],
        "text_offset": offsets,
    }


def batch_completion_body(
    answers: Sequence[Sequence[ScriptedToken]],
    *,
    model: str = "fake-instruct",
    prompt_tokens: int = 10,
    cached_tokens: int | None = None,
    layout: str = "legacy",
) -> dict[str, Any]:
    """A /v1/completions answer to a list of prompts: choice i (index i) answers prompt i; usage
    is the whole request's (`prompt_tokens` per prompt)."""
    choices = [{"text": "".join(t[0] for t in tokens), "index": i, "logprobs": _logprobs(tokens, layout),
                "finish_reason": "stop"} for i, tokens in enumerate(answers)]
    return {
        "id": "cmpl-fake-batch", "object": "text_completion", "created": 0, "model": model,
        "choices": choices,
        "usage": _usage(prompt_tokens * len(answers), sum(len(t) for t in answers), cached_tokens),
    }


def completion_body(
    tokens: Sequence[ScriptedToken],
    *,
    model: str = "fake-instruct",
    finish_reason: str = "stop",
    prompt_tokens: int | None = 10,
    with_logprobs: bool = True,
    cached_tokens: int | None = None,
    layout: str = "legacy",
) -> dict[str, Any]:
    """A /v1/completions answer, logprobs in the legacy layout (or `layout`, see _logprobs)."""
    text = "".join(t[0] for t in tokens)
    logprobs = _logprobs(tokens, layout)
    body: dict[str, Any] = {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [{"text": text, "index": 0, "logprobs": logprobs if with_logprobs else None, "finish_reason": finish_reason}],
    }
    usage = _usage(prompt_tokens, len(tokens) if prompt_tokens is not None else None, cached_tokens)
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


def as_event_stream(body: Mapping[str, Any]) -> str:
    """A completions answer as llama.cpp's server streams it (`"stream": true`): `data: null`, one
    chunk per token of each choice (its text and logprobs), then each choice's last chunk with its
    finish_reason and its share of the usage, then `data: [DONE]`."""
    choices = list(body.get("choices") or [])
    usage = body.get("usage")
    head = {k: v for k, v in body.items() if k not in ("choices", "usage")}
    events: list[Any] = [None]
    for choice in choices:
        index = choice.get("index", 0)
        logprobs = choice.get("logprobs") or {}
        for piece in _token_pieces(choice.get("text") or "", logprobs):
            events.append({**head, "choices": [{"index": index, "finish_reason": None, **piece}]})
        last: dict[str, Any] = {**head, "choices": [{"text": "", "index": index, "logprobs": None,
                                                     "finish_reason": choice.get("finish_reason")}]}
        if usage:
            share = {k: (v // len(choices) if isinstance(v, int) else v) for k, v in usage.items()}
            last["usage"] = share
        events.append(last)
    return "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"


def _token_pieces(text: str, logprobs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A choice's text and logprobs cut into one piece per token (the whole text as one piece when
    it has no logprobs)."""
    content = logprobs.get("content")
    if isinstance(content, list) and content:
        return [{"text": _entry_text(entry), "logprobs": {"content": [entry]}} for entry in content]
    tokens = logprobs.get("tokens")
    if isinstance(tokens, list) and tokens:
        return [{"text": token, "logprobs": {"tokens": [token],
                                             "token_logprobs": [logprobs.get("token_logprobs", [None] * len(tokens))[i]],
                                             "top_logprobs": [(logprobs.get("top_logprobs") or [{}] * len(tokens))[i]]}}
                for i, token in enumerate(tokens)]
    return [{"text": text, "logprobs": None}] if text else []


def _entry_text(entry: Mapping[str, Any]) -> str:
    raw = entry.get("bytes")
    if not entry.get("token") and isinstance(raw, list):
        return bytes(raw).decode("utf-8", "replace")
    return str(entry.get("token") or "")


def error_body(message: str, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}
