"""What a hostile client can cost the web panel, bounded before anyone is authenticated.

uvicorn bounds a request's header size (h11's incomplete-event limit) and closes an idle
keep-alive connection after `timeout_keep_alive`; it does not time out a connection that never
sends a complete request (a half-open or slowloris connection stays open for ever), caps no body,
and its own `limit_concurrency` answers 503 to every client, the paired operator included, once
others hold the connections. So the panel adds, at uvicorn's and Starlette's extension points:

- `guarded_protocol`: uvicorn's h11 protocol (`Config(http=...)`) with a deadline for a request's
  headers (from the connection's start or the end of the previous response) and a cap on open
  connections. A connection over the cap pushes out the oldest connection still *before* its
  request (no headers yet, or a body still coming) of the client address that holds the most
  connections; a request that has been read (an operator's event stream, an answer being
  processed) is never pushed out. A flood therefore costs the flood, and a new connection of the
  operator's, which sends its request at once, gets in.
- `BodyLimit`: pure ASGI middleware that reads a request's body, at most `max_body_bytes` and
  within `body_timeout_s`, before routing (cookie, Origin, CSRF and pairing all come after it):
  413 or 408 and the connection is closed.
- `FloodLog` and `OncePerWindow`: a flood is logged once a window with the count of what it cost,
  not once a connection; the same for uvicorn's and asyncio's per-connection warnings.
"""
from __future__ import annotations

import asyncio
import json
import logging
import resource
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, ClassVar, MutableMapping

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_HEADER_BYTES = 16 * 1024  # request line and headers (a browser's are below 4 KB)
LOG_WINDOW_S = 60.0
NOISY_LOGGERS = ("uvicorn.error", "asyncio")


@dataclass(frozen=True)
class WebLimits:
    """The panel's resource bounds (web_operator parameters; docs/web-panel.md)."""

    max_connections: int = 100  # open connections in all (a phone's browser uses at most 6)
    header_timeout_s: float = 10.0  # from connect (or the last response) to a complete request header
    body_timeout_s: float = 10.0  # from the request header to the end of its body
    max_body_bytes: int = 16 * 1024  # the largest JSON the page sends is an answer of ~2.3 KB

    def connection_cap(self) -> int:
        """`max_connections`, and never more than a quarter of this process's file descriptors:
        the panel must not starve its own process (a ROS node) of them."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY or soft <= 0:
            return self.max_connections
        return max(4, min(self.max_connections, soft // 4))


class FloodLog:
    """Counts refusals by kind and logs each kind at most once a window, with the count since the
    last line (a flood is one warning a minute, not one per connection)."""

    def __init__(self, logger: logging.Logger = log, window_s: float = LOG_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.window_s = window_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._count: Counter[str] = Counter()
        self.total: Counter[str] = Counter()  # every refusal by kind (the fault probes read it)

    def note(self, kind: str, peer: str) -> None:
        self.total[kind] += 1
        self._count[kind] += 1
        now = self._clock()
        if now - self._last.get(kind, -self.window_s) < self.window_s:
            return
        self._last[kind] = now
        count, self._count[kind] = self._count[kind], 0
        self.logger.warning("web panel: %s (%d since this was last logged, latest from %s; logged at most "
                            "once in %.0f s)", kind, count, peer, self.window_s)


class OncePerWindow(logging.Filter):
    """Lets each distinct message of a logger through once a window (uvicorn's "Invalid HTTP
    request received.", asyncio's accept errors: one per connection in a flood)."""

    def __init__(self, window_s: float = LOG_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window_s = window_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._dropped: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)[:200]
        now = self._clock()
        if now - self._last.get(key, -self.window_s) < self.window_s:
            self._dropped[key] += 1
            return False
        self._last[key] = now
        dropped, self._dropped[key] = self._dropped[key], 0
        if dropped:
            record.msg = f"{record.msg} ({dropped} more like it in the last {self.window_s:.0f} s not logged)"
        if len(self._last) > 1000:
            self._last = {k: t for k, t in self._last.items() if now - t < self.window_s}
        return True


@dataclass
class ConnectionGuard:
    """The open connections of one server (all in its event loop's thread: no lock)."""

    limits: WebLimits
    flood: FloodLog = field(default_factory=FloodLog)
    open: dict["GuardedH11Protocol", str] = field(default_factory=dict)  # connection -> client address
    cap: int = 0  # limits.connection_cap(), read once

    def __post_init__(self) -> None:
        self.cap = self.limits.connection_cap()

    def admit(self, conn: "GuardedH11Protocol", peer: str) -> bool:
        """Count a new connection in; push out a waiting one when over the cap; False when every
        open connection is serving a request (the new one is then closed)."""
        if len(self.open) >= self.cap:
            victim = self._victim()
            if victim is None:
                self.flood.note("connections refused: every connection is serving a request", peer)
                return False
            self.flood.note(f"connection limit ({self.cap}) reached: closed the oldest "
                            f"connections that had not sent a request", peer)
            self.release(victim)
            victim.transport.abort()
        self.open[conn] = peer
        return True

    def _victim(self) -> "GuardedH11Protocol | None":
        per_peer = Counter(self.open.values())
        waiting = [c for c in self.open if c.before_request()]  # oldest first (insertion order)
        if not waiting:
            return None
        top = max(per_peer[self.open[c]] for c in waiting)
        return next(c for c in waiting if per_peer[self.open[c]] == top)

    def release(self, conn: "GuardedH11Protocol") -> None:
        self.open.pop(conn, None)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a place in a `ConnectionGuard`."""

    guard: ClassVar[ConnectionGuard]
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = self.client[0] if self.client else "?"
        if not self.guard.admit(self, peer):
            transport.abort()
            return
        self._arm_header_timer()

    def before_request(self) -> bool:
        """No request header yet, or its body is still coming: nothing has been served."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._cancel_header_timer()  # the header is in; BodyLimit times the body

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_header_timer()  # a kept-alive connection's next request gets the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        self.guard.release(self)
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.guard.limits.header_timeout_s, self._header_timeout)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.guard.flood.note(f"connections closed without a complete request within "
                                  f"{self.guard.limits.header_timeout_s:g} s", self.client[0] if self.client else "?")
            self.guard.release(self)
            self.transport.abort()


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """A protocol class for one server's `uvicorn.Config(http=...)`, bound to its guard."""
    return type("PanelH11Protocol", (GuardedH11Protocol,), {"guard": guard})


