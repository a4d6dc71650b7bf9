"""Hostile clients of the web operator panel, against a real `task-learning run --operator web`.

One run serves the panel on a free loopback port; the probes then do what was measured by hand before: a
flood of wrong pairing codes from another local client (the real operator must still pair), a
flood of connections that never send a request (the paired operator must still answer, and the
answer's latency is measured), headers and a body sent a byte at a time, and unauthenticated
bodies of 300 MB (declared) and 100 MB (streamed). Each result names the run's peak memory so
far (RSS: the kernel's high-water mark, VmHWM, Linux); past 300 MB is not handled. Every request
goes to 127.0.0.1 and every flood is bounded in count and time. The probe answers "no" only:
nothing is confirmed.
"""
from __future__ import annotations

import http.client
import json
import re
import resource
import secrets
import select
import socket
import subprocess
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from task_learning.apps.faults.base import Probe, ProbeContext, ProbeResult
from task_learning.oversight.web.limits import WebLimits

CATEGORY = "web"
MEMORY_LIMIT_MB = 300.0
START_S = 90.0
QUESTION_S = 120.0
PANEL_LINE = re.compile(r"open (http://127\.0\.0\.1:(\d+))/#pair=([0-9A-F]{4}-[0-9A-F]{16})")
DEFAULTS = WebLimits()  # what `run --operator web` serves with


