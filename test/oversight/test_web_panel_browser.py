"""The web panel in a real browser: Debian's headless Chromium driven by Playwright.

The done-when run: `task-learning run --scene store_groceries --condition STARS+O --operator web`
with every question answered by a click in a phone-sized page, as a person who wants the scene's
preferences would answer (the simulated user's judgement, read off what the page shows).
Then: an unpaired browser sees nothing; a closed tab, an expired question and a question answered
on another phone confirm nothing; markup in an object name or a candidate is shown as text.
Screenshots of the panel go to artifacts/ (docs/web-panel.md shows them).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import cv2
import pytest

from task_learning.kb.store import KnowledgeBase
from task_learning.oversight.simulated import SimulatedOperator
from task_learning.types import AnswerKind
from task_learning.world.scene import load_scene
from test.ros_testing import ROOT, wait_until
from test.web_panel_helpers import (
    LAPTOP,
    PHONE,
    launch_browser,
    mug_request,
    need_chromium,
    parse_literals,
    serve_panel,
)

pytestmark = pytest.mark.slow
CLI = str(Path(sys.executable).parent / "task-learning")
ARTIFACTS = ROOT / "artifacts"
PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


@pytest.fixture
def playwright() -> Iterator[Any]:
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


def open_card(page: Any) -> Any:
    """The first card still waiting for an answer."""
    return page.locator("article.card:not(.closed)").first


def answer_like_the_scene(page: Any, card: Any, user: SimulatedOperator) -> str:
    """Read the card as a person would and click: yes or no to the robot's candidate, or the goal
    typed in words when it asks for them. Returns what was clicked."""
    object_id = card.get_attribute("data-object-id")
    if card.locator("button.yes").is_hidden():  # it asks for the goal in words
        words = user.describe(object_id) or "no"
        card.locator("input.text").fill(words)
        card.locator("button.send").click()
        return "words"
    asked = card.locator(".candidates li.asked .detail").all_text_contents()  # in a closed <details>
    goal = next((line for line in asked if line.startswith("goal:")), "")
    verdict = user.accepts(object_id, parse_literals(goal))
    card.locator("button.yes" if verdict else "button.no").click()
    return "yes" if verdict else "no"


@pytest.mark.timeout(300)
def test_store_groceries_answered_by_clicks_on_a_phone(playwright, tmp_path) -> None:
    db = tmp_path / "kb.sqlite"
    run = subprocess.Popen([CLI, "run", "--scene", "store_groceries", "--condition", "STARS+O", "--operator",
                            "web", "--web-name", "alice-phone", "--web-port", "0", "--db", str(db), "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(run.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        link = wait_until(lambda: next((m.group(1) for line in err if (m := re.search(r"open (http\S+#pair=\S+)", line))),
                                       None), 60, "the run printed its pairing link")
        browser = launch_browser(playwright, tmp_path / "profile")
        page = browser.new_page()
        page.set_viewport_size(PHONE)
        page.goto(link)
        page.wait_for_selector("#who:has-text('alice-phone')", timeout=20000)
        assert "#pair=" not in page.url  # the code left the address bar
        user = SimulatedOperator.from_scene(load_scene("store_groceries"))
        clicked: dict[str, str] = {}
        while run.poll() is None:
            card = open_card(page)
            try:
                card.wait_for(state="visible", timeout=1000)
            except Exception:  # noqa: BLE001 - Playwright's timeouts: no card right now
                continue  # no question right now (the robot is acting, or the run is ending)
            request_id = card.get_attribute("data-id")
            if request_id in clicked:
                continue  # answered: its card is closing
            clicked[request_id] = answer_like_the_scene(page, card, user)
            try:
                page.wait_for_selector(f"article.card[data-id='{request_id}'].closed", timeout=10000)
            except Exception:  # noqa: BLE001 - Playwright's timeout, turned into the test's failure
                raise AssertionError(f"{clicked[request_id]} to {request_id} not taken: "
                                     f"{card.locator('.hint').inner_text()!r}") from None
        out = run.stdout.read()
        assert run.wait(timeout=30) == 0, "".join(err)[-3000:]
        browser.close()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    data = json.loads(out)
    assert data["completion"] == 100.0, data
    assert clicked, "no question reached the page"
    with KnowledgeBase(db) as kb:
        log = [row for row in kb.question_log() if row["answer"]]
        goals = kb.goals()
    # every stored answer is one of the clicks, by the paired operator, through the web page
    assert {row["request_id"] for row in log} == set(clicked)
    assert all(row["operator"] == "alice-phone" and row["client"].startswith("web 127.0.0.1") for row in log), log
    assert len(log) == len(clicked) == data["questions"]
    # every goal executed was confirmed by a click: no goal without one
    assert goals and all(g.confirmed for g in goals)
    for goal in goals:
        confirmed = goal.provenance["confirmed_by"]
        assert confirmed["operator"] == "alice-phone", goal.provenance
        assert confirmed["request_id"] in clicked and clicked[confirmed["request_id"]] in ("yes", "words")
    assert data["satisfied"] == data["assertions"]


@pytest.fixture
def panel(tmp_path) -> Iterator[Any]:
    served = serve_panel(tmp_path)
    try:
        yield served
    finally:
        served.close()


def paired_page(playwright: Any, panel: Any, folder: Path, name: str, viewport: dict | None = None) -> tuple[Any, Any]:
    browser = launch_browser(playwright, folder)
    page = browser.new_page()
    page.set_viewport_size(viewport or PHONE)
    page.goto(f"{panel.url}#pair={panel.code(name)}")
    page.wait_for_selector(f"#who:has-text('{name}')", timeout=20000)
    return browser, page


def test_an_unpaired_browser_sees_no_question(playwright, panel, tmp_path) -> None:
    panel.ask(mug_request("q1"))
    wait_until(lambda: panel.queue.pending(), 5, "question waiting")
    browser = launch_browser(playwright, tmp_path / "stranger")
    page = browser.new_page()
    page.goto(panel.url)
    page.wait_for_selector("#pairing:not([hidden])", timeout=20000)
    assert page.locator("article.card").count() == 0
    assert "mug" not in page.content()
    page.fill("#pair-code", "ABCD-0000000000000000")
    page.click("#pair-form button")
    page.wait_for_selector("#pair-status:has-text('unknown')", timeout=10000)
    assert page.locator("article.card").count() == 0
    browser.close()
    assert [r.request_id for r in panel.queue.pending()] == ["q1"]


def test_markup_in_an_object_name_or_a_candidate_is_shown_as_text(playwright, panel, tmp_path) -> None:
    panel.ask(mug_request("xss", object_description=f"mug {PAYLOAD} in the dish rack",
                          text=f"the goal is that the mug is in {PAYLOAD}"))
    browser, page = paired_page(playwright, panel, tmp_path / "p", "alice")
    card = page.locator("article.card[data-id='xss']")
    card.wait_for(timeout=20000)
    assert PAYLOAD in card.locator(".question").inner_text()
    assert PAYLOAD in card.locator(".candidate").inner_text()
    card.locator("summary").click()
    assert PAYLOAD in card.locator(".candidates").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("article.card img[src='x'], article.card script").count() == 0
    browser.close()


def test_closing_the_page_mid_question_confirms_nothing(playwright, tmp_path) -> None:
    from task_learning.oversight.web.backend import QueueBackend

    clock = ManualClock()  # the question expires after the page went, however slow the browser's start
    panel = serve_panel(tmp_path, backend=QueueBackend(timeout_s=60.0, clock=clock))
    try:
        panel.ask(mug_request("q1", timeout_s=3.0))
        browser, page = paired_page(playwright, panel, tmp_path / "p", "alice")
        page.locator("article.card[data-id='q1']").wait_for(timeout=20000)
        assert panel.panel._viewers
        browser.close()  # the tab (and the phone's browser) goes away mid-question
        wait_until(lambda: not panel.panel._viewers, 10, "the server saw the page go")
        clock.now += 3.5
        wait_until(lambda: "q1" in panel.answers, 10, "the question ended")
        assert panel.answers["q1"].answer is not AnswerKind.YES
        assert panel.answers["q1"].operator == "timeout"
    finally:
        panel.close()


class ManualClock:
    """A clock that moves only when the test says: the question expires after the page shows it,
    however long a loaded machine takes to show it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_expired_question_cannot_be_confirmed(playwright, tmp_path) -> None:
    from task_learning.oversight.web.backend import QueueBackend

    clock = ManualClock()
    panel = serve_panel(tmp_path, backend=QueueBackend(timeout_s=60.0, clock=clock))
    try:
        panel.ask(mug_request("q1", timeout_s=2.0))
        browser, page = paired_page(playwright, panel, tmp_path / "p", "alice")
        card = page.locator("article.card[data-id='q1']")
        card.wait_for(timeout=20000)
        assert "q1" not in panel.answers
        clock.now += 2.5  # past the question's 2 s: the queue's next look (every 0.5 s) expires it
        wait_until(lambda: "q1" in panel.answers, 10, "the question did not expire")
        page.wait_for_selector("article.card[data-id='q1'].closed", timeout=15000)
        assert card.locator("button.yes").is_disabled()
        assert panel.answers["q1"].operator == "timeout" and panel.answers["q1"].answer is not AnswerKind.YES
        browser.close()
    finally:
        panel.close()


