#!/usr/bin/env bash
# A soak of `lumen serve` on the default model (not in CI): 32 streaming clients for 30 minutes,
# 10% disconnecting mid-stream and 5% sending malformed bodies. Prints a JSON report; exits 1 on
# a 5xx or an unanswered well-formed request, a crash, or RSS growth over 10% after warm-up.
#   scripts/soak.sh [--minutes M] [--clients N] [--lumen PATH] ...   (flags of scripts/soak.py)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${LUMEN_HOME:-$HOME/.cache/lumen}/venv/bin/python"
LUMEN=build/release/src/cli/lumen
if [ ! -x "$LUMEN" ]; then
  scripts/setup.sh
  cmake --preset release -DLUMEN_PYTHON="$PY" >/dev/null
  cmake --build --preset release -j2
fi
exec "$PY" scripts/soak.py --lumen "$LUMEN" "$@"
