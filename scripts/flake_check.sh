#!/usr/bin/env bash
# Run the whole test suite N times in a row under load and report how many runs passed.
#
#   scripts/flake_check.sh [N] [pytest args...]     (default N=10, pytest args default: what
#                                                    make test runs: -n 2 --dist loadfile test)
#
# A CPU hog (a busy loop) is pinned to the second core for the whole check, so every run sees the
# kind of loaded 2-core machine CI has. Each run's output is kept in build/flake-check/run-<i>.log;
# failing tests are listed per run. Exit status: 0 when every run passed, 1 otherwise.
# Run it through a network namespace of its own when other ROS graphs share the host, e.g.
#   scripts/isolated.sh scripts/flake_check.sh 10
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
N="${1:-10}"
shift || true
ARGS=("$@")
[ ${#ARGS[@]} -eq 0 ] && ARGS=(-n "${TEST_WORKERS:-2}" --dist loadfile test)
if ! [[ "$N" =~ ^[1-9][0-9]*$ ]]; then
  echo "flake_check: N must be a positive integer, got '$N'" >&2
  exit 2
fi
if [ ! -x "$PY" ]; then
  echo "flake_check: no venv at $VENV (run 'make setup' first)" >&2
  exit 2
fi
LOGS="$ROOT/build/flake-check"
mkdir -p "$LOGS"
cd "$ROOT"
# The venv as make test would have it (interfaces rebuilt when msg/srv/action files changed).
VENV="$VENV" bash scripts/bootstrap.sh > "$LOGS/bootstrap.log" 2>&1 || { cat "$LOGS/bootstrap.log"; exit 2; }
export ROS_HOME="$ROOT/.ros" ROS_LOG_DIR="$ROOT/.ros/log" QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"

# The hog: one busy process on the second core (the first one when the machine has only one).
CORES=$(nproc 2>/dev/null || echo 1)
HOG_CORE=$(( CORES > 1 ? 1 : 0 ))
if command -v taskset >/dev/null; then
  taskset -c "$HOG_CORE" "$PY" -c 'while True: pass' &
else
  "$PY" -c 'while True: pass' &
fi
HOG=$!
trap 'kill "$HOG" 2>/dev/null; wait "$HOG" 2>/dev/null' EXIT INT TERM
echo "flake_check: $N run(s) of pytest ${ARGS[*]}, CPU hog (pid $HOG) on core $HOG_CORE of $CORES"

# CPU seconds (user + system) of pytest and the processes it waited for: what the suite costs on
# its own, apart from what other load on the machine adds to the wall time.
TIMER=()
[ -x /usr/bin/time ] && TIMER=(/usr/bin/time -f "%U %S" -o "$LOGS/cpu")

passes=0
times=()
for i in $(seq 1 "$N"); do
  log="$LOGS/run-$i.log"
  rm -f "$LOGS/cpu"
  start=$(date +%s.%N)
  "${TIMER[@]}" "$PY" -m pytest -q -p no:cacheprovider "${ARGS[@]}" > "$log" 2>&1
  code=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  times+=("$secs")
  cpu=$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ {printf "%.0f s CPU, ", $1 + $2}' "$LOGS/cpu" 2>/dev/null)
  summary=$(grep -v "^[[:space:]]*$" "$log" | tail -n 1)
  if [ "$code" -eq 0 ]; then
    passes=$((passes + 1))
    printf 'run %d/%d: PASS in %.0f s wall, %s(%s)\n' "$i" "$N" "$secs" "$cpu" "$summary"
  else
    printf 'run %d/%d: FAIL (exit %d) in %.0f s wall, %s(%s), log %s\n' "$i" "$N" "$code" "$secs" "$cpu" "$summary" "$log"
    grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /'
  fi
done

sorted=$(printf '%s\n' "${times[@]}" | sort -n)
min=$(echo "$sorted" | head -n 1)
max=$(echo "$sorted" | tail -n 1)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
total=$(printf '%s\n' "${times[@]}" | awk '{s+=$1} END {print s}')
printf 'flake_check: %d of %d runs passed; wall time per run min %.0f s, median %.0f s, max %.0f s (total %.0f s)\n' \
  "$passes" "$N" "$min" "$median" "$max" "$total"
[ "$passes" -eq "$N" ]