@dataclass
class ServedRun:
    """The run under attack: its process, the panel's port, its pairing code, its stderr."""

    proc: subprocess.Popen[str]
    port: int = 0
    code: str = ""
    stderr: list[str] = field(default_factory=list)

    def peak_mb(self) -> float:
        """The run's peak resident memory so far (VmHWM: the kernel's own high-water mark, so no
        moment between two samples is missed); 0 where /proc has none."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0.0
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        return int(match[1]) / 1024 if match else 0.0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_run(ctx: ProbeContext) -> ServedRun:
    db = ctx.path("web/kb.sqlite")
    command = [ctx.python, "-m", "task_learning.apps.cli", "run", "--scene", "store_groceries", "--condition",
               "STARS+O", "--operator", "web", "--db", str(db), "--web-port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(ctx.env), cwd=ctx.workdir, errors="replace")
    run = ServedRun(proc)
    found = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            run.stderr.append(line.rstrip("\n"))
            match = PANEL_LINE.search(line)
            if match and not found.is_set():
                run.port, run.code = int(match[2]), match[3]
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(START_S):
        run.stop()
        raise RuntimeError(f"the run printed no pairing link within {START_S:g} s: "
                           f"{' | '.join(run.stderr[-3:])}")
    return run


# --- one operator's page, over http.client -------------------------------------------------------

class Page:
    """What the panel's page does: pair, read its session, follow the event stream, answer."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.origin = f"http://127.0.0.1:{port}"
        self.cookie = ""
        self.csrf = ""

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                timeout: float = 15.0) -> tuple[int, dict[str, Any], float]:
        """(status, JSON body, seconds) on a new connection (as a browser opens one under load)."""
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Origin": self.origin, "Content-Type": "application/json", "X-CSRF-Token": self.csrf}
            if self.cookie:
                headers["Cookie"] = self.cookie
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            cookie = response.getheader("set-cookie")
            if cookie:
                self.cookie = cookie.split(";", 1)[0]
            with suppress(ValueError):
                return response.status, json.loads(data or b"{}"), time.monotonic() - started
            return response.status, {}, time.monotonic() - started
        finally:
            conn.close()

    def pair(self, code: str) -> int:
        status, _, _ = self.request("POST", "/api/pair", {"code": code})
        if status == 200:
            status, data, _ = self.request("GET", "/api/session")
            self.csrf = str(data.get("csrf", ""))
        return status

    def follow(self, timeout: float) -> "Stream":
        """Open the page's event stream and keep it open (a question's nonce lives with it) until
        the first question arrives; the stream's `close` ends it."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("GET", "/api/events", headers={"Cookie": self.cookie})
        response = conn.getresponse()
        stream = Stream(conn)
        deadline = time.monotonic() + timeout
        event = ""
        while time.monotonic() < deadline:
            line = response.readline().decode("utf-8", "replace").strip()
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "state":
                pending = json.loads(line.split(":", 1)[1]).get("pending") or []
                if pending:
                    stream.question = dict(pending[0])
                    return stream
        conn.close()
        raise RuntimeError(f"no question reached the page within {timeout:g} s")


@dataclass
class Stream:
    """An open event stream and the first question it showed."""

    conn: http.client.HTTPConnection
    question: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        self.conn.close()


# --- the attacks ----------------------------------------------------------------------------------

def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5.0)


def _closed_by_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(4096, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _memory(run: ServedRun) -> tuple[bool, str]:
    peak = run.peak_mb()
    if not peak:
        return True, "memory not measured (no /proc)"
    return peak < MEMORY_LIMIT_MB, f"the run's peak RSS so far {peak:.0f} MB"


def _wrong_codes(run: ServedRun, count: int) -> tuple[ProbeResult, Page]:
    """Another local client floods wrong codes; then the real operator pairs with the real one."""
    attacker = Page(run.port)
    refused = [attacker.request("POST", "/api/pair", {"code": f"{secrets.token_hex(2)}-{secrets.token_hex(8)}"})[0]
               for _ in range(count)]
    operator = Page(run.port)
    status = operator.pair(run.code)
    ok_mem, mem = _memory(run)
    wrong_ok = all(s in (403, 429) for s in refused)
    handled = status == 200 and wrong_ok and ok_mem
    return ProbeResult(CATEGORY, "wrong-code flood from another client", handled,
                       f"{count} wrong codes refused ({sorted(set(refused))}); the real operator then paired: "
                       f"HTTP {status}; {mem}"), operator


@dataclass
class FloodFigures:
    """What one connection flood cost the paired operator (bench/bench_web_flood.py prints them)."""

    opened: int
    closed: int  # of the flood's connections, by the server
    session: tuple[int, float]  # (HTTP status, seconds) of the operator's session request mid-flood
    answer: tuple[int, float, str]  # (HTTP status, seconds, message) of its answer mid-flood


def flood_and_answer(port: int, operator: Page, count: int, question: dict[str, Any]) -> FloodFigures:
    """`count` connections that never send a request, opened by another thread while the paired
    operator, halfway through, reads its session and answers `question` ("no"), each request on a
    new connection."""
    flood: list[socket.socket] = []
    halfway = threading.Event()

    def open_connections() -> None:
        for i in range(count):
            with suppress(OSError):
                flood.append(_connect(port))
            if i == count // 2:
                halfway.set()
        halfway.set()

    opener = threading.Thread(target=open_connections, daemon=True)
    opener.start()
    try:
        halfway.wait(60)
        status_s, _, session_s = operator.request("GET", "/api/session")
        status_a, reply, answer_s = operator.request(
            "POST", "/api/answer", {"request_id": question["id"], "nonce": question["nonce"],
                                    "answer": "no", "text": ""})
        opener.join(timeout=120)
        time.sleep(0.2)
        closed = sum(_closed_by_server(s) for s in flood)
    finally:
        opener.join(timeout=5)
        for sock in flood:
            sock.close()
    return FloodFigures(len(flood), closed, (status_s, session_s),
                        (status_a, answer_s, str(reply.get("message", ""))))


def _connection_flood(run: ServedRun, operator: Page, count: int, question: dict[str, Any]) -> ProbeResult:
    got = flood_and_answer(run.port, operator, count, question)
    ok_mem, mem = _memory(run)
    held = got.opened - got.closed
    handled = got.session[0] == 200 and got.answer[0] == 200 and held <= 100 and ok_mem
    return ProbeResult(CATEGORY, "connection flood (never a request)", handled,
                       f"{got.opened} connections opened, the server closed {got.closed} (kept {held}); mid-flood "
                       f"the paired operator's session HTTP {got.session[0]} in {got.session[1] * 1000:.0f} ms, "
                       f"answer HTTP {got.answer[0]} in {got.answer[1] * 1000:.0f} ms ({got.answer[2][:60]}); {mem}")


def _slow(run: ServedRun, what: str, head: bytes, drip: bytes, limit_s: float) -> ProbeResult:
    """Send `head`, then one byte of `drip` a second: the server must answer or close by `limit_s`."""
    sock = _connect(run.port)
    started = time.monotonic()
    reply = b""
    try:
        sock.sendall(head)
        for byte in drip:
            readable, _, _ = select.select([sock], [], [], 1.0)
            if readable:
                reply = sock.recv(4096)
                break
            if time.monotonic() - started > limit_s + 5.0:
                break
            with suppress(OSError):
                sock.send(bytes([byte]))
    finally:
        sock.close()
    seconds = time.monotonic() - started
    ok_mem, mem = _memory(run)
    status = reply.split(b"\r\n", 1)[0].decode("ascii", "replace") or "closed without a reply"
    handled = seconds <= limit_s + 3.0 and ok_mem
    return ProbeResult(CATEGORY, f"slow {what}", handled, f"ended after {seconds:.1f} s ({status}); {mem}")


def _declared_body(run: ServedRun, mb: int) -> ProbeResult:
    """An unauthenticated POST that declares `mb` MB: refused before a byte of it is read."""
    sock = _connect(run.port)
    try:
        sock.sendall(f"POST /api/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {mb * 2**20}\r\n\r\n".encode())
        sock.settimeout(10.0)
        reply = sock.recv(4096)
    except OSError as exc:
        reply = f"no reply: {exc}".encode()
    finally:
        sock.close()
    ok_mem, mem = _memory(run)
    status = reply.split(b"\r\n", 1)[0].decode("ascii", "replace")
    return ProbeResult(CATEGORY, f"unauthenticated body of {mb} MB (declared)", " 413 " in status and ok_mem,
                       f"{status}; {mem}")


def _streamed_bodies(run: ServedRun, mb: int, streams: int) -> ProbeResult:
    """`streams` unauthenticated chunked POSTs of up to `mb` MB each, at once."""
    sent = [0] * streams
    replies = [""] * streams

    def stream(i: int) -> None:
        chunk = b"x" * 65536
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        try:
            sock = _connect(run.port)
        except OSError as exc:
            replies[i] = f"connect: {exc}"
            return
        try:
            sock.sendall(b"POST /api/answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            while sent[i] < mb * 2**20:
                sock.sendall(frame)
                sent[i] += len(chunk)
            sock.sendall(b"0\r\n\r\n")
            sock.settimeout(10.0)
            replies[i] = sock.recv(4096).split(b"\r\n", 1)[0].decode("ascii", "replace")
        except OSError as exc:
            replies[i] = f"closed by the server ({type(exc).__name__})"
        finally:
            sock.close()

    threads = [threading.Thread(target=stream, args=(i,), daemon=True) for i in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    ok_mem, mem = _memory(run)
    cut = all(s < mb * 2**20 or " 413 " in r for s, r in zip(sent, replies))
    return ProbeResult(CATEGORY, f"unauthenticated bodies of {mb} MB x{streams} (streamed)", cut and ok_mem,
                       f"sent at most {max(sent) / 2**20:.1f} MB before {replies[0] or 'no reply'}; {mem}")


def _logged_once(run: ServedRun) -> ProbeResult:
    lines = [line for line in run.stderr if "web panel" in line or "Traceback" in line or "ERROR" in line]
    tracebacks = sum("Traceback" in line for line in run.stderr)
    handled = tracebacks == 0 and len(lines) <= 12
    return ProbeResult(CATEGORY, "floods logged once, not per connection", handled,
                       f"{len(lines)} log lines about the attacks, {tracebacks} tracebacks: "
                       + " | ".join(line[:80] for line in lines[:3]))


def _attacks(ctx: ProbeContext, run: ServedRun) -> list[ProbeResult]:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    flood = max(50, min(300 if ctx.fast else 800, soft - 200))
    paired, operator = _wrong_codes(run, 30 if ctx.fast else 100)
    results = [paired]
    if not operator.cookie:
        return results  # no operator to answer during the flood: the rest would prove nothing
    stream = operator.follow(QUESTION_S)
    try:
        results.append(_connection_flood(run, operator, flood, stream.question))
    finally:
        stream.close()
    slow: list[ProbeResult] = []
    attacks: list[Callable[[], ProbeResult]] = [
        lambda: _slow(run, "headers", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 40,
                      DEFAULTS.header_timeout_s),
        lambda: _slow(run, "body", b"POST /api/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                      b"\r\nContent-Length: 40\r\n\r\n", b" " * 40, DEFAULTS.body_timeout_s)]
    threads = [threading.Thread(target=lambda a=a: slow.append(a()), daemon=True) for a in attacks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    results += sorted(slow, key=lambda r: r.name)
    results.append(_declared_body(run, 300))
    results.append(_streamed_bodies(run, 20 if ctx.fast else 100, 3))
    results.append(_logged_once(run))
    return results


def _hostile_web(ctx: ProbeContext) -> list[ProbeResult]:
    try:
        run = start_run(ctx)
    except (RuntimeError, OSError) as exc:
        return [ProbeResult(CATEGORY, "web panel attacks", False, f"could not start the run: {exc}")]
    try:
        return _attacks(ctx, run)
    finally:
        run.stop()


def probes() -> list[Probe]:
    return [Probe(CATEGORY, "web panel attacks", _hostile_web, fast=False)]
