"""`task-learning operator`: answer the oversight node's questions at a prompt or in the panel.

The ROS client lives in `task_learning_nodes.clients.oversight_client` and is imported only when this
command runs, so the core library never imports rclpy.

  task-learning operator                 answer pending questions at a prompt (Ctrl-D quits)
  task-learning operator --panel         the Qt operator panel (PySide6)
  task-learning operator --rqt           the panel as a plugin of the real rqt (its own venv)
  task-learning operator --web --name alice-phone       pair a phone with the web panel (link + QR code)
  task-learning operator --list [--json] print the pending questions
  task-learning operator --answer ID yes|no|17|"put it in the cupboard"
  task-learning operator --pair --name alice --db KB    pair this operator (writes a token file)
  task-learning operator --pair-code --name bob --db KB print a one-time pairing code
  task-learning operator --unpair --name bob --db KB    revoke an operator

Replies are read as every front end reads them (task_learning.oversight.answers): yes or no, a
listed candidate's number, or the goal in plain words; "maybe", an empty answer or a yes to a
question asking for words is refused with what is expected, and nothing changes.

Only paired operators can answer (task_learning.oversight.pairing, docs/oversight-security.md):
every client answers with the token of its operator (--name; --token-file, or the default file
under $ROS_HOME/task_learning). Given the oversight node's knowledge base (--db), a client without
a token pairs itself once; without either, it can list the questions but not answer them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from task_learning.apps.cli.options import MAX_WAIT_S, bounded_float
from task_learning.errors import TaskLearningError

if TYPE_CHECKING:
    from task_learning_nodes.clients.oversight_client import OversightClient


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "operator", help="answer the robot's goal questions (terminal prompt or Qt panel)",
        description="Answer the oversight node's pending yes/no questions and goal-description "
                    "requests. Needs a running oversight_node (same ROS_DOMAIN_ID).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--panel", action="store_true", help="open the Qt operator panel")
    mode.add_argument("--rqt", action="store_true",
                      help="open rqt with the operator plugin (task_learning/OperatorPanel); in a "
                           "checkout rqt runs in its own venv, made on first use (make rqt)")
    mode.add_argument("--web", action="store_true",
                      help="pair a phone or a laptop with the web operator panel (the web_operator node, "
                           "docs/web-panel.md): print its link with a one-time code, and a QR code of it")
    mode.add_argument("--list", action="store_true", help="print the pending questions and exit")
    mode.add_argument("--simulated", metavar="SCENE",
                      help="answer every question as the simulated user of SCENE would (experiments, demo)")
    mode.add_argument("--answer", nargs=2, metavar=("REQUEST_ID", "ANSWER"),
                      help="answer one question: yes, no, a listed candidate's number, or the goal in words "
                           "(quoted), e.g. \"put it in the recycling bin\" or \"in the fridge, closed\"")
    mode.add_argument("--pair", action="store_true",
                      help="pair this operator (--name) in the knowledge base --db and write its token "
                           "file, replacing an earlier token; then exit")
    mode.add_argument("--unpair", action="store_true",
                      help="revoke the operator --name in the knowledge base --db: its token stops working; then exit")
    mode.add_argument("--pair-code", action="store_true",
                      help="print a one-time pairing code for --name (valid 10 minutes), for a panel that "
                           "redeems it; then exit")
    parser.add_argument("--json", action="store_true", help="with --list/--answer: JSON output")
    parser.add_argument("--once", action="store_true",
                        help="prompt mode: answer what is pending now, then exit")
    parser.add_argument("--name", default="", help="the paired operator who answers (stored with each "
                        "answer; default: terminal, panel, rqt or simulated)")
    parser.add_argument("--db", default=None,
                        help="the oversight node's knowledge base: pair this operator there if it has no token")
    parser.add_argument("--url", default=None,
                        help="with --web: the panel's address (default: asked of the running web_operator node)")
    parser.add_argument("--token-file", default=None,
                        help="this operator's token file (default $ROS_HOME/task_learning/operator-NAME.token)")
    parser.add_argument("--wait", type=bounded_float(0.0, MAX_WAIT_S, low_open=True), default=5.0,
                        help="seconds to wait for the oversight node with --list, --answer or --once (default "
                             "5); the prompt, the panel and --simulated wait until it comes")
    parser.set_defaults(func=run)


def _credentials(args: argparse.Namespace, default_name: str, *, quiet: bool = False) -> Any:
    from task_learning.oversight.pairing import operator_credentials

    creds, line = operator_credentials(args.name or default_name, token_file=args.token_file, db=args.db,
                                       wait_s=args.wait)  # the oversight node makes its db when it starts
    if not quiet:
        print(line, file=sys.stderr, flush=True)
    return creds


def _client(args: argparse.Namespace, default_name: str, *, answering: bool = True) -> OversightClient:
    try:
        from task_learning_nodes.clients.oversight_client import OversightClient
    except ImportError as exc:
        raise TaskLearningError(f"the ROS client is not available ({exc}); run `make setup`") from None
    creds = _credentials(args, default_name) if answering else None
    return OversightClient(name=args.name or default_name, service_wait_s=args.wait, credentials=creds)


def _pair(args: argparse.Namespace) -> int:
    from task_learning.kb.store import KnowledgeBase
    from task_learning.oversight.pairing import OperatorRegistry, operator_credentials

    if not args.db:
        raise TaskLearningError("--pair, --pair-code and --unpair need --db, the oversight node's knowledge base")
    if not Path(args.db).is_file():
        raise TaskLearningError(f"no knowledge base at {args.db}: give the oversight node's db_path")
    name = args.name or "terminal"
    if args.unpair:
        with KnowledgeBase(args.db) as kb:
            revoked = OperatorRegistry(kb).revoke(name)
        print(f"operator {name!r} {'unpaired: its token no longer answers' if revoked else 'was not paired'}")
        return 0 if revoked else 1
    if args.pair_code:
        with KnowledgeBase(args.db) as kb:
            code = OperatorRegistry(kb).create_pairing_code(name)
        print(f"one-time pairing code for operator {name!r} (valid 10 minutes): {code}")
        return 0
    _creds, line = operator_credentials(name, token_file=args.token_file, db=args.db, pair=True)
    print(line)
    return 0


def _web(args: argparse.Namespace) -> int:
    """A one-time pairing code for the web panel, printed as a link and a QR code for a phone.
    The panel's address and knowledge base come from the running web_operator node unless --url
    and --db say them; the code is made in that knowledge base (whoever can open it may pair)."""
    from task_learning.kb.store import KnowledgeBase
    from task_learning.oversight.pairing import OperatorRegistry
    from task_learning.oversight.web.link import pairing_link, qr_text

    name = args.name or "web"
    url, db = args.url, args.db
    if not url or not db:
        try:
            from task_learning_nodes.nodes.web_operator import running_panel
        except ImportError as exc:
            raise TaskLearningError(f"the ROS client is not available ({exc}); give --url and --db") from None
        found_url, found_db = running_panel(args.wait)
        url, db = url or found_url, db or found_db
    if not Path(db).is_file():
        raise TaskLearningError(f"no knowledge base at {db}: give the web_operator node's db_path")
    with KnowledgeBase(db) as kb:
        code = OperatorRegistry(kb).create_pairing_code(name)
    link = pairing_link(url, code)
    print(f"web operator panel: {url}\n"
          f"pairing code for operator {name!r} (valid 10 minutes, once): {code}\n"
          f"on the phone, open (or scan): {link}\n{qr_text(link)}", flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.pair or args.pair_code or args.unpair:
        return _pair(args)
    if args.web:
        return _web(args)
    if args.panel:
        return _run_panel(args)
    if args.rqt:
        return _run_rqt(args)
    default_name = "simulated" if args.simulated else "terminal"
    waits = not (args.list or args.answer or args.once)  # the long-running modes
    client = _client(args, default_name, answering=not args.list and not waits)
    try:
        if args.list:
            return _list(client, args.json)
        if args.answer:
            return _answer(client, args.answer[0], args.answer[1], args.json)
        # The long-running modes wait for the oversight node, however long it takes to come (it
        # is often started at the same moment, in another shell); --wait bounds the one-shot ones.
        if waits:
            if not _await_oversight(client):
                return 0  # stopped while waiting
            # Now the oversight node has made its knowledge base: pair there (with --db) if needed.
            client.credentials = _credentials(args, default_name)
        if args.simulated:
            return _simulated_loop(client, args.simulated, once=args.once)
        return _prompt_loop(client, once=args.once)
    finally:
        client.close()


def _await_oversight(client: OversightClient) -> bool:
    """Wait until the oversight node is there (True), saying so once; False if stopped first."""
    said = False
    while client.ok():
        if client.available(1.0):
            return True
        if not said:
            print("waiting for the oversight node (Ctrl-C to stop)", flush=True)
            said = True
    return False


def _list(client: OversightClient, as_json: bool) -> int:
    pending = client.pending(fresh=True)
    if as_json:
        from task_learning.oversight.answers import remaining_s

        print(json.dumps([{
            "request_id": r.request_id, "question": r.question, "object_id": r.object_id,
            "object_description": r.object_description, "wants_description": r.wants_description,
            "candidate": r.candidate.text if r.candidate else "",
            "candidates": [c.to_dict() for c in r.candidates],
            "remaining_s": None if (left := remaining_s(r)) is None else round(left, 1)}
            for r in pending], indent=2))
        return 0
    from task_learning.oversight.terminal import format_request

    if not pending:
        print("no pending questions")
    for request in pending:
        print(format_request(request))
    return 0


def _answer(client: OversightClient, request_id: str, text: str, as_json: bool) -> int:
    # The oversight node reads the words as every front end does (yes, no, a number, the goal in
    # words) and refuses what is no answer with a hint; yes and no go as they are.
    word = text.strip().lower().rstrip(".!")
    kind, description = (word, "") if word in ("yes", "no") else ("description", text)
    reply = client.submit(request_id, kind, description)
    if as_json:
        print(json.dumps({"accepted": reply.accepted, "message": reply.message}))
    else:
        print(("ok: " if reply.accepted else "refused: ") + reply.message,
              file=sys.stdout if reply.accepted else sys.stderr)
    return 0 if reply.accepted else 1


def _simulated_loop(client: OversightClient, scene_name: str, *, once: bool) -> int:
    """Answer pending questions from the scene's preferred destinations until stopped."""
    from task_learning.grounding import analyze_goal
    from task_learning.grounding.scene_state import scene_world_state
    from task_learning.oversight.simulated import SimulatedOperator
    from task_learning.world.scene import load_scene

    scene = load_scene(scene_name)
    state = scene_world_state(scene_name)
    user = SimulatedOperator.from_scene(scene, analyze=lambda text: analyze_goal(text, state))
    answered: set[str] = set()
    away = False  # the oversight node stopped answering: wait for it (a restart), do not exit
    print(f"simulated operator for {scene.name}: answering questions", flush=True)
    try:
        while client.ok():
            try:
                pending = [r for r in client.pending(fresh=True) if r.request_id not in answered]
                if away:
                    print("the oversight node answers again", file=sys.stderr, flush=True)
                    away = False
            except TaskLearningError as exc:  # the node is gone (OversightUnavailable)
                if once:
                    raise
                if not away:
                    print(f"waiting for the oversight node ({exc})", file=sys.stderr, flush=True)
                    away = True
                client.wait_for_update(1.0)
                continue
            if not pending:
                if once:
                    return 0
                client.wait_for_update(0.2)  # a new question comes on the topic at once
                continue
            for request in pending:
                answer = user.ask(request)
                try:
                    reply = client.submit(request.request_id, answer.answer, answer.description)
                except TaskLearningError as exc:  # gone mid-answer: the question went with it
                    print(f"not answered: {exc}", file=sys.stderr, flush=True)
                    break
                answered.add(request.request_id)
                if not reply.accepted:
                    print(f"refused: {reply.message}", file=sys.stderr, flush=True)
    except Exception:
        if not client.ok():  # stopped by a signal while waiting
            return 0
        raise
    return 0