class BodyLimit:
    """Reads each request's body before the application sees the request: at most
    `max_body_bytes`, within `body_timeout_s` of its header; 413 or 408 (connection closed)
    otherwise. The application then gets the body from memory, and a later disconnect as before."""

    def __init__(self, app: App, limits: WebLimits, flood: FloodLog) -> None:
        self.app = app
        self.limits = limits
        self.flood = flood

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        peer = (scope.get("client") or ("?",))[0]
        if length is None and b"transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body (a GET)
            return
        if length is not None and (not length.isdigit() or int(length) > self.limits.max_body_bytes):
            self.flood.note(f"request bodies over {self.limits.max_body_bytes} bytes refused unread", peer)
            await _refuse(send, 413, f"request body too large (at most {self.limits.max_body_bytes} bytes)")
            return
        body = await self._read(receive, send, peer)
        if body is None:
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive, send: Send, peer: str) -> bytes | None:
        parts: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.limits.body_timeout_s
        more = True
        while more:
            left = deadline - asyncio.get_running_loop().time()
            try:
                message = await asyncio.wait_for(receive(), timeout=max(0.0, left))
            except asyncio.TimeoutError:
                self.flood.note(f"request bodies not complete within {self.limits.body_timeout_s:g} s", peer)
                await _refuse(send, 408, "request body too slow")
                return None
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                self.flood.note(f"request bodies over {self.limits.max_body_bytes} bytes refused", peer)
                await _refuse(send, 413, f"request body too large (at most {self.limits.max_body_bytes} bytes)")
                return None
            parts.append(chunk)
            more = bool(message.get("more_body", False))
        return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(send: Send, status: int, message: str) -> None:
    data = json.dumps({"accepted": False, "message": message}).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close"), (b"cache-control", b"no-store"),
                            (b"x-content-type-options", b"nosniff")]})
    await send({"type": "http.response.body", "body": data, "more_body": False})


def quiet_noisy_loggers(window_s: float = LOG_WINDOW_S) -> Callable[[], None]:
    """Rate-limit uvicorn's and asyncio's per-connection messages; returns the undo."""
    flt = OncePerWindow(window_s)
    loggers = [logging.getLogger(name) for name in NOISY_LOGGERS]
    for logger in loggers:
        logger.addFilter(flt)

    def undo() -> None:
        for logger in loggers:
            logger.removeFilter(flt)

    return undo
