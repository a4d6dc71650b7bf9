"""`task-learning run`: one trial of one STARS condition on a scene, in-process.

Running it again with the same --db is Trial #2: learned goals and policies are reused, with no
LLM call and no question.
"""
from __future__ import annotations

import argparse
import json
import sys

from task_learning.apps.cli.options import MAX_WORKERS, SEED, add_llm_arguments, bounded_int, decoding_of, llm_options
from task_learning.episode.bus import EpisodeBus
from task_learning.errors import TaskLearningError
from task_learning.experiments.grounded import grounded_report
from task_learning.planning.loop import ObjectReport
from task_learning.planning.session import CONDITIONS, ELICITATION_MODES, OPERATORS, RunSpec, run_in_process
from task_learning.planning.summary import summarize


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="learn and perform a task (in-process)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from task_learning.world.scene import available_scenes

    p.add_argument("--scene", required=True,
                   help=f"a packaged scene ({', '.join(available_scenes())}; bcr_kitchen is BCR's, no STARS task) "
                        "or a scene file (YAML; recorded AI2-THOR metadata: file.json[#scene])")
    p.add_argument("--task", default=None, help="the task to perform (default: the scene's own)")
    p.add_argument("--condition", default="STARS+O", type=str.upper, choices=CONDITIONS)
    add_llm_arguments(p)
    p.add_argument("--operator", default="simulated", choices=OPERATORS)
    p.add_argument("--db", required=True, help="SQLite knowledge base (created if missing)")
    p.add_argument("--engine", default="heuristic", choices=("heuristic", "llm"),
                   help="BCR action selection engine used to reach goals")
    p.add_argument("--seed", type=SEED, default=None, help="placement variation of the world")
    p.add_argument("--backend", default="symbolic", choices=("symbolic", "ai2thor", "fetch", "mujoco"),
                   help="world backend: the symbolic world (default), AI2-THOR through its Controller "
                   "(settings: config/nodes/perception.yaml, ai2thor section), fetch --synthetic, or mujoco: "
                   "the MuJoCo-simulated Fetch (task-learning-sim) through ROS, perception from its camera "
                   "(docs/sim.md)")
    p.add_argument("--workers", type=bounded_int(1, MAX_WORKERS), default=4,
                   help=f"concurrent LLM requests per tree level with --elicitation concurrent (1-{MAX_WORKERS})")
    p.add_argument("--elicitation", default="batched", choices=ELICITATION_MODES,
                   help="concurrent: one object after another, one request per branch; batched (default):"
                        " one object after another, a tree level as list-prompt round trips;"
                        " across-objects: every object's levels in shared round trips, the operator"
                        " still asked one question at a time in the task's order")
    p.add_argument("--synthetic", action="store_true",
                   help="with --backend fetch: the simulated robot (camera topics + skill server), through ROS")
    p.add_argument("--bag", metavar="DIR", default=None,
                   help="with --backend mujoco: record the head camera (colour, depth, info), /tf and /tf_static "
                        "into a rosbag2 (MCAP) directory, from the look-around to the end (Foxglove opens it)")
    p.add_argument("--grasp-weld", action="store_true",
                   help="with --backend mujoco: the simulator's grasp assist (what both fingers pinch is welded to "
                        "the gripper until it opens; counted in the result's assists)")
    p.add_argument("--time-limit", metavar="SECONDS", type=bounded_int(60, 86400), default=None,
                   help="with --backend mujoco: the task's wall-clock limit (default 10800): a task still running "
                        "then is cancelled (the motion stopped, what was learned kept) and the result, completion "
                        "from physics at that moment, says `stopped`")
    p.add_argument("--json", action="store_true", help="print the measures as JSON")
    p.add_argument("--record", metavar="EPISODE.mcap", default=None,
                   help="record the run as one MCAP episode: world, trees, questions and answers, actions, "
                        "every LLM call, knowledge-base changes (`task-learning replay` runs it again; docs/episodes.md)")
    p.add_argument("--live-view", metavar="PORT", type=bounded_int(0, 65535), default=None,
                   help="serve the run live to Foxglove (WebSocket on 127.0.0.1:PORT, 0: a free port; layout "
                        "config/foxglove/task_learning.json)")
    web = p.add_argument_group("with --operator web (docs/web-panel.md)")
    web.add_argument("--web-name", default="web", help="the operator the pairing code pairs (default web)")
    web.add_argument("--web-host", default="127.0.0.1",
                     help="address the panel listens on (default 127.0.0.1; another one needs TLS)")
    web.add_argument("--web-port", type=bounded_int(0, 65535), default=8770,
                     help="port of the panel (default 8770; 0: any free port)")
    web.add_argument("--web-tls-cert", default="", help="TLS certificate (PEM) of the panel")
    web.add_argument("--web-tls-key", default="", help="TLS private key (PEM) of the panel")
    p.requires("--synthetic", "--backend=fetch", why="the simulated robot is a Fetch")
    p.requires("--bag", "--backend=mujoco", why="the bag records the simulated Fetch's camera and tf")
    p.requires("--grasp-weld", "--backend=mujoco", why="it is the simulator's assist")
    p.requires("--time-limit", "--backend=mujoco", why="it bounds the simulated Fetch's task")
    p.requires("--backend=fetch", "--synthetic",
               why="here only the simulated robot; on a robot start `task-learning bringup --backend fetch --param "
                   "perception.marker_registry:=<file>` and send perform_task")
    for backend in ("fetch", "mujoco"):
        p.excludes(f"--backend={backend}", "--operator=panel", "--operator=web",
                   why="use --operator simulated, or run `task-learning operator --panel` (or the web_operator "
                       "node) beside `task-learning bringup`")
        p.excludes(f"--backend={backend}", "--seed", "--task", "--engine", "--elicitation",
                   why="the simulated robot takes the scene as written and the nodes' own settings")
        p.excludes(f"--backend={backend}", "--record", "--live-view",
                   why="through ROS the planner records (its episode_dir parameter) and `live_view_node` serves "
                       "the graph")
    p.set_defaults(func=run)


