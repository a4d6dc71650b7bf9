"""Health checks a node reports on `/diagnostics` (diagnostic_msgs/DiagnosticArray, the convention
rqt_robot_monitor and Foxglove's Diagnostics panel read): plain data and the checks themselves,
without ROS. `task_learning_nodes.plumbing.node_base` publishes whatever a node's `diagnostics()` returns.

- `llm_check`: the LLM endpoint reachable, and its latency (an HTTP GET of `<base_url>/models`,
  no credentials sent: any HTTP answer means it is reachable); an open circuit breaker is an
  ERROR too. The offline model and a cassette need no endpoint.
- `kb_check`: the knowledge base can be written (its file, or its folder when not made yet).
- `freshness_check`: something that should keep coming (a world state, camera frames) did lately.
- `queue_check`: how many questions wait for the operator.
"""
from __future__ import annotations

import http.client
import os
import time
import urllib.parse
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Protocol, runtime_checkable

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient

PROBE_TIMEOUT_S = 1.0  # an endpoint that does not answer within this is unreachable


class Level(IntEnum):
    """diagnostic_msgs/DiagnosticStatus levels."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass(frozen=True)
class Check:
    name: str  # "llm", "knowledge base", ...: the status is named "<node>: <name>"
    level: Level
    message: str
    values: Mapping[str, str] = field(default_factory=dict)


def probe_http(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, float, str]:
    """GET <base_url>/models: (reachable, seconds it took, what went wrong or the HTTP status)."""
    url = urllib.parse.urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        return False, 0.0, f"not an http(s) URL: {base_url!r}"
    connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    started = time.perf_counter()
    connection = connection_class(url.hostname, url.port, timeout=timeout_s)
    try:
        connection.request("GET", url.path.rstrip("/") + "/models")
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return False, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
    return True, time.perf_counter() - started, f"HTTP {status}"


@runtime_checkable
class HasEndpoint(Protocol):
    """A provider that talks to a server (the OpenAI-compatible and local ones); the offline and
    replay providers have none."""

    base_url: str


def llm_check(client: LLMClient, timeout_s: float = PROBE_TIMEOUT_S) -> Check:
    """The LLM client's endpoint."""
    provider = client.provider
    name = provider.name
    values = {"provider": name, "model": provider.model or ""}
    broken = client.unavailable
    base_url = provider.base_url if isinstance(provider, HasEndpoint) else ""
    if not base_url:
        what = "offline model (not a language model)" if name == "offline" else f"{name}: no endpoint to reach"
        return Check("llm", Level.ERROR if broken else Level.OK, broken or what, values)
    values["base_url"] = base_url
    reachable, seconds, detail = probe_http(base_url, timeout_s)
    values["latency_ms"] = f"{seconds * 1000:.1f}"
    if not reachable:
        return Check("llm", Level.ERROR, f"endpoint unreachable: {detail}", values)
    if broken:
        return Check("llm", Level.ERROR, broken, values)
    return Check("llm", Level.OK, f"endpoint reachable ({detail}, {seconds * 1000:.0f} ms)", values)


def kb_check(path: str | Path) -> Check:
    """Whether the knowledge base at `path` can be written."""
    text = str(path)
    if text == ":memory:":
        return Check("knowledge base", Level.OK, "in memory", {"path": text})
    target = Path(text)
    if target.exists():
        ok = target.is_file() and os.access(target, os.W_OK)
        why = "writable" if ok else "not a writable file"
    else:
        folder = target.parent if str(target.parent) else Path(".")
        ok = folder.is_dir() and os.access(folder, os.W_OK)
        why = "not created yet; its folder is writable" if ok else f"its folder {folder} is not writable"
    return Check("knowledge base", Level.OK if ok else Level.ERROR, why, {"path": text})


def freshness_check(name: str, last_seen: float | None, max_age_s: float, now: float | None = None,
                    what: str = "updates") -> Check:
    """OK when `last_seen` (time.monotonic()) is within `max_age_s`; STALE when never, ERROR when old."""
    if last_seen is None:
        return Check(name, Level.STALE, f"no {what} yet")
    age = (time.monotonic() if now is None else now) - last_seen
    values = {"age_s": f"{age:.1f}"}
    if age > max_age_s:
        return Check(name, Level.ERROR, f"no {what} for {age:.1f} s (more than {max_age_s:g} s)", values)
    return Check(name, Level.OK, f"{what} {age:.1f} s ago", values)


def queue_check(pending: int, *, warn_at: int = 10) -> Check:
    level = Level.WARN if pending >= warn_at else Level.OK
    return Check("oversight queue", level, f"{pending} question(s) waiting for the operator", {"pending": str(pending)})