class StaleNews:
    """The in-process queue, but once `freeze()` is called the server (and so every page) keeps
    the list of questions it had: a phone on a slow network still showing a question that another
    operator has answered. The queue itself is not fooled: it takes one answer."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.queue = inner.queue
        self.frozen: list | None = None

    def freeze(self) -> None:
        self.frozen = self.inner.pending()

    def pending(self) -> list:
        return list(self.frozen) if self.frozen is not None else self.inner.pending()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_two_browsers_on_one_question_one_answer_is_stored(playwright, tmp_path) -> None:
    from task_learning.oversight.web.backend import QueueBackend

    stale = StaleNews(QueueBackend(timeout_s=60.0))
    served = serve_panel(tmp_path, backend=stale)
    try:
        served.ask(mug_request("q1"))
        first, alice = paired_page(playwright, served, tmp_path / "a", "alice")
        second, bob = paired_page(playwright, served, tmp_path / "b", "bob", LAPTOP)
        for page in (alice, bob):
            page.locator("article.card[data-id='q1']").wait_for(timeout=20000)
        stale.freeze()
        alice.click("article.card[data-id='q1'] button.yes")
        alice.wait_for_selector("article.card[data-id='q1'] .hint:has-text('Answered: yes')", timeout=10000)
        assert bob.locator("article.card[data-id='q1'] button.no").is_enabled()  # bob's page is stale
        bob.click("article.card[data-id='q1'] button.no")
        bob.wait_for_selector("article.card[data-id='q1'] .hint:has-text('already answered by alice')", timeout=10000)
        wait_until(lambda: "q1" in served.answers, 5, "answered")
        assert served.answers["q1"].operator == "alice" and served.answers["q1"].answer is AnswerKind.YES
        first.close()
        second.close()
    finally:
        served.close()


class WithCamera:
    """The in-process queue with a camera image kept for every question (as the web_operator
    node keeps the robot's camera frame when a question arrives)."""

    def __init__(self, inner: Any, jpeg: bytes) -> None:
        self.inner = inner
        self.queue = inner.queue
        self.jpeg = jpeg

    def image(self, request_id: str) -> bytes | None:
        return self.jpeg

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def camera_jpeg() -> bytes:
    """A head-camera frame of the kitchen, rendered as the simulated Fetch renders the frames its
    camera topic publishes (bgr8), turned a quarter towards the counter."""
    from task_learning.perception.synthetic import SimulatedRobot

    robot = SimulatedRobot(load_scene("tidy_kitchen"), depth_noise_m=0.0)
    best = max(robot.look_around_poses(8), key=lambda pose: int(robot.render(0.0, pose).frame.color.std()))
    ok, data = cv2.imencode(".jpg", robot.render(0.0, best).frame.color, [cv2.IMWRITE_JPEG_QUALITY, 80])
    assert ok
    return data.tobytes()


def small_png(path: Path) -> None:
    """A screenshot cut to 64 colours (a tenth of the bytes; docs link these files)."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=64).save(path, optimize=True)


def test_screenshots_at_phone_and_laptop_size(playwright, tmp_path) -> None:
    from task_learning.oversight.web.backend import QueueBackend

    ARTIFACTS.mkdir(exist_ok=True)
    for camera in (False, True):
        backend = QueueBackend(timeout_s=300.0)
        served = serve_panel(tmp_path / ("camera" if camera else "plain"),
                             backend=WithCamera(backend, camera_jpeg()) if camera else backend)
        try:
            served.ask(mug_request("q0", object_description="plate on the counter",
                                   text="the goal is that the plate is in the sink"))
            browser, page = paired_page(playwright, served, tmp_path / f"p{camera}", "alice")
            page.click("article.card[data-id='q0'] button.no")  # an earlier answer, for the history
            page.wait_for_selector("#history-list li", timeout=10000)
            served.ask(mug_request("q1", timeout_s=300.0))
            page.locator("article.card[data-id='q1']").wait_for(timeout=20000)
            page.wait_for_selector("article.card[data-id='q0']", state="detached", timeout=15000)
            if camera:
                page.wait_for_function("document.querySelector('img.camera').naturalWidth > 0", timeout=10000)
            suffix = "-camera" if camera else ""
            for name, size in (("phone", PHONE), ("laptop", LAPTOP)):
                page.set_viewport_size(size)
                if name == "laptop":
                    page.click("article.card[data-id='q1'] summary")  # why the robot asks
                path = ARTIFACTS / f"web-panel-{name}{suffix}.png"
                page.screenshot(path=str(path))
                small_png(path)
                assert path.stat().st_size > 5000
            browser.close()
        finally:
            served.close()