STOP_WAIT_S = 20.0  # how long an interrupted run may take to reach its next stop point


def _progress_bar(done: int, total: int, message: str) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message[:60]:<60}")
    sys.stderr.flush()
    if done >= total:
        sys.stderr.write("\n")


def _run_with_panel(spec: RunSpec, progress, bus: EpisodeBus | None = None) -> tuple:
    """The run in a worker thread, the Qt operator panel in this (the main) thread.

    Ctrl-C and SIGTERM are recorded (StopSignals: Qt's event loop runs no Python signal handler
    until a Python slot runs, and a KeyboardInterrupt raised in a slot is printed by Qt and lost);
    the panel's timer sees them, asks the run to stop (StopToken: before its next object or
    action), ends the questions still waiting with the safe default (never a yes) and closes the
    window; the command then ends as an interrupted one (exit 130)."""
    import threading

    from task_learning.lifecycle.cancellation import StopToken
    from task_learning.lifecycle.signals import StopSignals
    from task_learning.oversight.panel import OperatorPanel
    from task_learning.oversight.pending import QueueOperator
    from task_learning.oversight.qt_compat import QApplication, QTimer
    from task_learning.oversight.qt_platform import drop_opencv_qt_from_environ

    queue = QueueOperator(timeout_s=600.0)
    drop_opencv_qt_from_environ()
    app = QApplication.instance() or QApplication([])
    panel = OperatorPanel(queue)
    panel.setWindowTitle(f"task_learning operator: {spec.scene} {spec.condition}")
    box: dict = {}
    token = StopToken()
    signals = StopSignals()

    def work() -> None:
        try:
            box["result"] = run_in_process(spec, progress=progress, operator=queue, bus=bus, stop=token)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            box["error"] = exc

    def tick() -> None:
        if signals.received:
            token.request("interrupted (Ctrl-C or SIGTERM)")
            app.quit()
        elif not worker.is_alive():
            app.quit()

    worker = threading.Thread(target=work, name="run", daemon=True)
    worker.start()
    timer = QTimer(panel)  # owned by the panel: Qt, not Python's collector, deletes it
    timer.timeout.connect(tick)
    timer.start(100)
    signals.install()
    try:
        panel.show()
        app.exec()
    finally:
        signals.restore()
    queue.close()  # a closed window: remaining questions get the safe default
    worker.join(timeout=STOP_WAIT_S if signals.received else None)
    timer.stop()
    panel.stop()
    panel.close()
    panel.deleteLater()
    app.processEvents()
    if signals.received:
        raise KeyboardInterrupt  # the CLI's exit 130; what was learned is in the knowledge base
    if "error" in box:
        raise box["error"]
    return tuple(box["result"])


