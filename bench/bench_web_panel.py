"""Web operator panel latencies through the graph, in a real browser.

    .venv/bin/python bench/bench_web_panel.py [--questions 100]

Starts an oversight node and a web_operator node (ROS_DOMAIN_ID 19 unless set; a temporary
ROS_HOME and knowledge base), pairs headless Debian Chromium (/usr/bin/chromium, Playwright) at a
phone viewport, then puts questions one after another as a stack node would (a signed Confirm)
and answers each with a click in the page. Prints, over the questions (median and p95):
- asked -> shown: from the Confirm call to the question's card being added to the page (the
  page's own clock, read by a MutationObserver; the same machine's clock as the asker's);
- click -> answer: from the click (the page's clock, just before the button's click()) to the
  asking node receiving the oversight node's answer.
The rate limit on answers is lifted for the bench (one click after another, faster than a person).
Asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from task_learning.types import CandidateSource, ConfirmationRequest, GoalCandidate, GoalLiteral  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OBSERVE = """() => {
  window.__seen = {};
  new MutationObserver((changes) => {
    for (const change of changes) for (const node of change.addedNodes)
      if (node.dataset && node.dataset.id && !(node.dataset.id in window.__seen)) window.__seen[node.dataset.id] = Date.now();
  }).observe(document.getElementById("cards"), { childList: true });
}"""
CLICK = """(id) => {
  const button = document.querySelector(`article.card[data-id='${id}'] button.yes`);
  const at = Date.now();
  button.click();
  return at;
}"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def question(i: int) -> ConfirmationRequest:
    cand = GoalCandidate("the goal is that the mug is in the cupboard", -0.3, CandidateSource.INITIAL, 1, viable=True,
                         literals=[GoalLiteral("inside", (f"Mug|{i}", "Cupboard|1"))])
    return ConfirmationRequest(f"b{i}", f"For a mug #{i} in the dish rack is the goal that the mug is in the cupboard?",
                               f"Mug|{i}", "mug in the dish rack", cand, [cand], False, 60.0)


def start(module: str, *args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", f"task_learning_nodes.nodes.{module}", "--ros-args", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_line(proc: subprocess.Popen, pattern: str, timeout: float = 60.0) -> re.Match:
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    found: list[re.Match] = []

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            match = re.search(pattern, line)
            if match:
                found.append(match)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=max(0.0, deadline - time.monotonic()))
    if not found:
        raise SystemExit(f"bench: no line matching {pattern!r}:\n{''.join(lines)[-2000:]}")
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # keep draining
    return found[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-web-"))
    os.environ.update(ROS_HOME=str(home), ROS_LOG_DIR=str(home / "log"))
    os.environ.setdefault("ROS_DOMAIN_ID", "19")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env = dict(os.environ)
    db = home / "kb.sqlite"
    procs = [start("oversight", "-p", f"db_path:={db}", "-p", "timeout_s:=60.0", "-p", "max_pending:=8", env=env)]
    try:
        wait_line(procs[0], "oversight ready")
        procs.append(start("web_operator", "-p", f"db_path:={db}", "-p", "port:=0",
                           "-p", "answers_per_minute:=100000", env=env))  # one click after another
        url = wait_line(procs[1], r"web operator panel at (http://\S+/)").group(1)
        return run_bench(url, db, args.questions)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_bench(url: str, db: Path, count: int) -> int:
    from playwright.sync_api import sync_playwright

    from task_learning.kb.store import KnowledgeBase
    from task_learning.oversight.pairing import OperatorRegistry
    from task_learning_nodes.clients.oversight_client import OversightClient

    with KnowledgeBase(db) as kb:
        code = OperatorRegistry(kb).create_pairing_code("bench-phone")
    planner = OversightClient(name="planner", asker="planner", service_wait_s=30)
    shown: list[float] = []
    answered: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(f"{url}#pair={code}")
        page.wait_for_selector("#who:has-text('bench-phone')", timeout=30000)
        page.wait_for_selector("#link:has-text('live')", timeout=30000)
        page.evaluate(OBSERVE)
        for i in range(count + 1):  # the first round warms up (discovery, first JPEG-less state)
            box: dict = {}

            def ask(i: int = i, box: dict = box) -> None:
                box["asked"] = time.time()
                box["answer"] = planner.ask(question(i))
                box["done"] = time.time()

            thread = threading.Thread(target=ask)
            thread.start()
            card = page.locator("article.card:not(.closed)").first
            card.wait_for(timeout=30000)
            qid = card.get_attribute("data-id")
            seen = page.evaluate("(id) => window.__seen[id]", qid)
            page.wait_for_function("(id) => !document.querySelector(`article.card[data-id='${id}'] button.yes`).disabled",
                                   arg=qid, timeout=10000)
            clicked = page.evaluate(CLICK, qid)
            thread.join(timeout=30)
            page.wait_for_selector(f"article.card[data-id='{qid}'].closed", timeout=15000)  # the page saw its reply
            if box["answer"].answer.value != "yes" or box["answer"].operator != "bench-phone":
                raise SystemExit(f"bench: question {i} ended {box['answer']}")
            if i == 0:
                continue
            shown.append(seen / 1000.0 - box["asked"])
            answered.append(box["done"] - clicked / 1000.0)
        browser.close()
    planner.close()
    for name, values in (("asked -> shown in the browser", shown), ("click -> oversight node's answer at the asker",
                                                                     answered)):
        print(f"{name}: median {statistics.median(values) * 1000:.1f} ms, p95 {percentile(values, 0.95) * 1000:.1f} ms "
              f"(n={len(values)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
