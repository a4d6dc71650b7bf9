"""Before a Qt window opens on an X display: are the system libraries of Qt's xcb plugin there?

Qt's wheels (PySide6 for the panel, PyQt5 in rqt's venv) bring Qt but not the X libraries its xcb
platform plugin links against. Where one is missing, Qt aborts with "no Qt platform plugin could be
initialized" (exit 134) and often names a library that is installed; measured on a stock Debian
desktop: libxcb-icccm4 and libxcb-keysyms1 missing for the panel, libxcb-xinerama0 for rqt.
`make setup` installs them (scripts/bootstrap.sh, as root); elsewhere this check names each
missing library and its Debian/Ubuntu package in one line, before Qt is started.

It reads the plugin's needs with `ldd` (glibc's, on every Linux); with no ldd, no plugin or not on
Linux it says nothing and leaves the verdict to Qt.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Sequence

from task_learning.errors import TaskLearningError

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


def uses_xcb(env: dict[str, str] | None = None) -> bool:
    """Whether Qt will open its windows through the xcb plugin: QT_QPA_PLATFORM says xcb, or
    says nothing and an X display is set (the offscreen and wayland plugins need none of this)."""
    env = dict(os.environ) if env is None else env
    platform = env.get("QT_QPA_PLATFORM", "").split(":")[0].strip()
    if platform:
        return platform == "xcb"
    return bool(env.get("DISPLAY")) and not env.get("WAYLAND_DISPLAY")


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that ships a library, by Debian's naming rule:
    libxcb-icccm.so.4 -> libxcb-icccm4, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0."""
    stem, _, version = soname.partition(".so")
    name, version = stem.lower(), version.lstrip(".").split(".")[0]
    if not version:
        return name
    return f"{name}-{version}" if name[-1:].isdigit() else f"{name}{version}"


def missing_libraries(plugin: Path, lib_dirs: Sequence[Path] = ()) -> list[str]:
    """The shared libraries `plugin` needs that the dynamic loader cannot find (sonames)."""
    ldd = shutil.which("ldd")
    if ldd is None or not plugin.is_file():
        return []
    env = dict(os.environ)
    extra = [str(d) for d in lib_dirs if d.is_dir()]
    if extra:
        current = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(extra + current)
    try:
        out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, env=env, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(set(_NOT_FOUND.findall(out)))


def pyside6_xcb_plugin() -> tuple[Path, list[Path]]:
    """PySide6's xcb plugin and the folder of its Qt libraries."""
    spec = find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return Path("/nonexistent"), []
    qt = Path(list(spec.submodule_search_locations)[0]) / "Qt"
    return qt / "plugins" / "platforms" / "libqxcb.so", [qt / "lib"]


def pyqt5_xcb_plugin(venv: Path) -> tuple[Path, list[Path]]:
    """PyQt5's xcb plugin in a venv (rqt's) and the folder of its Qt libraries."""
    for qt in sorted(venv.glob("lib/python3*/site-packages/PyQt5/Qt5")):
        return qt / "plugins" / "platforms" / "libqxcb.so", [qt / "lib"]
    return Path("/nonexistent"), []


def missing_message(what: str, sonames: list[str]) -> str:
    packages = " ".join(debian_package(s) for s in sonames)
    return (f"{what} cannot open a window: Qt's xcb platform plugin needs system libraries that are "
            f"missing: {', '.join(sonames)} (Debian/Ubuntu: apt-get install {packages}; `make setup` "
            f"run as root installs them; or QT_QPA_PLATFORM=offscreen to run without a window)")


_OPENCV_QT_VARIABLES = ("QT_QPA_PLATFORM_PLUGIN_PATH", "QT_QPA_FONTDIR")


def without_opencv_qt(env: dict[str, str]) -> dict[str, str]:
    """`env` without the Qt variables that importing cv2 sets.

    opencv-python's wheel bundles a Qt of its own and, on import, points QT_QPA_PLATFORM_PLUGIN_PATH
    at that Qt's plugins (cv2/qt/plugins). Any Qt window opened later in that process, or in a
    child that inherits the variable (rqt started from a process that once imported cv2 for the
    Fetch bridge), loads an xcb plugin built against the other Qt: "QObject::moveToThread" and
    "no Qt platform plugin could be initialized". A value a user set elsewhere is kept."""
    return {k: v for k, v in env.items()
            if not (k in _OPENCV_QT_VARIABLES and f"{os.sep}cv2{os.sep}" in v)}


def drop_opencv_qt_from_environ() -> None:
    """Remove cv2's Qt variables from this process's environment before it creates a QApplication."""
    for key in _OPENCV_QT_VARIABLES:
        if f"{os.sep}cv2{os.sep}" in os.environ.get(key, ""):
            del os.environ[key]


def check_qt_platform(what: str = "the operator panel",
                      plugin: tuple[Path, list[Path]] | None = None) -> None:
    """Raise TaskLearningError naming every missing library, when Qt would open an X window
    through a plugin that cannot load; otherwise return without a word."""
    if not sys.platform.startswith("linux") or not uses_xcb():
        return
    path, lib_dirs = plugin if plugin is not None else pyside6_xcb_plugin()
    missing = missing_libraries(path, lib_dirs)
    if missing:
        raise TaskLearningError(missing_message(what, missing))
