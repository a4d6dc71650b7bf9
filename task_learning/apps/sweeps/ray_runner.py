"""Running a sweep's trials as Ray tasks: an embedded local Ray by default, or an existing cluster.

The local Ray is sized for a small machine: one worker per core this process may use (or
`workers`), an 80 MB object store (trial results are a few hundred bytes), no dashboard, no usage
statistics, its logs in the run's folder (`<out>/ray/session_*/logs`), the workers' output kept
there instead of echoed. `RaySession` shuts Ray down on every way out of the block, Ctrl-C
included, and a watchdog process (sweeps/reaper.py) kills what is left of it when this process
dies without doing so (SIGKILL): Ray's own fate sharing let two of its agents outlive the driver.

At most one trial per worker slot is submitted at a time, so "running" in the progress is what
runs, and a stop cancels little. A trial's own failure (it returns status failed) and a worker
that died under it (Ray raises) are both reported and submitted again while `retries` allow;
Ray's own retries are off (max_retries=0) so that every death is seen and counted here.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from task_learning.apps.sweeps.grid import Trial
from task_learning.apps.sweeps.reaper import Reaper
from task_learning.apps.sweeps.results import ResultsStore
from task_learning.apps.sweeps.trial import one_line, run_trial
from task_learning.errors import TaskLearningError

LOOPBACK = "127.0.0.1"  # a local Ray listens on loopback only: nothing of it is reachable from the network
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Ray's minimum is 75 MiB
POLL_S = 0.25  # how often the driver looks at a stop request while trials run
WATCH_S = 2.0  # how often it hands new Ray processes (workers started on demand) to the watchdog
# Set for the Ray processes this command starts (and restored after): no usage statistics sent
# (and no prompt about them), no warning about the machine's core count inside a container.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
           "RAY_DISABLE_DOCKER_CPU_WARNING": "1"}
# The local Ray's authentication token: one per process, since Ray reads its configuration once
# per process and a second local Ray (the bench starts several) must take the same token.
PROCESS_TOKEN = secrets.token_hex(32)
INSTALL_HINT = "Ray is not installed: `pip install -e .[sweep]` or `make sweep-setup` (an optional extra)"


class SweepError(TaskLearningError):
    """Ray could not start or be reached."""


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """A cluster address "host:port" (or ray://host:port) must accept a connection: Ray itself
    retries an unreachable one for minutes, printing warnings, before it gives up."""
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and the like: Ray's own resolution
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise SweepError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


@dataclass
class Counts:
    total: int
    skipped: int = 0
    done: int = 0
    running: int = 0
    failed: int = 0  # failed for good (retries spent)
    retried: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, "skipped": self.skipped, "done": self.done, "running": self.running,
                "failed": self.failed, "retried": self.retried}


@dataclass(frozen=True)
class Event:
    """What the progress display hears: a trial started, ended (done), failed or was killed (and
    whether it will run again)."""

    what: str  # started | done | failed | killed
    trial: Trial
    counts: Counts
    error: str = ""
    seconds: float | None = None
    retry: bool = False


@dataclass
class Outcome:
    counts: Counts
    failures: list[tuple[Trial, str]] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0
    workers: int = 0
    address: str = "local"


class RaySession:
    """ray.init on entry, ray.shutdown on exit (whatever ends the block)."""

    def __init__(self, *, address: str | None, workers: int | None, log_dir: Path) -> None:
        self.address = address
        self.workers = workers or default_workers()
        self.log_dir = log_dir
        self._saved_env: dict[str, str | None] = {}
        self._link: Path | None = None
        self._reaper: Reaper | None = None
        self.ray: Any = None

    def __enter__(self) -> "RaySession":
        env = dict(RAY_ENV)
        if not self.address and "RAY_AUTH_MODE" not in os.environ:
            # The local Ray's token: its own, made for this run, held in the environment its
            # processes inherit (Ray would otherwise write one to ~/.ray and warn about it).
            env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=PROCESS_TOKEN)
        for key, value in env.items():
            self._saved_env[key] = os.environ.get(key)
            os.environ[key] = value
        try:  # after the variables: Ray reads its configuration when first imported
            import ray
        except ImportError:
            self._restore()
            raise SweepError(INSTALL_HINT) from None
        self.ray = ray
        try:
            if self.address:
                check_reachable(self.address)
                self._reaper = Reaper()
                ray.init(address=self.address, log_to_driver=False, configure_logging=False)
                self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
            else:
                temp_dir = self._short_temp_dir()
                self._reaper = Reaper(remove=Path(temp_dir).parent)
                ray.init(num_cpus=self.workers, num_gpus=0, object_store_memory=OBJECT_STORE_BYTES,
                         include_dashboard=False, log_to_driver=False, configure_logging=False,
                         _temp_dir=temp_dir, _node_ip_address=LOOPBACK)
        except (SweepError, KeyboardInterrupt):  # a Ctrl-C in ray.init, before the stop handlers
            self.__exit__()
            raise
        except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError...: one line, no traceback
            self.__exit__()
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
            raise SweepError(f"could not start {where}: {one_line(exc)}") from None
        self.watch()
        return self

    def watch(self) -> None:
        """Hand the processes Ray started so far (workers start on demand) to the watchdog."""
        if self._reaper is not None:
            self._reaper.watch()

    def _short_temp_dir(self) -> str:
        """Ray's session folder, where its logs go, is `<out>/ray`; Ray is given it through a
        short link in the temp folder because its sockets live there and a Unix socket's path
        may not exceed 107 bytes."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        holder = Path(tempfile.mkdtemp(prefix="tlray-"))
        self._link = holder / "r"
        self._link.symlink_to(self.log_dir.resolve(), target_is_directory=True)
        return str(self._link)

    def _restore(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()
        if self._link is not None:
            self._link.unlink(missing_ok=True)
            shutil.rmtree(self._link.parent, ignore_errors=True)
            self._link = None
            latest = self.log_dir / "session_latest"  # Ray's link points through the short one
            if latest.is_symlink():
                target = Path(os.readlink(latest)).name
                latest.unlink()
                latest.symlink_to(target, target_is_directory=True)

    def __exit__(self, *exc: object) -> None:
        self.watch()  # whatever runs now, also after a ray.init cut short, is the watchdog's too
        try:
            if self.ray is not None and self.ray.is_initialized():
                self.ray.shutdown()
        finally:
            if self._reaper is not None:
                self._reaper.close()  # kills what shutdown left running (and so does a dead driver's)
                self._reaper = None
            self._restore()


def run_sweep(trials: list[Trial], store: ResultsStore, *, kb_dir: Path, session: RaySession, retries: int,
              report: Callable[[Event], None] | None = None,
              should_stop: Callable[[], bool] = lambda: False) -> Outcome:
    """Run every trial not yet done in `store`, recording each as it ends. Returns when all have
    ended (done, or failed with retries spent) or `should_stop()` turns true (running trials are
    cancelled; they were not recorded, so a rerun runs them)."""
    ray = session.ray
    from ray.exceptions import RayTaskError

    started_at = time.monotonic()
    finished = store.done_keys()
    todo = [t for t in trials if t.key not in finished]
    counts = Counts(total=len(trials), skipped=len(trials) - len(todo))
    outcome = Outcome(counts, workers=session.workers, address=session.address or "local")
    remote = ray.remote(num_cpus=1, max_retries=0)(run_trial)
    queue = list(reversed(todo))
    pending: dict[Any, tuple[Trial, float]] = {}
    tries: dict[str, int] = {}

    def emit(what: str, trial: Trial, **extra: Any) -> None:
        if report is not None:
            report(Event(what, trial, counts, **extra))

    def submit() -> None:
        while queue and len(pending) < session.workers:
            trial = queue.pop()
            ref = remote.remote(trial.kind, trial.params, str(kb_dir), trial.key)
            pending[ref] = (trial, time.monotonic())
            counts.running = len(pending)
            emit("started", trial)
        session.watch()  # a worker started for these is in the watchdog's list too

    submit()
    watched_at = time.monotonic()
    while pending:
        if time.monotonic() - watched_at > WATCH_S:
            session.watch()
            watched_at = time.monotonic()
        if should_stop():
            outcome.interrupted = True
            for ref in pending:
                ray.cancel(ref, force=True)
            break
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
        for ref in ready:
            trial, began = pending.pop(ref)
            counts.running = len(pending)
            try:
                result: Mapping[str, Any] = ray.get(ref)
            except RayTaskError as exc:  # run_trial raised (it catches Exception: a BaseException)
                result = {"status": "failed", "error": one_line(exc.cause if exc.cause else exc)}
            except Exception as exc:  # noqa: BLE001 - the worker died (killed, out of memory), the node went away
                result = {"status": "killed", "error": f"{type(exc).__name__}: {one_line(exc)}"}
            seconds = result.get("seconds", time.monotonic() - began)
            if result["status"] == "done":
                store.record(trial, "done", measures=result["measures"], seconds=seconds,
                             worker=result.get("worker", ""))
                counts.done += 1
                emit("done", trial, seconds=seconds)
                continue
            tries[trial.key] = tries.get(trial.key, 0) + 1
            again = tries[trial.key] <= retries
            store.record(trial, result["status"], error=result["error"], seconds=seconds,
                         worker=result.get("worker", ""), final=not again)
            if again:
                counts.retried += 1
                queue.append(trial)
            else:
                counts.failed += 1
                outcome.failures.append((trial, result["error"]))
            emit(result["status"], trial, error=result["error"], seconds=seconds, retry=again)
        submit()
    counts.running = 0
    outcome.seconds = time.monotonic() - started_at
    return outcome
