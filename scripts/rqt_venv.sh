#!/usr/bin/env bash
# The venv rqt runs in, created on first use (`make rqt`, `task-learning operator --rqt`, the rqt
# test) and stamped, so a second call returns at once.
#
# This python_qt_binding knows PyQt5 (not PySide6), and the standalone panel uses PySide6: so rqt
# gets a venv of its own with PyQt5 from PyPI and the rqt wheels of ../shared/ros2-tools/rqt, and
# Qt5 and Qt6 never share a process. The project venv's packages (rclpy, the interfaces,
# task_learning, the ros2 tools) are importable from it through a small start-up hook (below).
# Prints the path of the rqt venv's `rqt` on success. Exit code 3: the rqt wheels are not there.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
RQT_VENV="${RQT_VENV:-$ROOT/.venv-rqt}"
WHEELS="${TASK_LEARNING_SHARED:-$ROOT/../shared}/ros2-tools/rqt"
PYQT5="PyQt5==5.15.11"
log() { printf '[rqt] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "error: no project venv at $VENV (run make setup first)"; exit 2
fi
if ! ls "$WHEELS"/*.whl > /dev/null 2>&1; then
  log "error: no rqt wheels at $WHEELS: rqt cannot be installed here;"
  log "       \`task-learning operator --panel\` opens the standalone operator panel"
  exit 3
fi

BASE_SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
want=$( (ls -l "$WHEELS"/*.whl | awk '{print $5, $NF}'; echo "$PYQT5 $VENV"; cat "$0") | sha256sum | cut -c1-16)
STAMP="$RQT_VENV/.task_learning_rqt_stamp"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  start=$(date +%s)
  log "creating the rqt venv at $RQT_VENV ($PYQT5 from PyPI, rqt wheels from $WHEELS)"
  rm -rf "$RQT_VENV"
  "$VENV/bin/python" -m venv "$RQT_VENV"
  "$RQT_VENV/bin/pip" install -q --disable-pip-version-check "$PYQT5" \
    2> >(grep -v "is ignored: it is neither" >&2)
  "$RQT_VENV/bin/pip" install -q --disable-pip-version-check --no-index --no-deps "$WHEELS"/*.whl
  SITE=$("$RQT_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cat > "$SITE/task_learning_base_venv.py" <<EOF
"""Written by scripts/rqt_venv.sh: the project venv's packages, importable in the rqt venv.

The ROS 2 wheels' native libraries are found through LD_LIBRARY_PATH, which the dynamic loader
reads only when a process starts: so when it lacks them, set it and start this interpreter again
(as the wheels' own start-up hook does in the project venv). Then add the project venv's
site-packages after this venv's own (PyQt5 comes from here; PySide6 is never imported in rqt:
task_learning.oversight.qt_compat takes python_qt_binding there), and its prefix to
AMENT_PREFIX_PATH (the ament index of task_learning and its interfaces).
"""
import glob
import os
import site
import sys

BASE = "$VENV"
BASE_SITE = "$BASE_SITE"

_libs = [os.path.join(BASE, "lib")] + sorted(glob.glob(os.path.join(BASE_SITE, "ros_*.libs")))
_current = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
if not all(lib in _current for lib in _libs):
    _env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(_libs + _current),
                _ROS_WHEELS_BOOTSTRAP_COMPLETE="1")
    os.execve(sys.executable, sys.orig_argv, _env)
os.environ["_ROS_WHEELS_BOOTSTRAP_COMPLETE"] = "1"
site.addsitedir(BASE_SITE)
_prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
for _prefix in (sys.prefix, BASE):
    if _prefix not in _prefixes:
        _prefixes.append(_prefix)
os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join(_prefixes)
EOF
  echo "import task_learning_base_venv" > "$SITE/task_learning_base_venv.pth"
  "$RQT_VENV/bin/python" -c 'import python_qt_binding, rclpy, task_learning_interfaces, task_learning' \
    || { log "error: the rqt venv does not import what the plugin needs"; exit 1; }
  echo "$want" > "$STAMP"
  log "rqt venv ready in $(( $(date +%s) - start )) s"
fi
echo "$RQT_VENV/bin/rqt"
