#!/usr/bin/env bash
# `make lock`: resolve requirements.txt in a clean, temporary venv and write the exact versions
# installed (every package, dependencies included) to requirements.lock, which `make setup`
# installs (scripts/bootstrap.sh). The lock keeps the hash of requirements.txt's requirement lines
# (scripts/requirements_hash.sh): `make setup` refuses to run when they differ.
# Then the optional `sweep` extra (requirements-sweep.txt: Ray) in the same venv, with
# requirements.lock as constraints: requirements-sweep.lock holds the exact versions of what the
# extra adds (nothing of requirements.lock changes for it), with the hash of requirements-sweep.txt;
# `make sweep-setup` and `make test-setup` install it.
#
#   make lock             keep the versions already locked where requirements.txt allows them
#                         (a new dependency brings only what it needs); if they conflict with it,
#                         resolve everything afresh (said so)
#   make lock UPGRADE=1   resolve everything afresh: the newest versions requirements.txt allows
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REQ="$ROOT/requirements.txt"
LOCK="$ROOT/requirements.lock"
SWEEP_REQ="$ROOT/requirements-sweep.txt"
SWEEP_LOCK="$ROOT/requirements-sweep.lock"
PY="${PYTHON:-python3}"
log() { printf '[lock] %s\n' "$*"; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" -m venv "$TMP/venv"
PIP=("$TMP/venv/bin/pip" install -q --disable-pip-version-check)

if [ -f "$LOCK" ] && [ -z "${UPGRADE:-}" ]; then
  log "resolving requirements.txt in a clean venv, keeping the locked versions it allows"
  if ! "${PIP[@]}" -r "$REQ" -c "$LOCK" 2> "$TMP/err"; then
    grep -i -m3 "conflict\|cannot install\|no matching" "$TMP/err" | sed 's/^/[lock]   /' || true
    log "the locked versions do not fit requirements.txt: resolving everything afresh"
    rm -rf "$TMP/venv"; "$PY" -m venv "$TMP/venv"
    "${PIP[@]}" -r "$REQ" 2> >(grep -v "is ignored: it is neither" >&2)
  fi
else
  log "resolving requirements.txt afresh in a clean venv"
  "${PIP[@]}" -r "$REQ" 2> >(grep -v "is ignored: it is neither" >&2)
fi

# What pip installed (as `pip freeze --all`, less pip itself), but not the packages the ROS wheels
# carry inside them as egg-info (ros-rclpy holds rclpy-9.1.2.egg-info: `pip freeze` lists it as
# rclpy==9.1.2, which no index serves): only distributions pip itself recorded as installed.
installed() {
  "$TMP/venv/bin/python" -c '
import importlib.metadata as m
for d in m.distributions():
    name = d.metadata["Name"]
    if (d.read_text("INSTALLER") or "").strip() == "pip" and name.lower() != "pip":
        print(f"{name}=={d.version}")' | LC_ALL=C sort -f -u
}
resolved_with() {
  "$TMP/venv/bin/python" -c 'import platform, sys; print(f"Python {platform.python_version()}, {sys.platform} {platform.machine()}")'
}

installed > "$TMP/core.pins"
{
  echo "# The exact versions \`make setup\` installs (scripts/bootstrap.sh), resolved from requirements.txt"
  echo "# in a clean venv by \`make lock\` (scripts/lock.sh). Do not edit: change requirements.txt, then run"
  echo "# \`make lock\` and commit both files. \`make setup\` stops while the hash below differs from"
  echo "# requirements.txt's (scripts/requirements_hash.sh)."
  echo "# requirements-sha256: $(bash "$ROOT/scripts/requirements_hash.sh" "$REQ")"
  echo "# resolved with: $(resolved_with)"
  cat "$TMP/core.pins"
} > "$TMP/requirements.lock"
mv "$TMP/requirements.lock" "$LOCK"
log "wrote $(grep -c '==' "$LOCK") pinned packages to requirements.lock"

# The sweep extra, on top of the core lock (which it must not change).
if [ -f "$SWEEP_LOCK" ] && [ -z "${UPGRADE:-}" ]; then
  log "resolving requirements-sweep.txt on requirements.lock, keeping the locked versions it allows"
  if ! "${PIP[@]}" -r "$SWEEP_REQ" -c "$LOCK" -c "$SWEEP_LOCK" 2> "$TMP/err"; then
    grep -i -m3 "conflict\|cannot install\|no matching" "$TMP/err" | sed 's/^/[lock]   /' || true
    log "the locked sweep versions do not fit requirements-sweep.txt: resolving the extra afresh"
    "${PIP[@]}" -r "$SWEEP_REQ" -c "$LOCK" 2> >(grep -v "is ignored: it is neither" >&2)
  fi
else
  log "resolving requirements-sweep.txt afresh on requirements.lock"
  "${PIP[@]}" -r "$SWEEP_REQ" -c "$LOCK" 2> >(grep -v "is ignored: it is neither" >&2)
fi
{
  echo "# The exact versions of what the optional \`sweep\` extra (requirements-sweep.txt: Ray) adds to"
  echo "# requirements.lock, which \`make sweep-setup\` and \`make test-setup\` install (scripts/bootstrap.sh,"
  echo "# SWEEP=1). Resolved by \`make lock\` (scripts/lock.sh) in the venv of requirements.lock, with it"
  echo "# as constraints. Do not edit: change requirements-sweep.txt, then run \`make lock\` and commit both"
  echo "# files. \`make sweep-setup\` stops while the hash below differs from requirements-sweep.txt's."
  echo "# requirements-sha256: $(bash "$ROOT/scripts/requirements_hash.sh" "$SWEEP_REQ")"
  echo "# resolved with: $(resolved_with)"
  installed | grep -v -x -F -f "$TMP/core.pins" || true
} > "$TMP/requirements-sweep.lock"
mv "$TMP/requirements-sweep.lock" "$SWEEP_LOCK"
log "wrote $(grep -c '==' "$SWEEP_LOCK") pinned packages to requirements-sweep.lock"