def _run_with_web(spec: RunSpec, progress, args: argparse.Namespace, bus: EpisodeBus | None = None) -> tuple:
    """The run with the web panel serving its questions: a one-time pairing code for the operator
    --web-name, printed with the panel's link and a QR code for a phone (on stderr: stdout keeps
    the results). A question nobody answers times out (no goal); nothing is ever answered here."""
    from task_learning.kb.store import KnowledgeBase
    from task_learning.oversight.web.backend import QueueBackend
    from task_learning.oversight.web.link import pairing_link, qr_text
    from task_learning.oversight.web.server import WebPanel, WebServer, WebSettings

    settings = WebSettings(host=args.web_host, port=args.web_port, tls_certfile=args.web_tls_cert,
                           tls_keyfile=args.web_tls_key)
    backend = QueueBackend(timeout_s=600.0)
    with KnowledgeBase(spec.db) as kb:
        panel = WebPanel(backend, kb, settings)
        server = WebServer(panel)
        url = server.start()
        try:
            link = pairing_link(url, panel.registry.create_pairing_code(args.web_name))
            sys.stderr.write(f"web operator panel: {url}\n"
                             f"pair operator {args.web_name!r} (code valid 10 minutes): open {link}\n"
                             f"{qr_text(link)}\n")
            sys.stderr.flush()
            return run_in_process(spec, progress=progress, operator=backend.queue, bus=bus)
        finally:
            backend.close()  # questions still waiting get the safe default, never a yes
            server.stop()


def _run_fetch(args: argparse.Namespace) -> int:
    """The trial through the ROS graph with the simulated Fetch (nodes/clients/fetch_run.py)."""

    from task_learning_nodes.clients.fetch_run import run_synthetic_fetch

    data = run_synthetic_fetch(args.scene, args.condition, str(args.db), llm=args.llm,
                               operator=args.operator)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{args.scene} {args.condition} (fetch, synthetic, through ROS): completion {data['completion']:.1f}% "
          f"({data['satisfied']}/{data['assertions']} assertions); {data['images_seen_during_task']} camera "
          f"images during the task")
    for key in ("retrieved", "proposed", "sourced", "instructions", "yes_no", "words", "calls"):
        print(f"  {key:<22}{data[key]}")
    return 0


