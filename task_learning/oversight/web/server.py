"""The web operator panel: a paired operator answers the robot's questions from a phone or a laptop.

One FastAPI application on uvicorn, serving a static page (static/) and a small JSON API, with
server-sent events for live questions. Where questions come from and where answers go is a
`WebBackend`: the oversight node's services through its ROS client (nodes/nodes/web_operator.py: the
answer is signed with the paired operator's key, as rqt's and the terminal's are), or the
in-process queue of `task-learning run --operator web` (backend.QueueBackend).

Who may see and answer (docs/web-panel.md):
- Pairing: a one-time code from the robot's terminal (`task-learning operator --web`), redeemed
  once within pairing.py's rate limits, becomes the operator's token, kept by the browser as an
  HttpOnly, SameSite=Strict cookie (Secure behind TLS). The knowledge base keeps only its verifier.
  Every request re-checks the token there, so an unpaired or revoked operator sees nothing (401).
- CSRF: an answer needs the session's CSRF token in a header (an HMAC of the token's verifier
  under a key of this process) and an Origin equal to the page's own; the Host must be one this
  server answers for (DNS rebinding).
- Replay and stale pages: each question reaches a page with a nonce issued to that page's live
  event stream; an answer must carry it, it is used once, and it dies with the stream (a closed
  tab, a dropped connection) and with the question (answered, expired, withdrawn).
- Rate limits: answers per operator per minute; pairing attempts per client and in all.
- Fail closed: nothing here ever answers by itself; the first answer to a question wins and a
  second is told who answered (409).
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol

from fastapi import Cookie, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.middleware.trustedhost import TrustedHostMiddleware

from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.oversight.answers import interpret_reply
from task_learning.oversight.pairing import (
    OperatorCredentials,
    OperatorRegistry,
    PairingError,
    PairingRateLimited,
    RateLimiter,
    new_nonce,
    sign,
)
from task_learning.oversight.web.limits import (
    MAX_HEADER_BYTES,
    BodyLimit,
    ConnectionGuard,
    FloodLog,
    WebLimits,
    guarded_protocol,
    quiet_noisy_loggers,
)
from task_learning.oversight.web.view import question_view
from task_learning.types import AnswerKind, ConfirmationRequest

if TYPE_CHECKING:
    import uvicorn

    from task_learning.kb.store import KnowledgeBase

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
COOKIE = "tl_operator"
CSRF_HEADER = "x-csrf-token"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
BACKLOG = 64
MAX_TEXT = 2000
HISTORY = 20
DEFAULT_PORT = 8770  # not 8765: that is the live view's (Foxglove's WebSocket default)
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class AnswerReply(Protocol):
    @property
    def accepted(self) -> bool: ...

    @property
    def message(self) -> str: ...


class WebBackend(Protocol):
    """Where the panel reads questions and sends answers."""

    def pending(self) -> list[ConfirmationRequest]: ...

    def submit(self, request_id: str, answer: AnswerKind, description: str,
               credentials: OperatorCredentials, client: str) -> AnswerReply: ...

    def image(self, request_id: str) -> bytes | None:
        """The camera image (JPEG) kept with a question, or None."""
        ...

    def set_listener(self, listener: Callable[[], None]) -> None:
        """`listener` is called (from any thread) whenever the pending questions change."""
        ...


class WebPanelError(TaskLearningError):
    """A web panel that cannot start (a bad address, TLS files, a port in use)."""


@dataclass
class WebSettings:
    """How the panel listens and whom it serves (the web_operator node's parameters)."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tls_certfile: str = ""
    tls_keyfile: str = ""
    allowed_hosts: tuple[str, ...] = ()  # names the page may be reached by, besides host and loopback
    operators: frozenset[str] = frozenset()  # empty: every paired operator
    answers_per_minute: int = 30
    cookie_days: float = 30.0
    client_name: str = "web"  # the answering client's name, kept with every answer
    limits: WebLimits = field(default_factory=WebLimits)  # connections, header/body time, body size

    @property
    def tls(self) -> bool:
        return bool(self.tls_certfile)

    def check(self) -> None:
        if bool(self.tls_certfile) != bool(self.tls_keyfile):
            raise WebPanelError("web panel: tls_certfile and tls_keyfile go together (give both or neither)")
        for path in (self.tls_certfile, self.tls_keyfile):
            if path and not Path(path).is_file():
                raise WebPanelError(f"web panel: no TLS file at {path}")
        if self.host not in LOOPBACK and not self.tls:
            raise WebPanelError(f"web panel: listening on {self.host} (beyond this machine) needs TLS: set "
                                f"tls_certfile and tls_keyfile (docs/web-panel.md), or keep host 127.0.0.1")
        if not 0 <= int(self.port) <= 65535:
            raise WebPanelError(f"web panel: port {self.port} is not a port (0-65535; 0: any free one)")
        limits = self.limits
        if not (limits.max_connections >= 4 and limits.max_body_bytes >= 1024
                and 0 < limits.header_timeout_s <= 600 and 0 < limits.body_timeout_s <= 600):
            raise WebPanelError(f"web panel: limits {limits}: at least 4 connections and 1024 body bytes, "
                                f"timeouts above 0 and at most 600 s")


@dataclass(eq=False)  # each page its own, hashed by identity
class _Viewer:
    """One open page (its event stream): the nonces it was given, one per pending question."""

    operator: str
    nonces: dict[str, str] = field(default_factory=dict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    alive: bool = True


@dataclass(frozen=True)
class _Answered:
    request_id: str
    operator: str
    answer: str
    description: str
    question: str
    object_description: str
    candidate_text: str
    client: str
    answered_at: float


class WebPanel:
    """The panel's state and checks; `app()` builds the FastAPI application over it."""

    def __init__(self, backend: WebBackend, kb: KnowledgeBase, settings: WebSettings | None = None, *,
                 registry: OperatorRegistry | None = None, refresh_s: float = 10.0) -> None:
        self.backend = backend
        self.kb = kb
        self.settings = settings or WebSettings()
        self.registry = registry or OperatorRegistry(kb)
        self.refresh_s = refresh_s
        self._key = secrets.token_bytes(32)  # this process's CSRF key
        self._answers = RateLimiter(self.settings.answers_per_minute, 60.0)
        self.flood = FloodLog()  # refusals by kind, logged once a minute (limits.py)
        self._viewers: set[_Viewer] = set()
        self._answered: dict[str, _Answered] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        backend.set_listener(self.notify)

    # --- change notification (any thread) ----------------------------------------------------

    def notify(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake_all)
            except RuntimeError:  # the loop stopped meanwhile
                pass

    def _wake_all(self) -> None:
        for viewer in list(self._viewers):
            viewer.wake.set()

    def close(self) -> None:
        """End every event stream (the server is stopping)."""
        self._closing = True
        self.notify()

    # --- who is asking -------------------------------------------------------------------------

    def operator_of(self, token: str | None) -> str:
        """The paired operator a cookie's token belongs to; HTTPException 401/403 otherwise."""
        if not token:
            raise HTTPException(401, "not paired: enter the pairing code shown on the robot's terminal")
        name = self.registry.verify_token(token)
        if name is None:
            raise HTTPException(401, "this pairing is no longer valid (revoked or paired again): pair again")
        if self.settings.operators and name not in self.settings.operators:
            raise HTTPException(403, f"operator {name!r} may not answer here")
        return name

    def csrf_token(self, token: str) -> str:
        return sign(self._key, "csrf-v1", OperatorCredentials.from_token(token).key.hex())

    def check_origin(self, request: Request) -> None:
        """A state-changing request must come from this page: same Origin (and, where the browser
        says, a same-origin fetch)."""
        scheme = "https" if self.settings.tls else "http"
        origin = request.headers.get("origin", "")
        if origin != f"{scheme}://{request.headers.get('host', '')}":
            raise HTTPException(403, "refused: the request did not come from this page (Origin)")
        site = request.headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            raise HTTPException(403, "refused: the request did not come from this page (Sec-Fetch-Site)")

    def check_csrf(self, request: Request, token: str) -> None:
        self.check_origin(request)
        given = request.headers.get(CSRF_HEADER, "")
        if not given or not hmac.compare_digest(given, self.csrf_token(token)):
            raise HTTPException(403, "refused: missing or stale CSRF token; the page reloads its session")

    # --- what a page sees ----------------------------------------------------------------------

    def snapshot(self, viewer: _Viewer, pending: list[ConfirmationRequest], history: list[dict[str, Any]],
                 images: set[str]) -> dict[str, Any]:
        """The state one page gets (in the event loop: the nonces are the loop's)."""
        ids = {r.request_id for r in pending}
        for gone in [rid for rid in viewer.nonces if rid not in ids]:
            del viewer.nonces[gone]
        now = time.time()
        views = []
        for request in pending:
            nonce = viewer.nonces.setdefault(request.request_id, new_nonce())
            views.append(question_view(request, nonce=nonce, now=now, has_image=request.request_id in images))
        stored = {r["request_id"] for r in history}
        rows = history + [a.__dict__.copy() for a in self._answered.values()
                          if a.operator == viewer.operator and a.request_id not in stored]
        rows.sort(key=lambda r: -float(r.get("answered_at") or 0.0))
        return {"operator": viewer.operator, "server_time": now, "pending": views,
                "history": [{k: r.get(k) for k in ("request_id", "question", "object_description",
                                                   "candidate_text", "answer", "description", "client",
                                                   "answered_at")} for r in rows[:HISTORY]]}

    def images(self, pending: list[ConfirmationRequest]) -> set[str]:
        """The ids of the questions that have a camera image (an image is a courtesy: a failing
        backend shows none rather than breaking the page)."""
        found = set()
        for request in pending:
            try:
                if self.backend.image(request.request_id) is not None:
                    found.add(request.request_id)
            except Exception:  # noqa: BLE001 - history is optional on the page
                pass
        return found

    def history(self, operator: str) -> list[dict[str, Any]]:
        """This operator's latest answers as the knowledge base holds them (the answers given here
        that it does not hold yet are added by `snapshot`: the asking side writes them when the
        answer reaches it)."""
        try:
            return list(self.kb.answer_history(operator, HISTORY))
        except Exception as exc:  # noqa: BLE001 - history is optional on the page
            log.warning("answer history unavailable: %s", exc)
            return []

    def closed_reason(self, request_id: str) -> str:
        done = self._answered.get(request_id)
        if done is not None:
            return (f"already answered by {done.operator} ({done.answer}) at "
                    f"{time.strftime('%H:%M:%S', time.localtime(done.answered_at))}; your answer was not used")
        return ("this question is no longer waiting (another operator answered it, it timed out, or the "
                "robot withdrew it); your answer was not used")

    # --- answering -----------------------------------------------------------------------------

    def _viewer_with(self, operator: str, request_id: str, nonce: str) -> _Viewer | None:
        for viewer in self._viewers:
            held = viewer.nonces.get(request_id)
            if viewer.alive and viewer.operator == operator and held and hmac.compare_digest(held, nonce):
                return viewer
        return None

    async def answer(self, operator: str, token: str, request_id: str, nonce: str, kind: str,
                     text: str, peer: str) -> tuple[int, dict[str, Any]]:
        """(HTTP status, body) for one answer from a page."""
        wait = self._answers.allow(operator)
        if wait:
            return 429, {"accepted": False, "message": f"too many answers; try again in {wait:.0f} s"}
        pending = await run_in_threadpool(self.backend.pending)
        request = next((r for r in pending if r.request_id == request_id), None)
        if request is None:
            return 409, {"accepted": False, "message": self.closed_reason(request_id)}
        viewer = self._viewer_with(operator, request_id, nonce)
        if viewer is None:
            return 409, {"accepted": False, "message": "this page's copy of the question is stale (its "
                         "connection was renewed or the answer was sent before); nothing was answered"}
        if kind == "yes":
            if request.wants_description:
                return 422, {"accepted": False, "message": interpret_reply(request, "yes").hint}
            answer, description = AnswerKind.YES, ""
        elif kind == "no":
            answer, description = AnswerKind.NO, ""
        else:
            reply = interpret_reply(request, text)
            if reply.answer is None:
                return 422, {"accepted": False, "message": reply.hint, "hint": True}
            answer, description = reply.answer, reply.description
        del viewer.nonces[request_id]  # used once, whatever the robot says
        viewer.wake.set()
        creds = OperatorCredentials.from_token(token)
        client = printable(f"{self.settings.client_name} {peer}", 120)
        reply_ = await run_in_threadpool(self.backend.submit, request_id, answer, description, creds, client)
        if not reply_.accepted:
            closed = "no pending question" in reply_.message or "timed out" in reply_.message
            return (409 if closed else 422), {
                "accepted": False, "message": self.closed_reason(request_id) if closed else reply_.message}
        self._answered[request_id] = _Answered(
            request_id, operator, answer.value, description, request.question, request.object_description,
            request.candidate.text if request.candidate else "", client, time.time())
        while len(self._answered) > 200:
            self._answered.pop(next(iter(self._answered)))
        self._wake_all()
        return 200, {"accepted": True, "message": reply_.message, "answer": answer.value,
                     "description": description}

    # --- the application -----------------------------------------------------------------------

    def allowed_hosts(self) -> list[str]:
        hosts = {*LOOPBACK, "[::1]", self.settings.host, *self.settings.allowed_hosts}
        return sorted(h for h in hosts if h and h not in ("0.0.0.0", "::"))

    def app(self) -> FastAPI:
        return _build_app(self)


class PairBody(BaseModel):
    code: str = Field(min_length=1, max_length=64)


class AnswerBody(BaseModel):
    request_id: str = Field(min_length=1, max_length=64)
    nonce: str = Field(min_length=1, max_length=64)
    answer: Literal["yes", "no", "words"]
    text: str = Field(default="", max_length=MAX_TEXT)


def _build_app(panel: WebPanel) -> FastAPI:
    app = FastAPI(title="task_learning operator", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limits=panel.settings.limits, flood=panel.flood)  # innermost: after Host
    _add_guards(app, panel)

    @app.get("/")
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _add_session_routes(app, panel)
    _add_question_routes(app, panel)
    return app


def _peer_of(request: Request) -> str:
    return request.client.host if request.client else "?"


def _add_guards(app: FastAPI, panel: WebPanel) -> None:
    """What every response carries (security headers, allowed hosts) and how errors read."""
    settings = panel.settings

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if panel._loop is None:
            panel._loop = asyncio.get_running_loop()
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
        response.headers.setdefault("Cache-Control", "no-store")
        if settings.tls:
            response.headers["Strict-Transport-Security"] = "max-age=31536000"
        return response

    app.add_middleware(TrustedHostMiddleware, allowed_hosts=panel.allowed_hosts())

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"accepted": False, "message": str(exc.detail)}, status_code=exc.status_code)