def _prompt_loop(client: OversightClient, *, once: bool) -> int:
    from task_learning.oversight.terminal import prompt_answer

    print("Waiting for questions (Ctrl-D to quit).", flush=True)
    try:
        return _prompt_until_done(client, once=once, prompt_answer=prompt_answer)
    except Exception:
        if not client.ok():  # interrupted: the ROS context went down under us
            return 0
        raise


def _prompt_until_done(client: OversightClient, *, once: bool, prompt_answer: Any) -> int:
    answered: set[str] = set()
    away = False
    while True:
        try:
            pending = [r for r in client.pending(fresh=True) if r.request_id not in answered]
            away = False
        except TaskLearningError as exc:  # the oversight node is gone (a restart): wait for it
            if once:
                raise
            if not away:
                print(f"waiting for the oversight node ({exc})", flush=True)
                away = True
            client.wait_for_update(1.0)
            continue
        if not pending:
            if once:
                return 0
            client.spin_once(0.5)
            time.sleep(0.2)
            continue
        request = pending[0]
        got = prompt_answer(request, sys.stdin, sys.stdout)
        if got is None:
            return 0
        kind, text = got
        reply = client.submit(request.request_id, kind, text)
        print(("  ok: " if reply.accepted else "  refused: ") + reply.message, flush=True)
        if reply.accepted or "no pending question" in reply.message or "timed out" in reply.message:
            answered.add(request.request_id)


