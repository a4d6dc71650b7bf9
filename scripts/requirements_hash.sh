#!/usr/bin/env bash
# The hash `make lock` stores in requirements.lock and `make setup` compares: sha256 of the
# requirement lines of requirements.txt (comments, blank lines, spacing and order do not count), so
# a changed requirement without a refreshed lock stops `make setup` with one line.
set -euo pipefail
REQ="${1:-$(cd "$(dirname "$0")/.." && pwd)/requirements.txt}"
sed -e 's/#.*//' -e 's/[[:space:]]//g' "$REQ" | grep -v '^$' | LC_ALL=C sort -u | sha256sum | cut -c1-64
