#!/usr/bin/env bash
# colcon for this venv, installed on first use (the colcon test, or by hand) and stamped.
#
# colcon-common-extensions from PyPI goes into a folder of its own ($VENV/tools/colcon, pip
# --target), not into the venv: its pytest plugins and version pins stay out of the project's
# environment. It runs with the venv's Python (PYTHONPATH=that folder), so what it builds, the
# ament_python package's executables included, runs with the venv's ROS 2. (pip's check of the
# venv only finds that the ROS wheels name ament_index_python differently: that line is dropped.)
# Prints a command prefix that runs colcon, e.g.  eval "$(scripts/colcon_tools.sh) build ..."
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
TARGET="$VENV/tools/colcon"
SPEC="colcon-common-extensions"
log() { printf '[colcon] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "error: no project venv at $VENV (run make setup first)"; exit 2
fi
want=$(echo "$SPEC $("$VENV/bin/python" -V)" | sha256sum | cut -c1-16)
if [ "$(cat "$TARGET/.task_learning_stamp" 2>/dev/null)" != "$want" ]; then
  start=$(date +%s)
  log "installing $SPEC from PyPI into $TARGET"
  rm -rf "$TARGET"
  "$VENV/bin/pip" install -q --disable-pip-version-check --target "$TARGET" "$SPEC" \
    2> >(grep -v -e "is ignored: it is neither" -e "resolver does not currently take into account" \
                 -e "requires ament-index-python, which is not installed" >&2)
  echo "$want" > "$TARGET/.task_learning_stamp"
  log "colcon ready in $(( $(date +%s) - start )) s"
fi
echo "env PYTHONPATH=$TARGET $TARGET/bin/colcon"