def _run_panel(args: argparse.Namespace) -> int:
    """The standalone panel until its window closes or Ctrl-C / SIGTERM; exit code 0 either way.

    Stopping is ordered, because Python's collector at interpreter exit deletes Qt objects in no
    particular order (measured before: "QObject: shared QObject was deleted directly", then exit
    139, 134 or -6 on most stops): the signals only record a stop (StopSignals: they replace
    rclpy's handlers, so the ROS context is not torn down under a running spin), the event loop
    ends from its own timer, and then the timers stop, the ROS client closes, the widgets are
    deleted and the application is shut down, in that order, before anything is collected."""
    from task_learning.lifecycle.signals import StopSignals

    try:
        from task_learning.oversight.panel import OperatorPanel
        from task_learning.oversight.qt_compat import QApplication, QTimer, delete_widget
    except ImportError as exc:
        raise TaskLearningError(f"Qt is not available for the panel ({exc}); "
                                f"install PySide6-Essentials") from None
    from task_learning.oversight.qt_platform import check_qt_platform, drop_opencv_qt_from_environ

    check_qt_platform()  # names a missing system library instead of Qt's abort
    drop_opencv_qt_from_environ()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    client = _client(args, "panel")
    stop = StopSignals()
    stop.install()  # after rclpy.init (in the client): these handlers, not rclpy's
    panel = OperatorPanel(client, operator=client.credentials.name if client.credentials else "panel")
    spin = QTimer(panel)

    shown = {"id": ""}

    def tick() -> None:
        if stop.received or not client.ok():
            app.quit()
            return
        client.spin_once(0.0)
        request = panel.current_request()
        if request is not None and request.request_id != shown["id"]:  # a trace in the terminal too
            print(f"question [{request.request_id}]: {request.question}", flush=True)
        shown["id"] = request.request_id if request is not None else ""

    spin.timeout.connect(tick)
    spin.start(50)
    panel.resize(900, 600)
    panel.show()
    # Said once the event loop runs (the window is up): for a person, and for scripts that wait.
    QTimer.singleShot(0, lambda: print("operator panel open (close the window or Ctrl-C to quit)", flush=True))
    try:
        app.exec()
        return 0
    finally:
        spin.stop()
        panel.stop()
        panel.close()
        client.close()
        delete_widget(panel)
        app.processEvents()
        if hasattr(app, "shutdown"):  # PySide6: the application deleted now, not at exit
            app.shutdown()
        stop.restore()


