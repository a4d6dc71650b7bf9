"""llama.cpp's `llama-server` as a child process: started on a free loopback port, ready when its
`/health` says so, probed when a call fails, stopped cleanly.

Used by `task-learning llm serve`, by the `local` provider (which starts one for the command that
asked and stops it when the client closes), and by the `llm_server` node in the ROS graph.

The server is told everything on its command line (docs/llm.md explains each choice for 2 cores):
the model, `-c` context tokens (one KV pool shared by the `-np` slots), `-t` threads, `--swa-full`
so that Gemma 3's sliding-window layers keep whole prompts and the prefix cache serves long shared
prefixes, no web UI. Its output goes to a log file, deleted after a clean stop and named in every
error otherwise. The child gets SIGTERM if this process dies (PR_SET_PDEATHSIG), so a killed
command never leaves a server behind.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from task_learning.errors import TaskLearningError
from task_learning.lifecycle.child_process import describe_exit, die_with_parent
from task_learning.llm.local_install import local_paths, model_problem, server_problem
from task_learning.llm.settings import LocalSettings

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
PORT_ATTEMPTS = 3  # a free port can be taken between the probe and the server's bind
# A CPU can advertise instructions that its virtual machine does not let a process run: on a Xeon
# with AMX tiles (cpuinfo flags amx_tile, amx_int8) the server built for it (GGML_NATIVE) died at
# its warm-up with a general protection fault on `ldtilecfg` in ggml's AMX matrix kernel
# (docs/llm.md, "Serve"). The AMX kernels come with ggml's repacked weight buffers; `--no-repack` keeps the
# server on the plain CPU kernels. A server that dies of one of these signals while starting is
# started once more with it (the log says so), instead of failing every command on such a machine.
FAULT_SIGNALS = (signal.SIGSEGV, signal.SIGILL, signal.SIGBUS)
NO_REPACK = "--no-repack"


class LocalServerError(TaskLearningError):
    """The server could not be started (or found): one line saying why, naming its log."""


@dataclass(frozen=True)
class Health:
    """What `/health` said: ok, loading (503 while the model loads), refused (nothing listens),
    silent (no answer in time: a hung server), error (anything else)."""

    state: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def probe_health(root_url: str, timeout_s: float) -> Health:
    """GET {root_url}/health within timeout_s (root_url has no /v1)."""
    try:
        with urllib.request.urlopen(f"{root_url}/health", timeout=timeout_s) as answer:
            body = answer.read(4096).decode("utf-8", "replace")
        return Health("ok", body.strip())
    except urllib.error.HTTPError as exc:
        if exc.code == 503:
            return Health("loading", "model loading")
        return Health("error", f"HTTP {exc.code}")
    except (TimeoutError, socket.timeout):
        return Health("silent", f"no answer within {timeout_s:g} s")
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return Health("silent", f"no answer within {timeout_s:g} s")
        if isinstance(reason, ConnectionRefusedError):
            return Health("refused", "connection refused")
        return Health("error", str(reason))
    except (ConnectionError, OSError) as exc:
        return Health("refused" if isinstance(exc, ConnectionRefusedError) else "error", str(exc))


def root_of(base_url: str) -> str:
    """http://host:port/v1 -> http://host:port (where /health lives)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def resolve_files(settings: LocalSettings, model: str = "") -> tuple[Path, Path]:
    """(llama-server binary, GGUF model): the configured ones, else the installed ones."""
    installed = local_paths()
    binary = Path(settings.server).expanduser() if settings.server else installed.server
    gguf = Path(model or settings.model).expanduser() if (model or settings.model) else installed.model
    if settings.server:  # the user's own binary and model: theirs to vouch for
        if not os.access(binary, os.X_OK):
            raise LocalServerError(f"local.server: {binary} is not an executable llama-server")
    else:  # the installed binary runs only as it was built (its sha256 recorded at build time)
        problem = server_problem(installed)
        if problem:
            raise LocalServerError(problem)
    if model or settings.model:
        if not gguf.is_file():
            raise LocalServerError(f"model file {gguf} not found (expected a GGUF file)")
    else:  # the installed model is served only when it is the pinned one
        problem = model_problem(gguf)
        if problem:
            raise LocalServerError(problem)
    return binary, gguf