def _run_mujoco(args: argparse.Namespace) -> int:
    """The trial through the ROS graph with the MuJoCo-simulated Fetch (nodes/clients/mujoco_run.py)."""
    from task_learning_nodes.clients.mujoco_run import TIME_LIMIT_S, run_mujoco

    data = run_mujoco(args.scene, args.condition, str(args.db), llm=args.llm, operator=args.operator, bag=args.bag,
                      grasp_weld=args.grasp_weld, time_limit_s=float(args.time_limit or TIME_LIMIT_S))
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{args.scene} {args.condition} (MuJoCo Fetch, through ROS): completion {data['completion']}% from "
          f"physics ({data['satisfied']}/{data['assertions']} assertions; the stack believed "
          f"{data['completion_believed']}%); goals {data['robot_goals']}; assists {data['assists'] or 'none'}; "
          f"{data['sim_time_s']} s simulated, real-time factor {data['real_time_factor']}, {data['wall_time_s']} s wall"
          + (f"; {data['stopped']}" if data.get("stopped") else ""))
    for key in ("retrieved", "proposed", "sourced", "instructions", "yes_no", "words", "calls"):
        print(f"  {key:<22}{data[key]}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.backend == "fetch":
        return _run_fetch(args)
    if args.backend == "mujoco":
        return _run_mujoco(args)
    spec = RunSpec(scene=args.scene, condition=args.condition, llm=args.llm, operator=args.operator,
                   db=args.db, seed=args.seed, engine=args.engine, max_workers=args.workers,
                   task=args.task, backend=args.backend, elicitation=args.elicitation,
                   llm_options=llm_options(args), decoding=decoding_of(args))
    progress = None if args.json or not sys.stderr.isatty() else _progress_bar
    bus = _episode_bus(args, spec)
    try:
        if args.operator == "panel" and args.condition.endswith("+O"):
            metrics, learner = _run_with_panel(spec, progress, bus)
        elif args.operator == "web" and args.condition.endswith("+O"):
            metrics, learner = _run_with_web(spec, progress, args, bus)
        else:
            metrics, learner = run_in_process(spec, progress=progress, bus=bus)
    except BaseException:
        if bus is not None:
            _close_quietly(bus)  # the run's own error is the one to report
        raise
    if bus is not None:
        bus.close()  # OutputError (one line, exit 2) when the episode could not be written
    data = metrics.to_dict()
    data.update(scene=args.scene, condition=args.condition, llm=args.llm, db=str(args.db), backend=args.backend,
                elicitation=args.elicitation, decoding=spec.decoding)
    if getattr(learner, "distributions", None):
        data["grounded"] = grounded_report(learner.distributions, learner.scene,
                                           getattr(learner, "distributions_mean", None))
    summary = summarize(learner.reports, metrics.satisfied, metrics.assertions)
    data.update(success=summary.success, message=summary.message, incomplete=summary.reasons)
    if args.record:
        data["episode"] = str(args.record)
    if args.json:
        print(json.dumps(data, indent=2))
        return _exit_code(learner.reports, summary.success)
    print(f"{args.scene} {args.condition}: {summary.message}")
    for key in ("retrieved", "proposed", "sourced", "prompt_tokens", "completion_tokens",
                "instructions", "yes_no", "words", "learned_goals_reused", "policies_reused"):
        print(f"  {key:<22}{data[key]}")
    print(f"  {'llm calls':<22}{data['usage']['calls']}")
    print(f"  {'llm round trips':<22}{data['usage']['requests']}")
    if args.record:
        print(f"  {'episode':<22}{args.record} (task-learning replay {args.record})")
    print("What was learned, per object (goal; its literals; who confirmed it; reached?):")
    for report in learner.reports:
        print(describe_report(report))
    return _exit_code(learner.reports, summary.success)


def _exit_code(reports: list[ObjectReport], success: bool) -> int:
    """1 when the operator went away (the terminal's input closed) and the result is partial: a
    run that could not be finished is no success; else 0 (a partial result for other reasons,
    a refusal or a goal not reached, is what the run learned and says so)."""
    from task_learning.oversight.flow import OPERATOR_GONE_REASON

    gone = sum(OPERATOR_GONE_REASON in (r.message or "") for r in reports)
    if success or not gone:
        return 0
    print(f"task-learning run: the operator went away (the terminal's input closed): partial result, "
          f"{gone} object(s) without a goal for it", file=sys.stderr)
    return 1


def _episode_bus(args: argparse.Namespace, spec: RunSpec) -> EpisodeBus | None:
    """The sinks the run's messages go to: the episode file (--record), the live view (--live-view)."""
    if not args.record and args.live_view is None:
        return None
    bus = EpisodeBus()
    if args.live_view is not None:
        from task_learning.episode.live import LiveView

        live = LiveView(port=args.live_view)
        bus.add(live)
        print(f"live view: {live.url} (Foxglove: open a connection to it; layout "
              f"config/foxglove/task_learning.json)", file=sys.stderr, flush=True)
    if args.record:
        from task_learning.episode import recording_sink

        try:
            bus.add(recording_sink(args.record, spec))
        except BaseException:
            _close_quietly(bus)
            raise
    return bus


def _close_quietly(bus: EpisodeBus) -> None:
    try:
        bus.close()
    except TaskLearningError as exc:
        print(f"task-learning run: also: {exc}", file=sys.stderr)


def describe_report(report: ObjectReport) -> str:
    """Two lines: where the object was and its goal in words; the literals, who confirmed it and
    whether it was reached (or why not)."""
    source = {"learned": "from the knowledge base", "described": "described by the operator"}.get(
        report.goal_source, report.goal_source or "-")
    reached = "reached" if report.reached else f"NOT reached: {report.outcome}, {report.message}"
    literals = " & ".join(str(lit) for lit in report.literals) or "-"
    return (f"  {report.context}: {report.goal or '(no goal)'}\n"
            f"      {literals}; {source}; confirmed by {report.confirmed_by or 'nobody'}; {reached}")