def _add_session_routes(app: FastAPI, panel: WebPanel) -> None:
    """Pairing with a code, the session it opens (operator name, CSRF token) and logging out."""
    settings = panel.settings

    @app.post("/api/pair")
    async def pair(body: PairBody, request: Request) -> JSONResponse:
        panel.check_origin(request)
        try:
            token = await run_in_threadpool(panel.registry.redeem, body.code, _peer_of(request))
        except PairingRateLimited as exc:
            return JSONResponse({"accepted": False, "message": str(exc)}, status_code=429)
        except PairingError as exc:
            return JSONResponse({"accepted": False, "message": str(exc)}, status_code=403)
        name = OperatorCredentials.from_token(token).name
        log.info("operator %s paired from %s", name, _peer_of(request))
        response = JSONResponse({"accepted": True, "operator": name})
        response.set_cookie(COOKIE, token, max_age=int(settings.cookie_days * 86400), httponly=True,
                            samesite="strict", secure=settings.tls, path="/")
        return response

    @app.get("/api/session")
    async def session(tl_operator: str | None = Cookie(default=None)) -> dict[str, Any]:
        name = await run_in_threadpool(panel.operator_of, tl_operator)
        assert tl_operator is not None
        return {"operator": name, "csrf": panel.csrf_token(tl_operator), "server_time": time.time()}

    @app.post("/api/logout")
    async def logout(request: Request) -> JSONResponse:
        panel.check_origin(request)
        response = JSONResponse({"accepted": True})
        response.delete_cookie(COOKIE, path="/", samesite="strict", secure=settings.tls, httponly=True)
        return response