class LocalServer:
    """One llama-server process. `start()` returns once it serves (or raises LocalServerError)."""

    def __init__(self, settings: LocalSettings | None = None, *, model: str = "", port: int = 0,
                 binary: Path | None = None) -> None:
        self.settings = settings or LocalSettings()
        if binary is None:
            self.binary, self.model = resolve_files(self.settings, model)
        else:
            self.binary, self.model = binary, Path(model or self.settings.model)
        self.requested_port = int(port)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self._log_handle: int | None = None
        self._release: threading.Event | None = None  # ends the thread that started the process
        self.no_repack = NO_REPACK in self.settings.extra_args  # set after a fault at start (FAULT_SIGNALS)

    # ------------------------------------------------------------------------------ addresses
    @property
    def root_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def __repr__(self) -> str:
        pid = self.process.pid if self.process is not None else None
        return f"LocalServer(model={self.model.name!r}, url={self.base_url!r}, pid={pid})"

    def describe(self) -> str:
        """How errors name it: 'the LLM server (llama-server, pid N, http://...)'."""
        pid = f"pid {self.process.pid}, " if self.process is not None else ""
        return f"the LLM server (llama-server, {pid}{self.base_url})"

    def command(self, port: int) -> list[str]:
        s = self.settings
        threads = s.threads or os.cpu_count() or 1
        command = [str(self.binary), "-m", str(self.model), "--host", HOST, "--port", str(port),
                   "-c", str(s.context), "-np", str(s.parallel), "-t", str(threads), "-tb", str(threads),
                   "-a", s.model_name, "--no-webui"]
        if s.swa_full:
            command.append("--swa-full")
        if self.no_repack and NO_REPACK not in s.extra_args:
            command.append(NO_REPACK)
        return command + list(s.extra_args)

    # ------------------------------------------------------------------------------- lifetime
    def start(self) -> str:
        """Start and wait for /health; the base URL (…/v1). Tries another free port if the one
        chosen was taken in between (unless a port was asked for)."""
        attempts = 1 if self.requested_port else PORT_ATTEMPTS
        attempt = 0
        while True:
            port = self.requested_port or free_port()
            self._spawn(port)
            try:
                self._wait_ready()
                return self.base_url
            except LocalServerError as exc:
                if self._faulted() and not self.no_repack:  # see FAULT_SIGNALS: once more, plain kernels
                    self.stop(keep_log=True)
                    self.no_repack = True
                    log.warning("%s; starting it again with %s", exc, NO_REPACK)
                    continue
                taken = self._log_mentions("bind") or self._log_mentions("address already in use")
                attempt += 1
                if not taken or attempt >= attempts:
                    self.stop(keep_log=True)
                    raise
                self.stop()

    def _faulted(self) -> bool:
        code = self.exit_code()
        return code is not None and code < 0 and -code in [int(s) for s in FAULT_SIGNALS]

    def _spawn(self, port: int) -> None:
        """Start the process from a thread of its own that lives until the process is stopped:
        Linux sends the parent-death signal when the starting *thread* ends, and the thread
        that asked (a worker of some pool) may end long before the server should."""
        handle, path = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self.log_path, self._log_handle, self.port = Path(path), handle, port
        started = threading.Event()
        failure: list[OSError] = []
        release = self._release = threading.Event()

        def parent() -> None:
            try:
                self.process = subprocess.Popen(self.command(port), stdin=subprocess.DEVNULL, stdout=handle,
                                                stderr=subprocess.STDOUT, start_new_session=True,
                                                preexec_fn=die_with_parent())  # noqa: PLW1509 - a prctl call
            except OSError as exc:
                failure.append(exc)
                return
            finally:
                started.set()
            release.wait()

        threading.Thread(target=parent, name=f"llama-server-{port}", daemon=True).start()
        started.wait()
        if failure:
            self._close_log()
            raise LocalServerError(f"cannot start {self.binary}: {failure[0].strerror or failure[0]}") from None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.settings.startup_timeout_s
        delay = 0.05
        while True:
            code = self.exit_code()
            if code is not None:
                raise LocalServerError(f"{self.describe()} exited while starting ({describe_exit(code)}): "
                                       f"{self.last_log_line()} (log: {self.log_path})")
            health = probe_health(self.root_url, timeout_s=2.0)
            if health.ok:
                return
            if time.monotonic() >= deadline:
                raise LocalServerError(f"{self.describe()} not ready after {self.settings.startup_timeout_s:g} s "
                                       f"(/health: {health.state}; local.startup_timeout_s); log: {self.log_path}")
            time.sleep(delay)
            delay = min(0.5, delay * 1.5)

    def exit_code(self) -> int | None:
        return self.process.poll() if self.process is not None else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def health(self, timeout_s: float | None = None) -> Health:
        return probe_health(self.root_url, self.settings.health_timeout_s if timeout_s is None else timeout_s)

    def stop(self, timeout_s: float = 10.0, *, keep_log: bool = False) -> int | None:
        """SIGTERM, then SIGKILL after timeout_s; the exit code. The log is deleted after a clean
        stop of a server that never died on its own, else kept (and named in the errors)."""
        process = self.process
        if process is None:
            self._close_log()
            return None
        died_before = process.poll() is not None
        if not died_before:
            for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
                try:
                    process.send_signal(sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        code = process.poll()
        if code is not None and self._release is not None:
            self._release.set()  # its parent thread may end now
        self._close_log()
        if not keep_log and not died_before and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None
        return code

    def _close_log(self) -> None:
        if self._log_handle is not None:
            os.close(self._log_handle)
            self._log_handle = None

    def __enter__(self) -> "LocalServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------------------------- logs
    def _log_text(self) -> str:
        if self.log_path is None:
            return ""
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(max(0, self.log_path.stat().st_size - 16384))
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _log_mentions(self, text: str) -> bool:
        return text.lower() in self._log_text().lower()

    def last_log_line(self) -> str:
        lines = [line.strip() for line in self._log_text().splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        return (errors or lines or ["(no output)"])[-1][:300]

    def props(self) -> dict[str, Any]:
        """The server's /props (its settings as it runs them); {} if it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.root_url}/props", timeout=5.0) as answer:
                data = json.loads(answer.read(1 << 20))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}
