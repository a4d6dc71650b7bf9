#!/usr/bin/env bash
# Idempotent set-up of the project venv: ROS 2 wheels from PyPI, the project (editable),
# and the task_learning_interfaces rosidl package built with plain cmake into the venv.
# Each step leaves a stamp holding a hash of its inputs, so a second run skips in seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
STAMPS="$VENV/.task_learning_stamps"
PY="${PYTHON:-python3}"
log() { printf '[bootstrap] %s\n' "$*"; }

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv at $VENV"
  "$PY" -m venv "$VENV"
fi
mkdir -p "$STAMPS"

# 1. Python dependencies (ROS 2 wheels and the rest) at the exact versions of requirements.lock,
#    keyed on the lock. The lock must have been made from the requirements.txt at hand (`make lock`
#    stores its hash): a changed requirement that nobody locked stops here, before anything installs.
REQ="$ROOT/requirements.txt"
LOCK="$ROOT/requirements.lock"
if [ ! -f "$LOCK" ]; then
  echo "[bootstrap] error: requirements.lock is missing: run \`make lock\` and commit it" >&2; exit 1
fi
if [ "$(bash "$ROOT/scripts/requirements_hash.sh" "$REQ")" != "$(sed -n 's/^# requirements-sha256: //p' "$LOCK")" ]; then
  echo "[bootstrap] error: requirements.txt changed since requirements.lock was made: run \`make lock\` and commit requirements.lock" >&2
  exit 1
fi
want=$(hash_of "$LOCK")
if [ "$(cat "$STAMPS/deps" 2>/dev/null)" != "$want" ]; then
  log "installing Python dependencies from requirements.lock (ROS 2 kilted wheels from PyPI)"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$LOCK" 2> >(grep -v "is ignored: it is neither" >&2)
  echo "$want" > "$STAMPS/deps"
else
  log "dependencies up to date"
fi

# 1b. The optional `sweep` extra (Ray, for `task-learning sweep`) with SWEEP=1: `make sweep-setup`,
#     and `make test`, whose sweep tests need it. `make demo` and `make setup` leave it out.
#     At the exact versions of requirements-sweep.lock (made with requirements.lock by `make lock`).
if [ "${SWEEP:-0}" = 1 ]; then
  SWEEP_LOCK="$ROOT/requirements-sweep.lock"
  if [ ! -f "$SWEEP_LOCK" ] || [ "$(bash "$ROOT/scripts/requirements_hash.sh" "$ROOT/requirements-sweep.txt")" \
       != "$(sed -n 's/^# requirements-sha256: //p' "$SWEEP_LOCK")" ]; then
    echo "[bootstrap] error: requirements-sweep.txt changed since requirements-sweep.lock was made (or it is missing): run \`make lock\` and commit requirements-sweep.lock" >&2
    exit 1
  fi
  want=$(hash_of "$SWEEP_LOCK" "$LOCK")
  if [ "$(cat "$STAMPS/sweep" 2>/dev/null)" != "$want" ]; then
    log "installing the sweep extra (Ray) from requirements-sweep.lock"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$SWEEP_LOCK" -c "$LOCK" \
      2> >(grep -v "is ignored: it is neither" >&2)
    echo "$want" > "$STAMPS/sweep"
  else
    log "sweep extra (Ray) up to date"
  fi
fi

# 2a. The robot's standard interface packages (interfaces/standard/: tf2_msgs, control_msgs,
#     nav2_msgs, moveit_msgs and the two MoveGroup needs), none of them on PyPI, built with cmake
#     into the venv in the field layouts of config/ros_interfaces.yaml's distribution. A package that
#     the machine already provides (a ROS install outside the venv: importable, or in the ament index
#     of AMENT_PREFIX_PATH) is not built: the machine's own always wins. Keyed on the definitions,
#     the distribution and which packages the machine provides.
STD="$ROOT/interfaces/standard"
STD_PACKAGES="tf2_msgs object_recognition_msgs octomap_msgs control_msgs nav2_msgs moveit_msgs"  # dependency order
ROS_DISTRO_FILE="$ROOT/config/ros_interfaces.yaml"
ROS_LAYOUT=$(sed -n 's/^distribution:[[:space:]]*\([A-Za-z0-9_]*\)[[:space:]]*\(#.*\)\{0,1\}$/\1/p' "$ROS_DISTRO_FILE" 2>/dev/null || true)
case "$ROS_LAYOUT" in
  humble|jazzy|kilted) ;;
  *) echo "[bootstrap] error: $ROS_DISTRO_FILE: distribution: must be one of humble, jazzy, kilted (got '${ROS_LAYOUT}')" >&2; exit 1 ;;