def _add_question_routes(app: FastAPI, panel: WebPanel) -> None:
    """The questions: a live stream of the pending ones, their camera images, and answers."""

    @app.get("/api/events")
    async def events(request: Request, tl_operator: str | None = Cookie(default=None)) -> EventSourceResponse:
        operator = await run_in_threadpool(panel.operator_of, tl_operator)
        viewer = _Viewer(operator)
        panel._viewers.add(viewer)

        async def stream() -> AsyncIterator[dict[str, str]]:
            try:
                while not panel._closing:
                    viewer.wake.clear()
                    try:  # revoked meanwhile: the stream ends and shows nothing more
                        await run_in_threadpool(panel.operator_of, tl_operator)
                    except HTTPException:
                        yield {"event": "unpaired", "data": "{}"}
                        return
                    pending = await run_in_threadpool(panel.backend.pending)
                    history = await run_in_threadpool(panel.history, operator)
                    images = await run_in_threadpool(panel.images, pending)
                    state = panel.snapshot(viewer, pending, history, images)
                    yield {"event": "state", "data": json.dumps(state)}
                    try:
                        await asyncio.wait_for(viewer.wake.wait(), timeout=panel.refresh_s)
                    except asyncio.TimeoutError:
                        pass
            finally:
                viewer.alive = False  # its nonces die with it: a closed tab answers nothing
                panel._viewers.discard(viewer)

        return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store"})

    @app.get("/api/questions/{request_id}/image")
    async def image(request_id: str, tl_operator: str | None = Cookie(default=None)) -> Response:
        await run_in_threadpool(panel.operator_of, tl_operator)
        data = await run_in_threadpool(panel.backend.image, request_id[:64])
        if data is None:
            raise HTTPException(404, "no camera image with this question")
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, no-store"})

    @app.post("/api/answer")
    async def answer(body: AnswerBody, request: Request, tl_operator: str | None = Cookie(default=None)) -> JSONResponse:
        operator = await run_in_threadpool(panel.operator_of, tl_operator)
        assert tl_operator is not None
        panel.check_csrf(request, tl_operator)
        status, data = await panel.answer(operator, tl_operator, body.request_id, body.nonce, body.answer,
                                          body.text, _peer_of(request))
        return JSONResponse(data, status_code=status)