RQT_PLUGIN = "task_learning/OperatorPanel"
RQT_VENV_SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "rqt_venv.sh"


def _run_rqt(args: argparse.Namespace) -> int:
    """rqt with the operator plugin: in a checkout, from the rqt venv (scripts/rqt_venv.sh, made
    on first use: PyQt5 never shares a process with the standalone panel's PySide6); on a ROS 2
    install, the `rqt` on PATH. The plugin answers with the operator's token file (paired here
    first when --db is given). Returns rqt's exit code."""
    from task_learning.oversight.pairing import TOKEN_FILE_ENV, default_token_file

    _credentials(args, "rqt")
    token_file = str(args.token_file or default_token_file(args.name or "rqt"))
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM")):
        raise TaskLearningError("no display for rqt (DISPLAY is not set); set QT_QPA_PLATFORM=offscreen "
                                "to run it without a window")
    from task_learning.oversight.qt_platform import check_qt_platform, pyqt5_xcb_plugin, without_opencv_qt

    if RQT_VENV_SCRIPT.is_file():
        made = subprocess.run(["bash", str(RQT_VENV_SCRIPT)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, VENV=str(Path(sys.prefix))))
        if made.returncode != 0:
            raise TaskLearningError(f"rqt is not available here ({RQT_VENV_SCRIPT.name} exited with "
                                    f"{made.returncode}; its reason is above)")
        rqt = made.stdout.strip().splitlines()[-1]
        check_qt_platform("rqt", pyqt5_xcb_plugin(Path(rqt).resolve().parent.parent))
        env = {k: v for k, v in without_opencv_qt(dict(os.environ)).items()
               if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "_ROS_WHEELS_BOOTSTRAP_COMPLETE")}
    else:
        found = shutil.which("rqt")
        if found is None:
            raise TaskLearningError("rqt is not installed (on a ROS 2 install: the rqt_gui package)")
        rqt, env = found, without_opencv_qt(dict(os.environ))
    env[TOKEN_FILE_ENV] = token_file
    sys.stdout.flush()
    os.execve(rqt, [rqt, "--force-discover", "-s", RQT_PLUGIN], env)
    return 0  # not reached: execve replaced this process (or raised OSError)
