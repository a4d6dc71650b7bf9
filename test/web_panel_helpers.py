"""Shared by the web panel's tests (not a test module): a panel served on loopback from this
process, an HTTP client that pairs like the page does, and Debian's Chromium driven by Playwright.

The browser is /usr/bin/chromium (scripts/bootstrap.sh installs it for `make test`); Playwright
never downloads one of its own. Without it the browser tests skip, except under CI, where they
fail: there the set-up must have installed it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from task_learning.kb.store import KnowledgeBase
from task_learning.oversight.pairing import OperatorCredentials, OperatorRegistry
from task_learning.oversight.pending import QueueOperator
from task_learning.oversight.web.backend import QueueBackend
from task_learning.oversight.web.server import COOKIE, WebPanel, WebServer, WebSettings
from task_learning.types import (
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


def need_chromium() -> None:
    if Path(CHROMIUM).is_file() and shutil.which("chromium"):
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: `make test-setup` installs it (scripts/bootstrap.sh, BROWSER=1)")
    pytest.skip(f"no {CHROMIUM} (apt-get install chromium, or `make test-setup`)")


def launch_browser(playwright: Any, user_data_dir: Path) -> Any:
    """Headless Debian Chromium in a fresh profile folder (a persistent context: one browser, one
    profile, as a person's phone)."""
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
        viewport=PHONE)


def candidate(text: str, cid: int = 1, literals: list[GoalLiteral] | None = None, score: float = -0.4,
              viable: bool | None = True) -> GoalCandidate:
    return GoalCandidate(text=text, score=score, source=CandidateSource.INITIAL, candidate_id=cid, viable=viable,
                         literals=list(literals or []))


def mug_request(request_id: str = "q1", *, timeout_s: float = 60.0, object_description: str = "mug in the dish rack",
                text: str = "the goal is that the mug is in the cupboard and the cupboard is closed",
                wants_description: bool = False) -> ConfirmationRequest:
    cand = candidate(text, 3, [GoalLiteral("inside", ("Mug|1", "Cupboard|1"))])
    other = candidate("the goal is that the mug is on the stove", 1, [], score=-0.9, viable=False)
    question = f"For a {object_description} is {text.replace('the goal is that', 'the goal that', 1)}?"
    return ConfirmationRequest(request_id, question, "Mug|1", object_description,
                               None if wants_description else cand, [cand, other], wants_description, timeout_s)


@dataclass
class ServedPanel:
    """A WebPanel over an in-process queue, served on 127.0.0.1 (any free port)."""

    panel: WebPanel
    server: WebServer
    backend: Any
    kb: KnowledgeBase
    url: str
    answers: dict[str, ConfirmationAnswer] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)

    @property
    def queue(self) -> QueueOperator:
        return self.backend.queue

    def code(self, name: str) -> str:
        return OperatorRegistry(self.kb).create_pairing_code(name)

    def ask(self, request: ConfirmationRequest) -> threading.Thread:
        """Put a question in a thread (as the run does); its answer lands in `answers`."""
        def work() -> None:
            self.answers[request.request_id] = self.queue.ask(request)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        self.threads.append(thread)
        return thread

    def close(self) -> None:
        self.backend.close()
        self.server.stop()
        for thread in self.threads:
            thread.join(timeout=5)
        self.kb.close()


def serve_panel(tmp_path: Path, backend: Any = None, **settings: Any) -> ServedPanel:
    tmp_path.mkdir(parents=True, exist_ok=True)  # a knowledge base is never made in a missing folder
    kb = KnowledgeBase(tmp_path / "kb.sqlite")
    backend = backend or QueueBackend(timeout_s=60.0)
    panel = WebPanel(backend, kb, WebSettings(port=0, **settings))
    server = WebServer(panel)
    url = server.start()
    return ServedPanel(panel, server, backend, kb, url)


class PageClient:
    """What the page does, over HTTP: pair, read its session, follow the event stream, answer."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=10.0, headers={"Origin": self.url})
        self.csrf = ""

    def pair(self, code: str) -> httpx.Response:
        return self.http.post("/api/pair", json={"code": code})

    def session(self) -> httpx.Response:
        response = self.http.get("/api/session")
        if response.status_code == 200:
            self.csrf = response.json()["csrf"]
        return response

    def states(self) -> Iterator[dict[str, Any]]:
        """The `state` events of one event stream, as they come (close the generator to leave)."""
        with self.http.stream("GET", "/api/events") as response:
            assert response.status_code == 200, response.read()
            event = ""
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "state":
                    yield json.loads(line.split(":", 1)[1])

    def answer(self, request_id: str, nonce: str, answer: str = "yes", text: str = "",
               **headers: str) -> httpx.Response:
        sent = {"X-CSRF-Token": self.csrf, **headers}
        return self.http.post("/api/answer", json={"request_id": request_id, "nonce": nonce, "answer": answer,
                                                   "text": text}, headers=sent)

    @property
    def token(self) -> str:
        return str(self.http.cookies.get(COOKIE) or "")

    def close(self) -> None:
        self.http.close()


def paired_client(served: ServedPanel, name: str = "alice") -> PageClient:
    client = PageClient(served.url)
    assert client.pair(served.code(name)).status_code == 200
    assert client.session().status_code == 200
    return client


LITERAL = re.compile(r"^(?:(?P<truth>[a-z_]+):)?(?P<predicate>\w+)\((?P<args>.*)\)$")


def parse_literals(text: str) -> list[GoalLiteral]:
    """The page's 'goal: inside(Mug|1, Cupboard|1), false:open(Cupboard|1)' back into literals."""
    from task_learning.types import Truth

    text = text.removeprefix("goal:").strip()
    literals = []
    for part in re.split(r",\s*(?![^()]*\))", text):
        match = LITERAL.match(part.strip())
        if match:
            literals.append(GoalLiteral(match["predicate"], tuple(a.strip() for a in match["args"].split(",")),
                                        Truth(match["truth"] or "true")))
    return literals


def credentials_of(token: str) -> OperatorCredentials:
    return OperatorCredentials.from_token(token)


def yes_answer(request_id: str, operator: str) -> ConfirmationAnswer:
    return ConfirmationAnswer(request_id, AnswerKind.YES, "", operator)