def panel_url(settings: WebSettings, port: int) -> str:
    """The address a person opens: https behind TLS; the machine's name for a wildcard address."""
    host = settings.host
    if host in ("0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"{'https' if settings.tls else 'http'}://{host}:{port}/"


class WebServer:
    """uvicorn serving a WebPanel from a thread of this process (a node's, or a run's)."""

    def __init__(self, panel: WebPanel) -> None:
        panel.settings.check()
        self.panel = panel
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._unquiet: Callable[[], None] | None = None
        self.guard = ConnectionGuard(panel.settings.limits, panel.flood)
        self.port = 0

    @property
    def url(self) -> str:
        return panel_url(self.panel.settings, self.port)

    def start(self) -> str:
        """Bind and serve; the URL. WebPanelError when the address cannot be used."""
        import uvicorn

        settings = self.panel.settings
        family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((settings.host, int(settings.port)))
        except OSError as exc:
            sock.close()
            raise WebPanelError(f"web panel: cannot listen on {settings.host}:{settings.port} "
                                f"({exc.strerror or exc})") from None
        sock.listen(BACKLOG)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.panel.app(), log_level="warning", access_log=False, lifespan="off",
            proxy_headers=False, server_header=False, timeout_graceful_shutdown=2,
            http=guarded_protocol(self.guard), h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            backlog=BACKLOG, timeout_keep_alive=5,
            ssl_certfile=settings.tls_certfile or None, ssl_keyfile=settings.tls_keyfile or None)
        try:
            self._server = uvicorn.Server(config)
        except Exception as exc:  # noqa: BLE001 - a TLS file that is no certificate or key
            sock.close()
            raise WebPanelError(f"web panel: {exc}") from None
        self._unquiet = quiet_noisy_loggers()
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="web-panel", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10.0
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            raise WebPanelError(f"web panel: uvicorn did not start on {settings.host}:{self.port} "
                                f"(a TLS certificate or key that cannot be read?)")
        return self.url

    def stop(self) -> None:
        self.panel.close()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._unquiet is not None:
            self._unquiet()
            self._unquiet = None