esac
provided_outside_venv() {  # $1: package name; true when a ROS install other than the venv has it
  local prefix
  for prefix in ${AMENT_PREFIX_PATH:+${AMENT_PREFIX_PATH//:/ }}; do
    [ "$prefix" = "$VENV" ] && continue
    [ -f "$prefix/share/ament_index/resource_index/packages/$1" ] && return 0
  done
  "$VENV/bin/python" -c "import importlib.util, os, sys
spec = importlib.util.find_spec('$1')
sys.exit(0 if spec and spec.origin and not os.path.realpath(spec.origin).startswith(os.path.realpath(sys.prefix)) else 1)" \
    2>/dev/null
}
to_build=""; provided=""
for pkg in $STD_PACKAGES; do
  if provided_outside_venv "$pkg"; then provided="$provided $pkg"; else to_build="$to_build $pkg"; fi
done
want=$( { echo "$ROS_LAYOUT|$provided"; find "$STD" -type f | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-16)
if [ "$(cat "$STAMPS/standard_interfaces" 2>/dev/null)" != "$want" ]; then
  [ -n "$provided" ] && log "standard interfaces the machine provides (not built):$provided"
  export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  started=$SECONDS
  for pkg in $to_build; do
    log "building $pkg ($ROS_LAYOUT layout) with cmake"
    BUILD="$ROOT/build/standard_interfaces/$pkg"
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    PATH="$VENV/bin:$PATH" cmake -S "$STD/$pkg" -B "$BUILD" \
      -DCMAKE_INSTALL_PREFIX="$VENV" -DPython3_EXECUTABLE="$VENV/bin/python" \
      -DCMAKE_PROJECT_INCLUDE="$ROOT/interfaces/cmake/wheel_include_fix.cmake" \
      -DTASK_LEARNING_ROS_DISTRO="$ROS_LAYOUT" -DBUILD_TESTING=OFF > "$BUILD.configure.log" 2>&1 \
      || { cat "$BUILD.configure.log"; exit 1; }
    PATH="$VENV/bin:$PATH" cmake --build "$BUILD" -j2 > "$BUILD.build.log" 2>&1 \
      || { tail -50 "$BUILD.build.log"; exit 1; }
    cmake --install "$BUILD" > /dev/null
  done
  log "standard interfaces built in $((SECONDS - started)) s"
  echo "$want" > "$STAMPS/standard_interfaces"
else
  log "standard interfaces up to date ($ROS_LAYOUT layout)"
fi

# 2. The interface package, built with cmake (no colcon needed) into the venv.
IFACE_INPUTS=$(ls "$ROOT"/msg/*.msg "$ROOT"/interfaces/srv/*.srv "$ROOT"/interfaces/action/*.action \
  "$ROOT"/interfaces/CMakeLists.txt "$ROOT"/interfaces/package.xml "$ROOT"/interfaces/cmake/*.cmake 2>/dev/null || true)
if [ -n "$IFACE_INPUTS" ]; then
  want=$(hash_of $IFACE_INPUTS)
  if [ "$(cat "$STAMPS/interfaces" 2>/dev/null)" != "$want" ]; then
    log "building task_learning_interfaces with cmake"
    BUILD="$ROOT/build/task_learning_interfaces"
    rm -rf "$BUILD"; mkdir -p "$ROOT/build"
    export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    PATH="$VENV/bin:$PATH" cmake -S "$ROOT/interfaces" -B "$BUILD" \
      -DCMAKE_INSTALL_PREFIX="$VENV" -DPython3_EXECUTABLE="$VENV/bin/python" \
      -DCMAKE_PROJECT_INCLUDE="$ROOT/interfaces/cmake/wheel_include_fix.cmake" \
      -DBUILD_TESTING=OFF > "$ROOT/build/interfaces-configure.log" 2>&1 \
      || { cat "$ROOT/build/interfaces-configure.log"; exit 1; }
    PATH="$VENV/bin:$PATH" cmake --build "$BUILD" -j2 > "$ROOT/build/interfaces-build.log" 2>&1 \
      || { tail -50 "$ROOT/build/interfaces-build.log"; exit 1; }
    cmake --install "$BUILD" > /dev/null
    echo "$want" > "$STAMPS/interfaces"
  else
    log "interfaces up to date"
  fi
fi

# 3. The project itself, editable, with its console scripts.
want=$(hash_of "$ROOT/setup.py" "$ROOT/setup.cfg" "$ROOT/nodes/plumbing/registry.py")  # the registry: the node executables
# The stamp alone is not enough: a `git clean -x` removes the editable install's metadata
# (task_learning.egg-info) and every node then dies with PackageNotFoundError.
if [ "$(cat "$STAMPS/project" 2>/dev/null)" != "$want" ] || [ ! -d "$ROOT/task_learning.egg-info" ]; then
  log "installing task_learning (editable)"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$ROOT" \
    2> >(grep -v "is ignored: it is neither" >&2)
  echo "$want" > "$STAMPS/project"
else
  log "project up to date"
fi
# A legacy editable install puts the repo root on sys.path, which serves `task_learning` but not
# the `nodes/` folder under its package name `task_learning_nodes` (setup.py's package_dir):
# link it into site-packages so `import task_learning_nodes` finds the live source.
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ln -sfn "$ROOT/nodes" "$SITE/task_learning_nodes"
# and the simulated robot's package, sim/, as task_learning_sim (robot-side: docs/sim.md)
ln -sfn "$ROOT/sim" "$SITE/task_learning_sim"
# and under the same name for mypy (mypy.ini's mypy_path), which checks it as task_learning_nodes.
mkdir -p "$ROOT/build/mypy" && ln -sfn "$ROOT/nodes" "$ROOT/build/mypy/task_learning_nodes"
ln -sfn "$ROOT/sim" "$ROOT/build/mypy/task_learning_sim"
# setup.cfg puts executables where `ros2 run` expects them (lib/task_learning); put them on PATH too.
for exe in "$VENV"/lib/task_learning/*; do
  [ -f "$exe" ] && ln -sf "$exe" "$VENV/bin/$(basename "$exe")"
done

# 4. The ROS 2 command-line tools (ros2 launch|run|topic|service|node|param|action, launch_ros):
#    wheels from ../shared/ros2-tools (none of them is on PyPI), installed without an index and
#    without dependency resolution (PyPI's `launch` is an unrelated package); their two runtime
#    dependencies from PyPI, osrf-pycommon and psutil, are in requirements.txt and so locked (pip's
#    check would only complain that the ROS wheels name ament_index_python differently).
TOOLS="${TASK_LEARNING_SHARED:-$ROOT/../shared}/ros2-tools"
if ls "$TOOLS"/*.whl > /dev/null 2>&1; then
  want=$(ls -l "$TOOLS"/*.whl | awk '{print $5, $NF}' | sha256sum | cut -c1-16)
  if [ "$(cat "$STAMPS/ros2tools" 2>/dev/null)" != "$want" ]; then
    log "installing the ROS 2 tools (ros2 launch, ros2cli, launch_ros) from $TOOLS"
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-index --no-deps "$TOOLS"/*.whl
    echo "$want" > "$STAMPS/ros2tools"
  else
    log "ROS 2 tools up to date"
  fi
else
  log "note: no ROS 2 tools at $TOOLS, so no \`ros2\` command and no \`ros2 launch\`;"
  log "      \`task-learning bringup\` starts the graph (put ../shared/ros2-tools beside the repository and rerun make setup)"
fi

# 5. The ament prefix of task_learning in the venv, as colcon would install it, so `ros2 launch
#    task_learning ...`, `ros2 run task_learning <node>` and rqt find the package: the index entry,
#    share/task_learning with package.xml, plugin.xml, config/ (a link to the source's) and a real
#    launch/ folder (ros2launch walks it with os.walk, which does not enter a linked folder) of
#    links to the source's launch files; the node executables are already in lib/task_learning.
#    Links keep it in step with the editable source; this step is cheap and always runs.
SHARE="$VENV/share/task_learning"
mkdir -p "$VENV/share/ament_index/resource_index/packages" "$SHARE/launch"
ln -sfn "$ROOT/resource/task_learning" "$VENV/share/ament_index/resource_index/packages/task_learning"
ln -sfn "$ROOT/package.xml" "$SHARE/package.xml"
ln -sfn "$ROOT/plugin.xml" "$SHARE/plugin.xml"
ln -sfn "$ROOT/config" "$SHARE/config"
find "$SHARE/launch" -maxdepth 1 -type l -delete
for file in "$ROOT"/launch/*.launch.py; do
  ln -sfn "$file" "$SHARE/launch/$(basename "$file")"
done
# Every Python of the venv finds that prefix: AMENT_PREFIX_PATH gets the venv appended when it
# does not name it (ament_index_python, hence ros2cli and launch, read only that variable).
SITE_PTH="$SITE/task_learning_ament_prefix.pth"
printf '%s\n' "import os, sys; _p = os.environ.get('AMENT_PREFIX_PATH', ''); sys.prefix in _p.split(os.pathsep) or os.environ.__setitem__('AMENT_PREFIX_PATH', os.pathsep.join(x for x in (_p, sys.prefix) if x))" > "$SITE_PTH"

# 6. Xvfb: an X display for AI2-THOR's Linux build (the ai2thor backend starts a private one when
#    DISPLAY is unset; the tests use it too). Debian/Ubuntu, as root or with passwordless sudo;
#    elsewhere only a note: nothing else needs it.
if [ "$(uname -s)" = Linux ] && ! command -v Xvfb >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  if command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || sudo -n true 2>/dev/null; }; then
    log "installing xvfb (an X display for AI2-THOR)"
    { $SUDO apt-get install -y -q xvfb >/dev/null 2>&1 \
      || { $SUDO apt-get update -q >/dev/null 2>&1 && $SUDO apt-get install -y -q xvfb >/dev/null 2>&1; }; } \
      || log "could not install xvfb: the ai2thor backend will need DISPLAY set"
  else
    log "note: no Xvfb here; the ai2thor backend needs DISPLAY set (or: apt-get install xvfb)"
  fi
fi
# 7. The system libraries the operator windows need on an X display: Qt's wheels (PySide6 for the
#    panel, PyQt5 in rqt's venv) bring Qt but not the X libraries of its xcb platform plugin. On a
#    stock Debian desktop libxcb-icccm4 and libxcb-keysyms1 were missing for the panel (Qt aborts,
#    exit 134) and libxcb-xinerama0 for rqt. Only missing packages are installed, as root or with
#    passwordless sudo; otherwise a note names them (the panel names what is missing when started).
QT_XCB_PACKAGES="libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0
  libxcb-shape0 libxcb-xfixes0 libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0 libxkbcommon0 libx11-xcb1
  libegl1 libgl1 libfontconfig1 libdbus-1-3"
if [ "$(uname -s)" = Linux ] && command -v dpkg-query >/dev/null 2>&1; then
  missing=""
  for pkg in $QT_XCB_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
    if command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || sudo -n true 2>/dev/null; }; then
      log "installing the Qt window libraries the operator panel and rqt need:$missing"
      { $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 \
        || { $SUDO apt-get update -q >/dev/null 2>&1 \
             && $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1; }; } \
        || log "could not install:$missing (the panel and rqt need them to open a window on a display)"
    else
      log "note: the operator panel and rqt need these to open a window on a display:$missing"
      log "      (apt-get install$missing; offscreen they are not needed)"
    fi
  fi
fi
# 8. With BROWSER=1 (`make test`'s set-up): Debian's Chromium, the real browser the web panel's
#    tests drive through Playwright (docs/web-panel.md). Playwright never downloads a browser of
#    its own here; the tests launch /usr/bin/chromium. As root or with passwordless sudo, only when
#    missing; otherwise a note (the browser tests then skip, saying why).
if [ "${BROWSER:-0}" = 1 ] && [ "$(uname -s)" = Linux ] && ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  if command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || sudo -n true 2>/dev/null; }; then
    log "installing chromium (the real browser of the web panel's tests)"
    { $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
      || { $SUDO apt-get update -q >/dev/null 2>&1 \
           && $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; }; } \
      || log "could not install chromium: the web panel's browser tests will skip"
  else
    log "note: no chromium here; the web panel's browser tests need it (apt-get install chromium)"
  fi
fi
log "ready: $VENV"
