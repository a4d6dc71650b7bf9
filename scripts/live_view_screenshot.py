"""A screenshot of the live view with a task in progress (docs/episodes.md), where Foxglove itself
cannot run: `task-learning run --live-view` serves a run, headless Chromium (Debian's `chromium`)
shows config/foxglove/viewer.html connected to it, and the DevTools protocol (over `websockets`)
takes the picture once the STARS tree, the camera and the world are on the page.

    .venv/bin/python scripts/live_view_screenshot.py [--out docs/images/live_view.png]
        [--scene tidy_floorplan1 --backend ai2thor]   (the AI2-THOR stand-in: camera images)
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from task_learning.inputs.files import write_bytes_atomic  # noqa: E402

READY = ("document.querySelectorAll('#stars li').length >= 4 && document.querySelectorAll('#world tr').length > 3"
         " && (!%s || document.getElementById('camera').naturalWidth > 0)")


def _line(stream, pattern: str, deadline: float) -> re.Match:
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        match = re.search(pattern, line)
        if match:
            return match
    raise SystemExit(f"no line matching {pattern!r} in time")


async def _capture(page_ws: str, url: str, camera: bool, timeout_s: float) -> bytes:
    import websockets

    async with websockets.connect(page_ws, max_size=64 * 1024 * 1024) as ws:
        counter = 0

        async def call(method: str, **params):
            nonlocal counter
            counter += 1
            await ws.send(json.dumps({"id": counter, "method": method, "params": params}))
            while True:
                reply = json.loads(await ws.recv())
                if reply.get("id") == counter:
                    return reply.get("result", {})

        await call("Emulation.setDeviceMetricsOverride", width=1600, height=1000, deviceScaleFactor=1, mobile=False)
        await call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready = await call("Runtime.evaluate", expression=READY % ("true" if camera else "false"))
            if ready.get("result", {}).get("value"):
                break
            await asyncio.sleep(0.5)
        else:
            raise SystemExit("the page never showed a tree and the world (is the run serving?)")
        await asyncio.sleep(1.0)
        shot = await call("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "images" / "live_view.png"))
    parser.add_argument("--scene", default="tidy_floorplan1")
    parser.add_argument("--backend", default="ai2thor")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium here (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="live-view-shot-") as folder:
        run = subprocess.Popen([sys.executable, "-m", "task_learning.apps.cli", "run", "--scene", args.scene, "--backend",
                                args.backend, "--condition", "STARS+O", "--db", f"{folder}/kb.sqlite",
                                "--live-view", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT)
        chrome = None
        try:
            live = _line(run.stderr, r"live view: (ws://\S+)", time.monotonic() + 120).group(1)
            chrome = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                                       "--remote-debugging-port=0", f"--user-data-dir={folder}/chrome",
                                       "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            port = _line(chrome.stderr, r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", time.monotonic() + 60).group(1)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
                page = next(t for t in json.load(reply) if t.get("type") == "page")
            viewer = (ROOT / "config" / "foxglove" / "viewer.html").as_uri() + f"?url={live}"
            png = asyncio.run(_capture(page["webSocketDebuggerUrl"], viewer, args.backend == "ai2thor", 240))
        finally:
            for proc in (chrome, run):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        proc.kill()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(args.out, png)
    print(f"wrote {args.out} ({len(png)} bytes): viewer.html on {live}, {args.scene} on {args.backend}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
