"""Limits on one HTTP call to a model endpoint that the `openai` client cannot set by itself.

The `openai` client's timeout bounds each socket operation, not the call: a server that drips
one byte a second never trips it, and a body of any size is read into memory. `CallGuard` gives
each call (in the calling thread) a wall-clock deadline covering connect, every write and every
read, headers included, and a cap on the bytes received. It does so at the socket layer, through
a network backend wrapped around the HTTP library's own, so it holds whatever the server does.

`split_credentials` / `redact_url` keep `http://user:secret@host` out of every message: the
provider sends those credentials as basic auth and shows the URL with `***` in their place.
"""
from __future__ import annotations

import importlib
import re
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, Union
from urllib.parse import unquote, urlsplit, urlunsplit


class ResponseTooLargeError(Exception):
    """The answer grew past the response size cap; reading stopped there."""


@dataclass
class _CallLimits:
    deadline: float  # time.monotonic() by which the whole call must be over
    max_bytes: int  # 0: no cap
    timeout_s: float
    received: int = 0


class CallGuard:
    """The limits of the call in progress in each thread (the sync client runs a call entirely in
    the thread that made it). Streams consult it on every read and write."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def limits(self, timeout_s: float, max_bytes: int) -> Iterator[None]:
        self._local.call = _CallLimits(time.monotonic() + timeout_s, max(0, int(max_bytes)), timeout_s)
        try:
            yield
        finally:
            self._local.call = None

    def current(self) -> _CallLimits | None:
        return getattr(self._local, "call", None)


def _http_modules() -> tuple[ModuleType, ModuleType]:
    """The HTTP library the installed `openai` uses (httpx2 or httpx) and its core (httpcore)."""
    import openai._base_client as base

    for name in ("httpx2", "httpx"):
        if getattr(base, name, None) is not None:
            return importlib.import_module(name), importlib.import_module(name.replace("httpx", "httpcore"))
    raise ImportError("cannot tell which HTTP library the openai client uses")


def transport_errors() -> tuple[type[Exception], type[Exception]]:
    """The HTTP library's base class of transport failures (a connection lost, a read timed out)
    and of timeouts: a streamed answer raises them while it is read, past the `openai` client's
    own mapping, which covers only the request's start."""
    httpx, _core = _http_modules()
    return httpx.TransportError, httpx.TimeoutException


# A socket option as httpcore takes it: (level, option, value) or (level, option, None, length).
SocketOption = Union[tuple[int, int, int], tuple[int, int, Union[bytes, bytearray]], tuple[int, int, None, int]]


class NetworkStream(Protocol):
    """httpcore's synchronous network stream (httpx2's core has the same): what the guard wraps."""

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes: ...

    def write(self, buffer: bytes, timeout: float | None = None) -> None: ...

    def close(self) -> None: ...

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> NetworkStream: ...

    def get_extra_info(self, info: str) -> Any: ...  # httpcore's own: the socket, the SSL object, ...


class NetworkBackend(Protocol):
    """httpcore's synchronous network backend: how a connection pool opens its connections."""

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[SocketOption] | None = None) -> NetworkStream: ...

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[SocketOption] | None = None) -> NetworkStream: ...

    def sleep(self, seconds: float) -> None: ...


class _GuardedStream:
    """A network stream whose reads and writes stop at the call's deadline and byte cap."""

    def __init__(self, inner: NetworkStream, guard: CallGuard, core: ModuleType) -> None:
        self._inner = inner
        self._guard = guard
        self._core = core

    def _timeout(self, timeout: float | None, error: type[Exception]) -> float | None:
        call = self._guard.current()
        if call is None:
            return timeout
        remaining = call.deadline - time.monotonic()
        if remaining <= 0:
            raise error(f"no complete answer within the call's deadline of {call.timeout_s:g} s")
        return remaining if timeout is None else min(timeout, remaining)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, self._timeout(timeout, self._core.ReadTimeout))
        call = self._guard.current()
        if call is not None:
            call.received += len(data)
            if call.max_bytes and call.received > call.max_bytes:
                raise ResponseTooLargeError(
                    f"response larger than the cap of {call.max_bytes} bytes (client.max_response_bytes); "
                    "stopped reading")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._timeout(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> _GuardedStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, self._timeout(timeout, self._core.ConnectTimeout))
        return _GuardedStream(inner, self._guard, self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend:
    """The HTTP core's network backend, with every connection made and used under the guard."""

    def __init__(self, inner: NetworkBackend, guard: CallGuard, core: ModuleType) -> None:
        self._inner = inner
        self._guard = guard
        self._core = core

    def _connect_timeout(self, timeout: float | None) -> float | None:
        call = self._guard.current()
        if call is None:
            return timeout
        remaining = call.deadline - time.monotonic()
        if remaining <= 0:
            raise self._core.ConnectTimeout(f"no connection within the call's deadline of {call.timeout_s:g} s")
        return remaining if timeout is None else min(timeout, remaining)

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[SocketOption] | None = None) -> _GuardedStream:
        stream = self._inner.connect_tcp(host, port, self._connect_timeout(timeout), local_address, socket_options)
        return _GuardedStream(stream, self._guard, self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[SocketOption] | None = None) -> _GuardedStream:
        stream = self._inner.connect_unix_socket(path, self._connect_timeout(timeout), socket_options)
        return _GuardedStream(stream, self._guard, self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def guarded_http_client(guard: CallGuard, *, auth: tuple[str, str] | None = None, timeout_s: float = 30.0) -> Any:
    """An HTTP client for `openai.OpenAI(http_client=...)` whose sockets obey `guard`."""
    httpx, core = _http_modules()
    client = httpx.Client(transport=httpx.HTTPTransport(), auth=auth, timeout=timeout_s, follow_redirects=False)
    # The proxies from HTTP(S)_PROXY get transports of their own ("mounts"): guard those too.
    transports = [client._transport, *(t for t in getattr(client, "_mounts", {}).values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            raise ImportError(f"{httpx.__name__} {getattr(httpx, '__version__', '?')}: cannot install the "
                              "per-call deadline (unknown transport layout)")
        pool._network_backend = _GuardedBackend(pool._network_backend, guard, core)
    return client


def is_too_large(exc: BaseException) -> ResponseTooLargeError | None:
    """The ResponseTooLargeError behind `exc` (the HTTP library wraps it), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLargeError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


# ----------------------------------------------------------------------------- credentials
@dataclass(frozen=True)
class SplitURL:
    url: str  # without user info: what the HTTP client is given
    shown: str  # what messages show: user info replaced by ***
    username: str = ""
    password: str = ""

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.username, self.password) if self.username or self.password else None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Strings that must never be shown (raw and percent-decoded forms)."""
        out = []
        for value in (self.password, self.username if self.password else ""):
            if value and len(value) >= 3:
                out.append(value)
        return tuple(out)


def split_credentials(url: str) -> SplitURL:
    """`http://user:secret@host:8000/v1` -> the URL without `user:secret@`, a shown form with
    `***@`, and the decoded credentials."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return SplitURL(url, redact_url(url))
    if "@" not in parts.netloc:
        return SplitURL(url, url)
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    shown = urlunsplit((parts.scheme, "***@" + hostport, parts.path, parts.query, parts.fragment))
    return SplitURL(clean, shown, unquote(user), unquote(password))


def redact_url(text: str) -> str:
    """`text` with the user info of every URL in it replaced by ***."""
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@", r"\1***@", text)
